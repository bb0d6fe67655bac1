/**
 * HTTP benchmark, measured from outside: the built example server (plain `node`, workers off: an API node),
 * beside a bare `node:http` server doing the same SQL on the same tables (bench/servers/raw.mjs) and the
 * framework floor, a bare Effect `HttpApi` server with the same middleware shape and Schemas but no SQL
 * (bench/servers/floor.mjs), driven one at a time by the same autocannon load. Prints req/s, p50/p99 and ratios.
 *
 *   npm run bench:http -- [--db sqlite,pg] [--seconds 10] [--connections 32] [--targets mediagate,raw,floor]
 *     [--paths get,post] [--profile main.js]   (CPU profiles of the servers whose script matches, in bench/profiles)
 *     [--rounds 1] [--warmup <seconds>]
 *
 * With `--rounds N`, every server runs once per round in turn (each after a warm-up of `--warmup` seconds, default
 * `--seconds`) and the table shows the medians: on a shared machine the background load then falls on all of them
 * alike.
 *
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres), dropped afterwards; SQLite in a
 * temporary folder. Asserts nothing.
 */
import autocannon from "autocannon"
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
const targets = arg("targets", "mediagate,raw,floor").split(",")
const seconds = Number(arg("seconds", "10"))
const paths = arg("paths", "get,post").split(",").filter((p): p is "get" | "post" => p === "get" || p === "post")
const connections = Number(arg("connections", "32"))
const rounds = Math.max(1, Number(arg("rounds", "1")))
const warmup = Number(arg("warmup", String(seconds)))
const root = fileURLToPath(new URL("..", import.meta.url))
const adminToken = "bench-admin-token-0123456789abcdef"

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Running {
  readonly base: string
  readonly child: ChildProcess
  readonly stop: () => Promise<void>
}

const profile = arg("profile", "")

