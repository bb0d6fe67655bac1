/**
 * Tasks in flight through the HTTP server, measured from outside: the built example server as `npm start` runs it
 * (its V8 flags and defaults: workers on, access log on, its stdout read from a pipe by this process as a log
 * shipper would; the simulated upstream calling back when a job is done), N tasks posted through the API, each with a
 * simulated job of `job-seconds` (`[sim:delay=N]`). Prints how late each task finished (p50/p99/max) and the
 * server's CPU (from `/proc/<pid>/stat`) while the jobs run and while they finish.
 *
 *   npm run build && tsx bench/inflight-http.ts -- [--db sqlite,pg] [--tasks 10000] [--job-seconds 30]
 *     [--connections 32] [--profile]   (a CPU profile of the server, in bench/profiles)
 *
 * A task's lag is what its client sees: `completed_at − created_at − job-seconds` (`created_at` is when the client
 * got its id; the claim and the submit are part of the lag). Accept → submit (`started_at − created_at`) and the
 * lag after the job's end (`completed_at − started_at − job-seconds`) are printed beside it. "Waiting" is from the
 * last answered POST to the first expected end (no job can finish yet: the server only holds tasks); "finishing"
 * from then to the last completion. PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres), dropped
 * afterwards; SQLite in a temporary folder. Asserts nothing.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  account,
  allTasks,
  arg,
  call,
  countOf,
  cpuMs,
  flag,
  mainScript,
  percentile,
  pgDatabase,
  record,
  runQueueMs,
  serverEnv,
  sleep,
  start,
  untilSucceeded
} from "./support.js"

const databases = arg("db", "sqlite,pg").split(",")
const taskCount = Number(arg("tasks", "10000"))
const jobSeconds = Number(arg("job-seconds", "30"))
const connections = Number(arg("connections", "32"))
const profile = flag("profile")

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

for (const db of databases) {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-inflight-"))
  const pg = db === "pg" ? pgDatabase("inflight") : undefined
  try {
    const server = await start(mainScript, serverEnv(dir, pg?.url, { MEDIAGATE_SIM_TIME_SCALE: "1" }), { profile })
    try {
      const { token } = await account(server.base, 100_000_000)
      const pid = server.child.pid
      // warm-up: one short task first, so that the simulated upstream's renderer has the result clip cached (its
      // first rendering would otherwise hold up the first tasks to finish)
      const warm = record(
        (await call(server.base, "/api/v1/vendor3/text-to-video", {
          method: "POST",
          token,
          body: { model: "vendor3-3", input: { prompt: "warm-up [sim:delay=0]" } }
        })).data
      )
      await untilSucceeded(server.base, token, String(warm["id"]), 60)
      // post every task, `connections` at a time
      const postStart = Date.now()
      const cpuPostStart = cpuMs(pid)
      const queuedPostStart = runQueueMs(pid)
      let next = 0
      let failed = 0
      await Promise.all(Array.from({ length: connections }, async () => {
        while (next < taskCount) {
          const i = next++
          try {
            const response = await fetch(`${server.base}/api/v1/vendor3/text-to-video`, {
              method: "POST",
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
              body: JSON.stringify({
                model: "vendor3-3",
                input: { prompt: `in flight ${i} [sim:delay=${jobSeconds}]` }
              })
            })
            if (!response.ok) failed++
            await response.arrayBuffer()
          } catch {
            failed++ // not tried again: without an idempotency key a second POST could make a second task
          }
        }
      }))
      const posted = Date.now()
      const cpuPosted = cpuMs(pid)
      const queuedPosted = runQueueMs(pid)
      // waiting: until the first job is due to end (the first task was claimed at about postStart)
      const firstEnd = postStart + jobSeconds * 1000
      if (firstEnd > Date.now()) await sleep(firstEnd - Date.now())
      const cpuWaited = cpuMs(pid)
      const queuedWaited = runQueueMs(pid)
      const waited = Date.now()
      // finishing: until every task is terminal
      const deadline = Date.now() + jobSeconds * 1000 * 4 + 120_000
      while (Date.now() < deadline) {
        const [succeeded, failedTasks] = await Promise.all([
          countOf(server.base, token, "succeeded"),
          countOf(server.base, token, "failed")
        ])
        if (succeeded + failedTasks >= taskCount - failed + 1) break
        await sleep(1000)
      }
      const finished = Date.now()
      const cpuFinished = cpuMs(pid)
      const queuedFinished = runQueueMs(pid)
      const tasks = (await allTasks(server.base, token)).filter((task) => task["id"] !== warm["id"])
      const lags: Array<number> = []
      const afterJob: Array<number> = []
      let notSucceeded = 0
      for (const task of tasks) {
        if (task["status"] !== "succeeded") {
          notSucceeded++
          continue
        }
        const [createdAt, startedAt, completedAt] = [task["created_at"], task["started_at"], task["completed_at"]]
          .map((value) => Date.parse(String(value)))
        lags.push(completedAt! - (createdAt! + jobSeconds * 1000))
        afterJob.push(completedAt! - (startedAt! + jobSeconds * 1000))
      }
      const lastCompleted = Math.max(...tasks.map((t) => Date.parse(String(t["completed_at"] ?? "")) || 0))
      const waitingMs = waited - posted
      console.log(
        `${db}: ${tasks.length} tasks (${failed} POSTs refused, ${notSucceeded} not succeeded), jobs of ${jobSeconds} s`
      )
      const starved = (queued: number, ms: number) =>
        ms > 0 ? `, waited for a CPU ${(100 * queued / ms).toFixed(0)}% of the time` : ""
      console.log(
        `  posted in ${seconds(posted - postStart)} (${
          (taskCount / ((posted - postStart) / 1000)).toFixed(0)
        }/s), server CPU ${((cpuPosted - cpuPostStart) / (posted - postStart)).toFixed(2)} core${
          starved(queuedPosted - queuedPostStart, posted - postStart)
        }`
      )
      console.log(
        `  waiting ${seconds(waitingMs)}: server CPU ${
          waitingMs > 0 ? ((cpuWaited - cpuPosted) / waitingMs).toFixed(2) : "–"
        } core${starved(queuedWaited - queuedPosted, waitingMs)}`
      )
      console.log(
        `  finishing ${seconds(lastCompleted - waited)}: server CPU ${
          ((cpuFinished - cpuWaited) / Math.max(1, finished - waited)).toFixed(2)
        } core${starved(queuedFinished - queuedWaited, finished - waited)}`
      )
      console.log(
        `  lag from created_at p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms, max ${
          percentile(lags, 100)
        } ms (goal: p99 ≤ 1 s: ${percentile(lags, 99) <= 1000 ? "PASS" : "FAIL"})`
      )
      console.log(
        `  of which after the job's end p50 ${percentile(afterJob, 50)} ms, p99 ${percentile(afterJob, 99)} ms`
      )
      // the lag over time: in tenths of the tasks, by expected end
      const byEnd = tasks.filter((t) => t["status"] === "succeeded").map((t) => {
        const end = Date.parse(String(t["created_at"])) + jobSeconds * 1000
        return { end, lag: Date.parse(String(t["completed_at"])) - end }
      }).sort((a, b) => a.end - b.end)
      const tenth = Math.max(1, Math.ceil(byEnd.length / 10))
      const tenths = Array.from(
        { length: Math.ceil(byEnd.length / tenth) },
        (_, i) => byEnd.slice(i * tenth, (i + 1) * tenth).map((x) => x.lag)
      )
      console.log(`  p99 per tenth (by expected end): ${tenths.map((lag) => percentile(lag, 99)).join(", ")} ms`)
      const waits = tasks.map((t) => Date.parse(String(t["started_at"])) - Date.parse(String(t["created_at"])))
      console.log(`  accept → submit p50 ${percentile(waits, 50)} ms, p99 ${percentile(waits, 99)} ms`)
    } finally {
      await server.stop()
    }
  } finally {
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}
