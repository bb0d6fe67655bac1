/**
 * What the HTTP benchmarks share: command-line options, starting a server process (the built example server or a
 * baseline) and waiting for it, reading its log as a log shipper would, calling the API, making an account and a
 * live key through the admin API, counting and listing an account's tasks, a fresh PostgreSQL database, reading a
 * process's CPU time and run-queue wait from `/proc`, and percentiles.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { Agent, request } from "node:http"
import { createServer } from "node:net"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

const args = process.argv.slice(2)

/** The value of `--name value` on the command line, else `fallback`. */
export const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}

/** Whether `--name` is on the command line. */
export const flag = (name: string) => args.includes(`--${name}`)

/** `--env NAME=value,...`: settings added to a server's defaults (a special mode, to show beside them). */
export const envArg = (): Record<string, string> =>
  Object.fromEntries(
    arg("env", "").split(",").filter((pair) => pair.includes("=")).map((pair) => {
      const at = pair.indexOf("=")
      return [pair.slice(0, at), pair.slice(at + 1)]
    })
  )

/** The repository's root folder. */
export const root = fileURLToPath(new URL("..", import.meta.url))

/** The admin token the benchmarked servers run with. */
export const adminToken = "bench-admin-token-0123456789abcdef"

/** The built example server, bundled (what `npm start` runs). */
export const mainScript = "examples/server/dist/server.js"

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A port free on 127.0.0.1 now (for a server whose settings must name its own port). */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/**
 * The environment of the built server in a benchmark: its data folder, PostgreSQL when `databaseUrl` is given
 * (SQLite in the folder otherwise), the bench's admin token and file secret, and `extra`.
 */
export const serverEnv = (dir: string, databaseUrl: string | undefined, extra: Record<string, string> = {}) => ({
  ...(databaseUrl !== undefined ? { DATABASE_URL: databaseUrl } : {}),
  MEDIAGATE_DATA_DIR: dir,
  MEDIAGATE_ADMIN_TOKEN: adminToken,
  MEDIAGATE_FILE_SECRET: "bench-file-secret",
  ...extra
})

export interface Running {
  readonly base: string
  readonly child: ChildProcess
  /** The lines read from its stdout (none with the access log off). */
  readonly logLines: () => number
  readonly stop: () => Promise<void>
}

/** `npm start`'s command (the `start` script of examples/server/package.json): its variables, then node's flags. */
const startScript = () => {
  const scripts = JSON.parse(readFileSync(join(root, "examples", "server", "package.json"), "utf8")).scripts
  const match = /^((?:[A-Z_]+=\S+\s+)*)node\s+(.*?)\s*dist\/server\.js$/.exec(String(scripts?.start ?? ""))
  if (match === null) {
    throw new Error(
      "examples/server/package.json: the start script is not `[VAR=value ...] node [flags] dist/server.js`"
    )
  }
  return { env: match[1]!, flags: match[2]! }
}

/**
 * The V8 flags `npm start` runs the example server with (its `start` script in examples/server/package.json), so
 * that benchmarks measure the server as it is run.
 */
export const startFlags = (): string => startScript().flags

/** The environment variables `npm start`'s command sets (e.g. `MALLOC_ARENA_MAX`), given to the example server too. */
export const startEnv = (): Record<string, string> =>
  Object.fromEntries(
    startScript().env.split(/\s+/).filter((pair) => pair.includes("=")).map((pair) => {
      const at = pair.indexOf("=")
      return [pair.slice(0, at), pair.slice(at + 1)]
    })
  )

/**
 * Starts `node <script>` on a free port (or `port`) and waits until it answers HTTP. Its stdout is not read and its
 * access log is off, unless `log` is given: then the access log is as the server has it by default (on in the
 * example server, as `npm start` runs it) and every line the process writes to stdout is read as it comes, from a
 * pipe, and handed to `log` (another process shipping the log, as in production). With `profile`, the
 * process writes a CPU profile (`true`, `"cpu"`) or an allocation profile (`"heap"`: every allocation sampled,
 * bench/lib/heapSampling.mjs) to bench/profiles when it exits; `nodeArgs` go before the script (e.g. `--import
 * tsx` to run a source file). The example server (any checkout's `examples/server/dist/server.js`) gets the V8 flags
 * of `npm start` ({@link startFlags}) on its command line, as `npm start` gives them (`NODE_OPTIONS` refuses some of
 * them), or `nodeOptions` instead when given, and the variables `npm start`'s command sets ({@link startEnv}).
 */
