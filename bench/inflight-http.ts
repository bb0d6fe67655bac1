/**
 * Tasks in flight through the HTTP server, measured from outside: the built example server (plain `node`, workers
 * on, the simulated upstream calling back when a job is done), N tasks posted through the API, each with a
 * simulated job of `job-seconds` (`[sim:delay=N]`). Prints how late each task finished after its job's expected end
 * (p50/p99/max) and the server's CPU (from `/proc/<pid>/stat`) while the jobs run and while they finish.
 *
 *   npm run build && tsx bench/inflight-http.ts -- [--db sqlite,pg] [--tasks 10000] [--job-seconds 30]
 *     [--connections 32] [--profile]   (a CPU profile of the server, in bench/profiles)
 *
 * A task's job starts when a worker submits it, right after claiming it: its expected end is `started_at` (the
 * first claim) + the job's length, and its lag is `completed_at` minus that (both read from the API). "Waiting" is
 * from the last answered POST to the first expected end (no job can finish yet: the server only holds tasks);
 * "finishing" from then to the last completion. PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user
 * postgres), dropped afterwards; SQLite in a temporary folder. Asserts nothing.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const args = process.argv.slice(2)
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}
const databases = arg("db", "sqlite,pg").split(",")
const taskCount = Number(arg("tasks", "10000"))
const jobSeconds = Number(arg("job-seconds", "30"))
const connections = Number(arg("connections", "32"))
const profile = args.includes("--profile")
const root = fileURLToPath(new URL("..", import.meta.url))
const adminToken = "bench-admin-token-0123456789abcdef"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

interface Running {
  readonly base: string
  readonly child: ChildProcess
  readonly stop: () => Promise<void>
}

const start = async (env: Record<string, string>): Promise<Running> => {
  const port = await freePort()
  const flags = profile ? ["--cpu-prof", "--cpu-prof-dir", join(root, "bench", "profiles")] : []
  const child = spawn(process.execPath, [...flags, "examples/server/dist/main.js"], {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", MEDIAGATE_ACCESS_LOG: "false", ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    if (i > 600) throw new Error("the server did not start")
    try {
      await fetch(`${base}/api/v1/tasks/none`)
      break
    } catch {
      await sleep(100)
    }
  }
  return {
    base,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

const call = async (base: string, path: string, init: { method?: string; token: string; body?: unknown }) => {
  // a kept-alive connection the server closed at the same moment fails the request: reads are tried again
  for (let attempt = 1; init.method === undefined && attempt < 3; attempt++) {
    try {
      return await callOnce(base, path, init)
    } catch {
      await sleep(200)
    }
  }
  return callOnce(base, path, init)
}

const callOnce = async (base: string, path: string, init: { method?: string; token: string; body?: unknown }) => {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${init.token}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  const json = await response.json() as { success: boolean; data: unknown; pagination?: Record<string, unknown> }
  if (!json.success) throw new Error(`${path}: ${JSON.stringify(json)}`)
  return json
}

const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : {}

/** An account with a large balance and a live key, made through the admin API. */
const setup = async (base: string) => {
  const account = record((await call(base, "/admin/v1/accounts", { method: "POST", token: adminToken, body: { name: "bench" } })).data)
  const id = String(account["id"])
  await call(base, `/admin/v1/accounts/${id}/credits`, { method: "POST", token: adminToken, body: { amount: 100_000_000 } })
  const key = record((await call(base, `/admin/v1/accounts/${id}/api-keys`, { method: "POST", token: adminToken, body: { name: "bench" } })).data)
  return String(key["key"])
}

/** The CPU time (user + system) a process has used so far, in milliseconds (Linux `/proc`; 0 elsewhere). */
const cpuMs = (pid: number | undefined) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // utime + stime in clock ticks (USER_HZ = 100)
  } catch {
    return 0
  }
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** How many of the account's tasks have `status` (the list's total). */
const countOf = async (base: string, token: string, status: string) =>
  Number((await call(base, `/api/v1/tasks?status=${status}&limit=1`, { token })).pagination?.["total"] ?? 0)

/** Every task of the account, page by page. */
const allTasks = async (base: string, token: string) => {
  const tasks: Array<Record<string, unknown>> = []
  let cursor: string | undefined
  do {
    const page = await call(base, `/api/v1/tasks?limit=100${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`, { token })
    for (const item of Array.isArray(page.data) ? page.data : []) tasks.push(record(item))
    const next = page.pagination?.["cursor"]
    cursor = typeof next === "string" ? next : undefined
  } while (cursor !== undefined)
  return tasks
}

