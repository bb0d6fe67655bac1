/**
 * The whole server's throughput, measured from outside: the built example server as `npm start` runs it (its V8
 * flags and defaults: workers on with 32 slots, access log and metrics on, its stdout read from a pipe by this
 * process as a log shipper would), N image tasks with instant simulated jobs (`[sim:delay=0]`) posted over HTTP
 * (`node:http` on kept-alive connections, support.ts `poster`), `connections` at a time, until every one has succeeded. Beside it, in the same run, graphile-worker's jobs/s on the
 * same PostgreSQL server (`graphile.ts`): the goal is ≥ 1.0× on PostgreSQL and ≥ 2× on SQLite.
 *
 *   npm run build && tsx bench/throughput.ts -- [--db sqlite,pg] [--tasks 5000] [--connections 32] [--rounds 1]
 *     [--profile]   (a CPU profile of each server, in bench/profiles; with --profile-heap an allocation profile)
 *     [--node-options "<V8 flags>"]   (the server's V8 flags instead of `npm start`'s)
 *     [--before <checkout>]   (also runs that checkout's built server, after this build's, each database: an A/B in
 *                    one run)
 *     [--split]     (a special mode, beside the default: the tasks posted to an API node (`MEDIAGATE_WORKERS=0`)
 *                    and run by a second node with the defaults, on the same database (SQLite: the same data
 *                    folder): what a second core running the workers would give)
 *
 * - **Tasks/s**: N / (the last task's `completed_at` − the first task's `created_at`), from the API's own
 *   timestamps: posting and finishing overlap, as they do on a busy server.
 * - **Accepted/s**: N / the time from the first POST sent to the last answered, at the client.
 * - **CPU**: the server's user + system time from `/proc/<pid>/stat` per task, by thread (`/proc/<pid>/task`: the
 *   main thread, the busiest other one, which is the worker thread on two threads, and the rest: V8's and libuv's
 *   helper threads), and on PostgreSQL the database server's (every `postgres` process of the machine), as
 *   graphile-worker's line shows its own.
 *
 * Each round runs graphile-worker first, then each database on a fresh server and database. Asserts nothing.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { graphileThroughput } from "./graphile.js"
import {
  account,
  allTasks,
  arg,
  countOf,
  cpuMs,
  envArg,
  flag,
  mainScript,
  pgDatabase,
  poster,
  postgresCpuMs,
  record,
  serverEnv,
  sleep,
  start,
  threadCpuMs,
  untilSucceeded
} from "./support.js"

const databases = arg("db", "sqlite,pg").split(",")
const taskCount = Number(arg("tasks", "5000"))
const connections = Number(arg("connections", "32"))
const rounds = Number(arg("rounds", "1"))
/** `--profile`: CPU profiles; with `--profile-heap`, allocation profiles (every allocation sampled) instead. */
const profile = flag("profile") ? (flag("profile-heap") ? "heap" : "cpu") : false
const split = flag("split")
/** The allocation profiles cover the load only: the bench starts and ends them with a signal each. */
const profileEnv: Record<string, string> = profile === "heap" ? { HEAP_PROFILE_START: "signal" } : {}
/** `--before <checkout>`: another build's server, run beside this one's (its `examples/server/dist/server.js`). */
const before = arg("before", "")
/** `--node-options "<V8 flags>"`: the server's flags instead of `npm start`'s (a special mode, to show beside them). */
const nodeOptions = arg("node-options", "")
/** `--env NAME=value,...`: settings added to the defaults (a special mode, to show beside them). */
const extraEnv = envArg()

/**
 * One run of the server on `db`: tasks/s (API timestamps), accepted/s and CPU per task (of both nodes under
 * `twoNodes`: the tasks posted to an API node, run by a worker node on the same database).
 */