export const start = async (
  script: string,
  env: Record<string, string>,
  options: {
    readonly profile?: boolean | "cpu" | "heap"
    readonly nodeArgs?: ReadonlyArray<string>
    /** The V8 flags of the example server instead of `npm start`'s (on its command line, before the script). */
    readonly nodeOptions?: string
    /** The port to listen on (default: a free one). */
    readonly port?: number
    /** Reads the process's stdout, line by line (its access log left at the server's default). */
    readonly log?: (line: string) => void
    /**
     * Without `log`: `true` (the default, as `npm start` runs) leaves the access log on and reads stdout from a pipe
     * as a log shipper would, counting the lines; `false` turns it off (`MEDIAGATE_ACCESS_LOG=false`), a special
     * mode to show beside the default.
     */
    readonly accessLog?: boolean
  } = {}
): Promise<Running> => {
  const port = options.port ?? await freePort()
  const profiles = join(root, "bench", "profiles")
  const flags = [
    ...(options.nodeArgs ?? []),
    ...(options.profile === true || options.profile === "cpu" ? ["--cpu-prof", "--cpu-prof-dir", profiles] : []),
    ...(options.profile === "heap" ? ["--import", join(root, "bench", "lib", "heapSampling.mjs")] : [])
  ]
  if (options.profile === "heap") mkdirSync(profiles, { recursive: true })
  const serverFlags = script.endsWith(mainScript)
    ? (options.nodeOptions ?? startFlags()).split(/\s+/).filter((f) => f !== "")
    : []
  const logOff = options.log === undefined && options.accessLog === false
  const child = spawn(process.execPath, [...flags, ...serverFlags, script], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      ...(script.endsWith(mainScript) ? startEnv() : {}),
      ...(logOff ? { MEDIAGATE_ACCESS_LOG: "false" } : {}),
      ...(options.profile === "heap" ? { HEAP_PROFILE_DIR: profiles } : {}),
      ...env
    },
    stdio: ["ignore", logOff ? "ignore" : "pipe", "inherit"]
  })
  let logLines = 0
  if (!logOff && child.stdout !== null) {
    const log = options.log
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) => {
      logLines++
      log?.(line)
    })
  }
  const base = `http://127.0.0.1:${port}`
  for (let i = 0;; i++) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`)
    if (i > 600) throw new Error(`${script} did not start`)
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
    logLines: () => logLines,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

/**
 * A load generator's POST of JSON: `node:http` on kept-alive connections (at most `connections` to the server), as
 * load tools do. It costs the bench process about a quarter of what `fetch` does (0.19 against 0.77 ms of CPU a
 * request, 2026-12-01), CPU the server would otherwise lose on a 2-core machine. Answers the status and the body.
 */
export const poster = (base: string, connections: number) => {
  const url = new URL(base)
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  return (path: string, token: string, body: unknown) =>
    new Promise<{ readonly status: number; readonly body: string }>((resolve, reject) => {
      const text = JSON.stringify(body)
      const sent = request({
        host: url.hostname,
        port: url.port,
        path,
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(text)
        }
      }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
        response.on("error", reject)
      })
      sent.on("error", reject)
      sent.end(text)
    })
}

/** A successful answer's envelope. */
export interface Answer {
  readonly data: unknown
  readonly pagination?: Record<string, unknown>
}

const callOnce = async (base: string, path: string, init: { method?: string; token: string; body?: unknown }) => {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${init.token}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  const json = await response.json() as Answer & { success: boolean }
  if (!json.success) throw new Error(`${path}: ${JSON.stringify(json)}`)
  return json
}

/**
 * Calls the API and answers the envelope; a failure answer throws. A GET is tried up to three times (a kept-alive
 * connection the server closed at the same moment fails the request).
 */
export const call = async (base: string, path: string, init: { method?: string; token: string; body?: unknown }) => {
  for (let attempt = 1; init.method === undefined && attempt < 3; attempt++) {
    try {
      return await callOnce(base, path, init)
    } catch {
      await sleep(200)
    }
  }
  return callOnce(base, path, init)
}

/** A JSON object's fields (anything else: none). */
export const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : {}

/**
 * An account (credited with `credit` USD when given) and a key (`live` unless `environment` says `test`: the free
 * sandbox, no charge), made through the admin API.
 */
export const account = async (base: string, credit?: number, environment: "live" | "test" = "live") => {
  const admin = (path: string, body: unknown) => call(base, path, { method: "POST", token: adminToken, body })
  const accountId = String(record((await admin("/admin/v1/accounts", { name: "bench" })).data)["id"])
  if (credit !== undefined) await admin(`/admin/v1/accounts/${accountId}/credits`, { amount: credit })
  const key = record((await admin(`/admin/v1/accounts/${accountId}/api-keys`, { name: "bench", environment })).data)
  return { accountId, keyId: String(key["id"]), token: String(key["key"]) }
}

/** A fresh database on the local PostgreSQL server (127.0.0.1:5432, user postgres), and how to drop it. */
export const pgDatabase = (kind: string) => {
  const name = `bench_${kind}_${Date.now().toString(36)}`
  const psql = (sql: string) => spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", sql])
  if (psql(`CREATE DATABASE ${name}`).status !== 0) {
    throw new Error("cannot create a PostgreSQL database at 127.0.0.1:5432")
  }
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    drop: () => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}

/**
 * Has the local PostgreSQL server write its dirty pages now (`CHECKPOINT`), so that what one measured turn wrote is
 * not flushed during the next one's.
 */
export const pgCheckpoint = () => {
  spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", "CHECKPOINT"])
}

/** Waits until the task `id` has succeeded, reading it every 100 ms, at most `seconds`. */
export const untilSucceeded = async (base: string, token: string, id: string, seconds = 60) => {
  for (let i = 0; i < seconds * 10; i++) {
    const task = record((await call(base, `/api/v1/tasks/${id}`, { token })).data)
    if (task["status"] === "succeeded") return
    await sleep(100)
  }
}

/** How many of the account's tasks have `status` (the list's total). */
export const countOf = async (base: string, token: string, status: string) =>
  Number((await call(base, `/api/v1/tasks?status=${status}&limit=1`, { token })).pagination?.["total"] ?? 0)

/** Every task of the account, page by page. */
export const allTasks = async (base: string, token: string) => {
  const tasks: Array<Record<string, unknown>> = []
  let cursor: string | undefined
  do {
    const after = cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`
    const page = await call(base, `/api/v1/tasks?limit=100${after}`, { token })
    for (const item of Array.isArray(page.data) ? page.data : []) tasks.push(record(item))
    const next = page.pagination?.["cursor"]
    cursor = typeof next === "string" ? next : undefined
  } while (cursor !== undefined)
  return tasks
}