const start = async (script: string, env: Record<string, string>): Promise<Running> => {
  const port = await freePort()
  const flags = profile !== "" && script.includes(profile) ? ["--cpu-prof", "--cpu-prof-dir", join(root, "bench", "profiles")] : []
  const child = spawn(process.execPath, [...flags, script], {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", MEDIAGATE_ACCESS_LOG: "false", ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
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
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

const call = async (base: string, path: string, init: { method?: string; token: string; body?: unknown }) => {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${init.token}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  const json = await response.json() as { success: boolean; data: Record<string, unknown> }
  if (!json.success) throw new Error(`${path}: ${JSON.stringify(json)}`)
  return json.data
}

/** An account with a large balance, a live key and one task, made through the admin API. */
const setup = async (base: string) => {
  const account = await call(base, "/admin/v1/accounts", { method: "POST", token: adminToken, body: { name: "bench" } })
  const id = String(account["id"])
  await call(base, `/admin/v1/accounts/${id}/credits`, { method: "POST", token: adminToken, body: { amount: 100_000_000 } })
  const key = await call(base, `/admin/v1/accounts/${id}/api-keys`, { method: "POST", token: adminToken, body: { name: "bench" } })
  const token = String(key["key"])
  const task = await call(base, "/api/v1/vendor3/text-to-video", { method: "POST", token, body: postBody })
  return { token, taskId: String(task["id"]) }
}

const postBody = { model: "vendor3-3", input: { prompt: "a paper boat on a pond" } }

/** The CPU time (user + system) a process has used so far, in microseconds (Linux `/proc`; 0 elsewhere). */
const cpuMicros = (pid: number | undefined) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100 // utime + stime in clock ticks (USER_HZ = 100)
  } catch {
    return 0
  }
}

interface Figures {
  /** Server CPU per answered request (µs): steadier than req/s on a shared machine. */
  readonly cpuPerRequest: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly non2xx: number
}

const load = async (server: Running, token: string, path: "get" | "post", taskId: string, duration = seconds): Promise<Figures> => {
  const base = server.base
  const cpuBefore = cpuMicros(server.child.pid)
  const result = await autocannon({
    url: path === "get" ? `${base}/api/v1/tasks/${taskId}` : `${base}/api/v1/vendor3/text-to-video`,
    method: path === "get" ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(path === "post" ? { body: JSON.stringify(postBody) } : {}),
    connections,
    duration
  })
  return {
    cpuPerRequest: (cpuMicros(server.child.pid) - cpuBefore) / Math.max(1, result.requests.total),
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts
  }
}

const pgDatabase = () => {
  const name = `bench_http_${Date.now().toString(36)}`
  const psql = (sql: string) => spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc", sql])
  if (psql(`CREATE DATABASE ${name}`).status !== 0) throw new Error("cannot create a PostgreSQL database at 127.0.0.1:5432")
  return { url: `postgres://postgres@127.0.0.1:5432/${name}`, drop: () => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

const rows: Array<{ db: string; path: string; target: string; figures: Figures }> = []

for (const db of databases) {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-http-"))
  const pg = db === "pg" ? pgDatabase() : undefined
  const dbEnv: Record<string, string> = pg !== undefined ? { DATABASE_URL: pg.url } : {}
  try {
    // Mediagate first: it migrates the database and makes the account, key and task the others read too
    const mediagate = await start("examples/server/dist/main.js", {
      ...dbEnv,
      MEDIAGATE_DATA_DIR: dir,
      MEDIAGATE_ADMIN_TOKEN: adminToken,
      MEDIAGATE_WORKERS: "0",
      MEDIAGATE_FILE_SECRET: "bench-file-secret"
    })
    const { taskId, token } = await setup(mediagate.base)
    const servers: Record<string, () => Promise<Running>> = {
      mediagate: async () => mediagate,
      raw: () => start("bench/servers/raw.mjs", pg !== undefined ? dbEnv : { SQLITE_FILE: join(dir, "mediagate.db") }),
      floor: () => start("bench/servers/floor.mjs", { KEY: token, TASK_ID: taskId })
    }
    const measure = async (target: string, server: Running, path: "get" | "post", round: number) => {
      await load(server, token, path, taskId, warmup) // warm-up run, not recorded
        .catch(() => undefined)
      const figures = await load(server, token, path, taskId)
      rows.push({ db, path, target, figures })
      console.log(`${db} ${path.toUpperCase()} ${target}${rounds > 1 ? ` (round ${round + 1})` : ""}: ${figures.rps.toFixed(0)} req/s, ${figures.cpuPerRequest.toFixed(0)} µs CPU/request, p50 ${figures.p50} ms, p99 ${figures.p99} ms${figures.non2xx > 0 ? `, ${figures.non2xx} not 2xx` : ""}`)
    }
    if (rounds === 1) {
      for (const target of targets) {
        const server = await servers[target]!()
        for (const path of paths) await measure(target, server, path, 0)
        await server.stop()
      }
    } else {
      // every server up at once; each round runs them in turn
      const up: Array<readonly [string, Running]> = []
      try {
        for (const target of targets) up.push([target, await servers[target]!()])
        for (const path of paths) {
          for (let round = 0; round < rounds; round++) {
            for (const [target, server] of up) await measure(target, server, path, round)
          }
        }
      } finally {
        for (const [, server] of up) await server.stop()
      }
    }
    await mediagate.stop()
  } finally {
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
/** The figures of a server on a path (medians over the rounds). */
const find = (db: string, path: string, target: string): Figures | undefined => {
  const runs = rows.filter((r) => r.db === db && r.path === path && r.target === target).map((r) => r.figures)
  if (runs.length === 0) return undefined
  return {
    cpuPerRequest: median(runs.map((f) => f.cpuPerRequest)),
    rps: median(runs.map((f) => f.rps)),
    p50: median(runs.map((f) => f.p50)),
    p99: median(runs.map((f) => f.p99)),
    non2xx: runs.reduce((sum, f) => sum + f.non2xx, 0)
  }
}
const ratio = (a: Figures | undefined, b: Figures | undefined) => (a && b ? `${(a.rps / b.rps).toFixed(2)}×` : "–")

console.log(
  `\n${connections} connections, ${seconds} s per run (after a warm-up run of ${warmup} s)` +
    (rounds > 1 ? `; medians of ${rounds} interleaved rounds` : "") + "\n"
)
console.log("| Path | DB | Mediagate | raw node:http + SQL | framework floor | Mediagate / raw | Mediagate / floor | p99 Mediagate / floor | CPU/request floor / Mediagate |")
console.log("|---|---|---|---|---|---|---|---|---|")
for (const db of databases) {
  for (const path of ["get", "post"]) {
    const m = find(db, path, "mediagate")
    const r = find(db, path, "raw")
    const f = find(db, path, "floor")
    const cell = (x: Figures | undefined) => (x ? `${x.rps.toFixed(0)} req/s, p99 ${x.p99} ms, ${x.cpuPerRequest.toFixed(0)} µs CPU` : "–")
    console.log(`| ${path === "get" ? "GET /api/v1/tasks/{id}" : "POST /api/v1/vendor3/text-to-video"} | ${db} | ${cell(m)} | ${cell(r)} | ${cell(f)} | ${ratio(m, r)} | ${ratio(m, f)} | ${m && f ? (m.p99 / Math.max(f.p99, 1)).toFixed(1) : "–"} | ${m && f ? (f.cpuPerRequest / m.cpuPerRequest).toFixed(2) : "–"} |`)
  }
}