const serverThroughput = async (db: string, twoNodes = false, script = mainScript) => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-throughput-"))
  const pg = db === "pg" ? pgDatabase("throughput") : undefined
  let logLines = 0
  try {
    const server = await start(
      script,
      serverEnv(dir, pg?.url, { ...extraEnv, ...profileEnv, ...(twoNodes ? { MEDIAGATE_WORKERS: "0" } : {}) }),
      { profile, log: () => logLines++, ...(nodeOptions === "" ? {} : { nodeOptions }) }
    )
    const workerNode = twoNodes
      ? await start(
        mainScript,
        serverEnv(pg === undefined ? dir : join(dir, "worker"), pg?.url, { ...extraEnv, ...profileEnv }),
        {
          profile,
          log: () => logLines++
        }
      )
      : undefined
    const cpuOfNodes = () => cpuMs(server.child.pid) + (workerNode === undefined ? 0 : cpuMs(workerNode.child.pid))
    try {
      const { token } = await account(server.base, 100_000_000)
      const send = poster(server.base, connections)
      const post = (prompt: string) =>
        send("/api/v1/vendor4/text-to-image", token, { model: "vendor4-3-0-t2i", input: { prompt } })
      // warm-up: one task to its end (the simulated upstream renders its first image once)
      const warm = record((JSON.parse((await post("warm-up [sim:delay=0]")).body) as { data?: unknown }).data)
      await untilSucceeded(server.base, token, String(warm["id"]), 30)
      /** Starts, then ends, the servers' allocation profiles (`HEAP_PROFILE_START=signal`): they cover the load. */
      const heapProfileMark = () => {
        if (profile !== "heap") return
        server.child.kill("SIGUSR2")
        workerNode?.child.kill("SIGUSR2")
      }
      heapProfileMark()
      const cpuStart = cpuOfNodes()
      const threadsStart = threadCpuMs(server.child.pid)
      const workerCpuStart = cpuMs(workerNode?.child.pid)
      const postgresStart = postgresCpuMs()
      const postStart = Date.now()
      let next = 0
      let refused = 0
      await Promise.all(Array.from({ length: connections }, async () => {
        while (next < taskCount) {
          const i = next++
          const response = await post(`throughput ${i} [sim:delay=0]`)
          if (response.status !== 201 && response.status !== 200) refused++
        }
      }))
      const postSeconds = (Date.now() - postStart) / 1000
      // every task ended (the warm-up's included), read by the list's totals
      for (let i = 0; i < 6000; i++) {
        const ended = await countOf(server.base, token, "succeeded") + await countOf(server.base, token, "failed")
        if (ended >= taskCount + 1 - refused) break
        await sleep(100)
      }
      // the allocation profiles end with the load (the reads below are the bench's, not the load's)
      heapProfileMark()
      const cpu = cpuOfNodes() - cpuStart
      const threads = byThread(server.child.pid, threadsStart, taskCount)
      const workerCpu = workerNode === undefined ? 0 : cpuMs(workerNode.child.pid) - workerCpuStart
      const postgres = postgresCpuMs() - postgresStart
      const tasks = (await allTasks(server.base, token)).filter((t) => t["id"] !== warm["id"])
      const times = (field: string) => tasks.map((t) => Date.parse(String(t[field] ?? ""))).filter(Number.isFinite)
      const first = Math.min(...times("created_at"))
      const last = Math.max(...times("completed_at"))
      const succeeded = tasks.filter((t) => t["status"] === "succeeded").length
      return {
        perSecond: succeeded / ((last - first) / 1000),
        acceptedPerSecond: (taskCount - refused) / postSeconds,
        cpuPerTaskMs: cpu / taskCount,
        workerPerTaskMs: workerCpu / taskCount,
        postgresPerTaskMs: pg === undefined ? undefined : postgres / taskCount,
        threads,
        succeeded,
        refused,
        logLines
      }
    } finally {
      await workerNode?.stop()
      await server.stop()
    }
  } finally {
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A server's CPU a task by thread since `start` (Linux): its main thread (HTTP); the busiest other thread, the worker
 * thread when the server runs on two threads; and the rest together (V8's helper threads: compilation, concurrent
 * marking, parallel scavenges; libuv's pool).
 */
const byThread = (pid: number | undefined, start: Map<number, number>, tasks: number) => {
  const used = [...threadCpuMs(pid)].map(([tid, ms]) => ({ tid, ms: ms - (start.get(tid) ?? 0) }))
  const main = used.find((t) => t.tid === pid)?.ms ?? 0
  const others = used.filter((t) => t.tid !== pid).map((t) => t.ms).sort((a, b) => b - a)
  const busiest = others[0] ?? 0
  const rest = others.slice(1).reduce((sum, ms) => sum + ms, 0)
  return `main thread ${(main / tasks).toFixed(2)}, busiest other ${(busiest / tasks).toFixed(2)}, the rest ${
    (rest / tasks).toFixed(2)
  } ms`
}

/** The database server's CPU a task, where there is one. */
const postgresPart = (ms: number | undefined) => ms === undefined ? "" : ` + ${ms.toFixed(2)} ms of PostgreSQL's`

console.log(
  `whole-server throughput (node ${process.version}, ${new Date().toISOString()}): ${taskCount} tasks of 0 s, ` +
    `${connections} connections, npm start's defaults, log read from a pipe`
)
for (let round = 1; round <= rounds; round++) {
  console.log(`\nround ${round}`)
  const graphile = await graphileThroughput(taskCount)
  console.log(`  graphile-worker (PostgreSQL): ${graphile.text}`)
  for (const [db, build] of databases.flatMap((db) => before === "" ? [[db, ""]] : [[db, ""], [db, before]])) {
    const own = await serverThroughput(db!, false, build === "" ? mainScript : join(build!, mainScript))
    const ratio = own.perSecond / graphile.perSecond
    const goal = db === "pg" ? 1 : 2
    console.log(
      `  Mediagate${build === "" ? "" : ` (${build})`} on ${db === "pg" ? "PostgreSQL" : "SQLite"}: ${
        own.perSecond.toFixed(0)
      } tasks/s ` +
        `(${own.succeeded} succeeded, ${own.refused} refused; accepted ${own.acceptedPerSecond.toFixed(0)}/s; ` +
        `${own.cpuPerTaskMs.toFixed(2)} ms CPU a task (${own.threads})${
          postgresPart(own.postgresPerTaskMs)
        }; ${own.logLines} log lines read); ` +
        `${ratio.toFixed(2)}× graphile-worker (goal ≥ ${goal}×: ${ratio >= goal ? "PASS" : "FAIL"})`
    )
  }
  for (const db of split ? databases : []) {
    const two = await serverThroughput(db, true)
    console.log(
      `  special mode, an API node and a worker node on ${db === "pg" ? "PostgreSQL" : "SQLite"}: ${
        two.perSecond.toFixed(0)
      } tasks/s ` +
        `(${two.succeeded} succeeded, ${two.refused} refused; accepted ${two.acceptedPerSecond.toFixed(0)}/s; ` +
        `${two.cpuPerTaskMs.toFixed(2)} ms CPU a task, both nodes (the worker node's ${
          two.workerPerTaskMs.toFixed(2)
        })${postgresPart(two.postgresPerTaskMs)}); ` +
        `${(two.perSecond / graphile.perSecond).toFixed(2)}× graphile-worker`
    )
  }
}