/** The `p`th percentile (0–100) of `values` (NaN when empty). */
export const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/**
 * How long a process's main thread has waited for a CPU while runnable, in milliseconds (Linux
 * `/proc/<pid>/schedstat`; 0 elsewhere): on a shared machine, the share of a phase the process wanted a CPU and did
 * not get one.
 */
export const runQueueMs = (pid: number | undefined) => {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e6
  } catch {
    return 0
  }
}

/** The CPU time (user + system, ms) in a `/proc` `stat` file: a process's or a thread's; 0 if it cannot be read. */
const statCpuMs = (path: string) => {
  try {
    const fields = readFileSync(path, "utf8").split(") ")[1]!.split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // utime + stime in clock ticks (USER_HZ = 100)
  } catch {
    return 0
  }
}

/** The CPU time (user + system) a process has used so far, in milliseconds (Linux `/proc`; 0 elsewhere). */
export const cpuMs = (pid: number | undefined) => statCpuMs(`/proc/${pid}/stat`)

/**
 * The CPU time (ms, user + system) each thread of a process has used so far, by thread id (Linux
 * `/proc/<pid>/task`; empty elsewhere). The main thread's id is the process's.
 */
export const threadCpuMs = (pid: number | undefined): Map<number, number> => {
  const threads = new Map<number, number>()
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      threads.set(Number(tid), statCpuMs(`/proc/${pid}/task/${tid}/stat`))
    }
  } catch {
    // not Linux, or the process has gone
  }
  return threads
}

/**
 * The CPU time (ms, user + system) of every PostgreSQL server process on this machine (the local server's
 * backends, background workers and postmaster): read before and after a run, the database's share of its work.
 */
export const postgresCpuMs = () => {
  const found = spawnSync("pgrep", ["-u", "postgres", "postgres"], { encoding: "utf8" }).stdout ?? ""
  return found.split("\n").filter((pid) => pid !== "").reduce((sum, pid) => sum + cpuMs(Number(pid)), 0)
}
