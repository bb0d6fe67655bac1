/**
 * graphile-worker's throughput on the local PostgreSQL server, the baseline of the throughput benchmarks
 * (`engine.ts`, `throughput.ts`): `jobs` jobs added one per transaction (16 at a time), a no-op task, concurrency 32,
 * from the first add to the last job completed, in a fresh database dropped afterwards.
 */
import { Pool } from "pg"
import { pgDatabase, postgresCpuMs } from "./support.js"

/**
 * graphile-worker's jobs per second, and a line that says so with the CPU of a job: this process's (graphile-worker
 * runs in it, adding the jobs too) and the PostgreSQL server's.
 */
export const graphileThroughput = async (jobs: number): Promise<{ perSecond: number; text: string }> => {
  const { Logger, makeWorkerUtils, run } = await import("graphile-worker")
  const database = pgDatabase("gw")
  const silent = { logger: new Logger(() => () => {}) }
  // our own pool, ended (awaited) before the database is dropped: graphile-worker ends the pools it makes without
  // waiting, and a forced DROP DATABASE would then kill their idle connections (an unhandled pool error)
  const pgPool = new Pool({ connectionString: database.url, max: 40 })
  // connections lost while graphile-worker stops (it installs these handlers only on the pools it makes)
  pgPool.on("error", () => {})
  pgPool.on("connect", (client) => client.on("error", () => {}))
  try {
    const utils = await makeWorkerUtils({ pgPool, ...silent })
    await utils.migrate()
    let done = 0
    let finished: () => void = () => {}
    const allDone = new Promise<void>((resolve) => (finished = resolve))
    const runner = await run({
      pgPool,
      concurrency: 32,
      noHandleSignals: true,
      pollInterval: 1000,
      ...silent,
      taskList: {
        noop: async () => {
          if (++done === jobs) finished()
        }
      }
    })
    const started = Date.now()
    const cpuStart = process.cpuUsage()
    const postgresStart = postgresCpuMs()
    for (let i = 0; i < jobs; i += 16) {
      await Promise.all(Array.from({ length: Math.min(16, jobs - i) }, (_, j) => utils.addJob("noop", { i: i + j })))
    }
    await allDone
    const seconds = (Date.now() - started) / 1000
    const cpu = process.cpuUsage(cpuStart)
    const nodeMs = (cpu.user + cpu.system) / 1000 / jobs
    const postgresMs = (postgresCpuMs() - postgresStart) / jobs
    await runner.stop()
    await utils.release()
    await pgPool.end()
    return {
      perSecond: jobs / seconds,
      text: `${(jobs / seconds).toFixed(0)} jobs/s (${jobs} jobs in ${seconds.toFixed(2)} s; CPU a job: node ${
        nodeMs.toFixed(2)
      } ms, PostgreSQL ${postgresMs.toFixed(2)} ms)`
    }
  } finally {
    if (!pgPool.ended) await pgPool.end()
    database.drop()
  }
}
