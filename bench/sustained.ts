/**
 * Sustained load, measured from outside: `POST` of video tasks with jobs of `job-seconds` (`[sim:delay=N]`) to the
 * built example server as `npm start` runs it (workers on, access log read from a pipe), at full speed over
 * `connections` kept-alive autocannon connections for `seconds` after a warm-up of `warmup` seconds: long enough that
 * the jobs of the first tasks end while new ones come, so each request pays for a task's whole life (accept, submit,
 * finish), as on a server that runs for hours. Then it waits for every task to end and prints what the clients saw:
 * req/s and `POST` latency, the lag of the tasks (`completed_at − created_at − job length`) and the accept → submit
 * time (`started_at − created_at`), and the server's CPU per request by thread (and PostgreSQL's, on PostgreSQL).
 *
 *   npm run build && tsx bench/sustained.ts -- [--db sqlite,pg] [--seconds 15] [--warmup 5] [--job-seconds 10]
 *     [--connections 32] [--rounds 1]
 *     [--env NAME=value,...]   (settings added to `npm start`'s defaults: a special mode, shown beside them when
 *                    `--env-beside` is given, which runs the defaults and the settings in turn each round)
 *     [--before <checkout>]   (also runs that checkout's built server, after this build's, each database)
 *
 * Each run starts a fresh server on a fresh database. Asserts nothing.
 */
import autocannon from "autocannon"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  account,
  allTasks,
  arg,
  countOf,
  envArg,
  flag,
  mainScript,
  percentile,
  pgDatabase,
  postgresCpuMs,
  serverEnv,
  sleep,
  start,
  threadCpuMs
} from "./support.js"

const databases = arg("db", "sqlite,pg").split(",")
const seconds = Number(arg("seconds", "15"))
const warmup = Number(arg("warmup", "5"))
const jobSeconds = Number(arg("job-seconds", "10"))
const connections = Number(arg("connections", "32"))
const rounds = Number(arg("rounds", "1"))
const extraEnv = envArg()
const before = arg("before", "")
const settings = Object.keys(extraEnv).length === 0
  ? [{}]
  : flag("env-beside")
  ? [{}, extraEnv]
  : [extraEnv]

const run = async (db: string, extra: Record<string, string>, script = mainScript) => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-sustained-"))
  const pg = db === "pg" ? pgDatabase("sustained") : undefined
  const server = await start(script, serverEnv(dir, pg?.url, extra))
  try {
    const { token } = await account(server.base, 1_000_000_000)
    const load = (duration: number) =>
      autocannon({
        url: `${server.base}/api/v1/vendor3/text-to-video`,
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "vendor3-3", input: { prompt: `a paper boat [sim:delay=${jobSeconds}]` } }),
        connections,
        duration
      })
    await load(warmup)
    const cpuBefore = threadCpuMs(server.child.pid)
    const postgresBefore = pg === undefined ? 0 : postgresCpuMs()
    const result = await load(seconds)
    const cpuAfter = threadCpuMs(server.child.pid)
    const postgresMs = pg === undefined ? 0 : postgresCpuMs() - postgresBefore
    const requests = Math.max(1, result.requests.total)
    // the main thread, the busiest other one (the worker thread), the rest (V8's and libuv's helpers)
    const [main, ...others] = [...cpuAfter].map(([tid, ms]) => ({ tid, ms: ms - (cpuBefore.get(tid) ?? 0) }))
      .sort((a, b) => (a.tid === server.child.pid ? -1 : b.tid === server.child.pid ? 1 : b.ms - a.ms))
    const perRequest = (ms: number) => `${Math.round((ms * 1000) / requests)}`
    const rest = others.slice(1).reduce((sum, thread) => sum + thread.ms, 0)
    // every task to its end
    const deadline = Date.now() + 600_000
    while (Date.now() < deadline) {
      const open = (await countOf(server.base, token, "pending")) + (await countOf(server.base, token, "queued")) +
        (await countOf(server.base, token, "running"))
      if (open === 0) break
      await sleep(500)
    }
    const tasks = await allTasks(server.base, token)
    const at = (task: Record<string, unknown>, field: string) => Date.parse(String(task[field]))
    const succeeded = tasks.filter((task) => task["status"] === "succeeded")
    const lag = succeeded.map((task) => at(task, "completed_at") - at(task, "created_at") - jobSeconds * 1000)
    const submit = succeeded.map((task) => at(task, "started_at") - at(task, "created_at"))
    const setting = (script === mainScript ? "" : "before, ") +
      (Object.keys(extra).length === 0 ? "defaults" : JSON.stringify(extra))
    console.log(
      `  ${db}, ${setting}: ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ` +
        `${result.latency.p99} ms; CPU µs a request: main ${perRequest(main?.ms ?? 0)}, worker ` +
        `${perRequest(others[0]?.ms ?? 0)}, rest ${perRequest(rest)}` +
        (pg === undefined ? "" : `, PostgreSQL ${perRequest(postgresMs)}`) +
        `; ${succeeded.length}/${tasks.length} tasks succeeded, lag p50 ${percentile(lag, 50)} ms, p99 ` +
        `${percentile(lag, 99)} ms, max ${percentile(lag, 100)} ms; accept → submit p50 ${percentile(submit, 50)} ` +
        `ms, p99 ${percentile(submit, 99)} ms`
    )
  } finally {
    await server.stop()
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(
  `sustained POST (node ${process.version}, ${new Date().toISOString()}): ${connections} connections, ` +
    `${seconds} s after ${warmup} s of warm-up, jobs of ${jobSeconds} s, npm start's defaults, log read from a pipe`
)
for (let round = 1; round <= rounds; round++) {
  console.log(`\nround ${round}`)
  for (const db of databases) {
    for (const extra of settings) {
      await run(db, extra)
      if (before !== "") await run(db, extra, join(before, mainScript))
    }
  }
}