const pgDatabase = () => {
  const name = `bench_inflight_${Date.now().toString(36)}`
  const psql = (sql: string) => spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", sql])
  if (psql(`CREATE DATABASE ${name}`).status !== 0) throw new Error("cannot create a PostgreSQL database at 127.0.0.1:5432")
  return { url: `postgres://postgres@127.0.0.1:5432/${name}`, drop: () => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

for (const db of databases) {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-inflight-"))
  const pg = db === "pg" ? pgDatabase() : undefined
  try {
    const server = await start({
      ...(pg !== undefined ? { DATABASE_URL: pg.url } : {}),
      MEDIAGATE_DATA_DIR: dir,
      MEDIAGATE_ADMIN_TOKEN: adminToken,
      MEDIAGATE_FILE_SECRET: "bench-file-secret",
      MEDIAGATE_SIM_TIME_SCALE: "1"
    })
    try {
      const token = await setup(server.base)
      const pid = server.child.pid
      // warm-up: one short task first, so that the simulated upstream's renderer has the result clip cached (its
      // first rendering would otherwise hold up the first tasks to finish)
      const warm = record((await call(server.base, "/api/v1/vendor3/text-to-video", {
        method: "POST",
        token,
        body: { model: "vendor3-3", input: { prompt: "warm-up [sim:delay=0]" } }
      })).data)
      for (let i = 0; i < 600; i++) {
        const task = record((await call(server.base, `/api/v1/tasks/${String(warm["id"])}`, { token })).data)
        if (task["status"] === "succeeded") break
        await sleep(100)
      }
      // post every task, `connections` at a time
      const postStart = Date.now()
      const cpuPostStart = cpuMs(pid)
      let next = 0
      let failed = 0
      await Promise.all(Array.from({ length: connections }, async () => {
        while (next < taskCount) {
          const i = next++
          try {
            const response = await fetch(`${server.base}/api/v1/vendor3/text-to-video`, {
              method: "POST",
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
              body: JSON.stringify({ model: "vendor3-3", input: { prompt: `in flight ${i} [sim:delay=${jobSeconds}]` } })
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
      // waiting: until the first job is due to end (the first task was claimed at about postStart)
      const firstEnd = postStart + jobSeconds * 1000
      if (firstEnd > Date.now()) await sleep(firstEnd - Date.now())
      const cpuWaited = cpuMs(pid)
      const waited = Date.now()
      // finishing: until every task is terminal
      const deadline = Date.now() + jobSeconds * 1000 * 4 + 120_000
      while (Date.now() < deadline) {
        const [succeeded, failedTasks] = await Promise.all([countOf(server.base, token, "succeeded"), countOf(server.base, token, "failed")])
        if (succeeded + failedTasks >= taskCount - failed + 1) break
        await sleep(1000)
      }
      const finished = Date.now()
      const cpuFinished = cpuMs(pid)
      const tasks = (await allTasks(server.base, token)).filter((task) => task["id"] !== warm["id"])
      const lags: Array<number> = []
      let notSucceeded = 0
      for (const task of tasks) {
        if (task["status"] !== "succeeded") {
          notSucceeded++
          continue
        }
        const startedAt = Date.parse(String(task["started_at"]))
        const completedAt = Date.parse(String(task["completed_at"]))
        lags.push(completedAt - (startedAt + jobSeconds * 1000))
      }
      const lastCompleted = Math.max(...tasks.map((t) => Date.parse(String(t["completed_at"] ?? "")) || 0))
      const waitingMs = waited - posted
      console.log(`${db}: ${tasks.length} tasks (${failed} POSTs refused, ${notSucceeded} not succeeded), jobs of ${jobSeconds} s`)
      console.log(`  posted in ${seconds(posted - postStart)} (${(taskCount / ((posted - postStart) / 1000)).toFixed(0)}/s), server CPU ${((cpuPosted - cpuPostStart) / (posted - postStart)).toFixed(2)} core`)
      console.log(`  waiting ${seconds(waitingMs)}: server CPU ${waitingMs > 0 ? ((cpuWaited - cpuPosted) / waitingMs).toFixed(2) : "–"} core`)
      console.log(`  finishing ${seconds(lastCompleted - waited)}: server CPU ${((cpuFinished - cpuWaited) / Math.max(1, finished - waited)).toFixed(2)} core`)
      console.log(`  finish lag p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms, max ${percentile(lags, 100)} ms`)
      // the lag over time: in tenths of the tasks, by expected end
      const byEnd = tasks.filter((t) => t["status"] === "succeeded").map((t) => {
        const end = Date.parse(String(t["started_at"])) + jobSeconds * 1000
        return { end, lag: Date.parse(String(t["completed_at"])) - end }
      }).sort((a, b) => a.end - b.end)
      const tenth = Math.max(1, Math.ceil(byEnd.length / 10))
      const tenths = Array.from({ length: Math.ceil(byEnd.length / tenth) }, (_, i) => byEnd.slice(i * tenth, (i + 1) * tenth).map((x) => x.lag))
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
