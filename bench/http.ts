/**
 * HTTP benchmark, measured from outside: the built example server as `npm start` runs it (its V8 flags and
 * defaults: workers on, access log on, its stdout read from a pipe by this process as a log shipper would), beside a
 * bare `node:http` server doing the same SQL on the same tables (bench/servers/raw.mjs) and the framework floor, a
 * bare Effect `HttpApi` server with the same middleware shape and Schemas but no SQL (bench/servers/floor.mjs),
 * driven one at a time by the same autocannon load. Prints req/s, p50/p99 and ratios.
 *
 * Special modes, shown beside the default when named in `--targets`: `log-off` (the same server with
 * `MEDIAGATE_ACCESS_LOG=false`: the access log's cost), `api-node` (`MEDIAGATE_WORKERS=0`: no worker in the process),
 * `two-threads` (`MEDIAGATE_WORKER_THREAD=true`: the workers on a worker thread), `admission-off`
 * (`MEDIAGATE_ADMISSION_MAX_WAIT_MS=0`: no request waits at the Admission gate, engine.md "Workers").
 * Every build of Mediagate measured runs on a database of its own, started for its turn and stopped after it: with
 * workers on, a server runs the tasks its `POST` runs made, which would otherwise fall on the turns after it. A first
 * server, not measured, makes the database that raw and the floor read.
 *
 *   npm run bench:http -- [--db sqlite,pg] [--seconds 10] [--connections 32] [--targets mediagate,raw,floor]
 *     [--paths get,post] [--profile server.js]   (CPU profiles of the servers whose script matches, in bench/profiles)
 *     [--profile-heap]   (with --profile: allocation profiles instead, every allocation sampled)
 *     [--rounds 1] [--warmup <seconds>] [--key live|test]   (test: the sandbox key, no charge in the accept)
 *     [--before <checkout>]   (adds the target "before": that checkout's built server)
 *     [--before-node-options "<V8 flags>"]   (the "before" server's flags instead of `npm start`'s: with
 *     `--before .` the same build under other flags)
 *     (target `platform`: this build with `MEDIAGATE_HTTP_DISPATCH=false`, every request through the platform's
 *     `HttpApiBuilder` router: the A/B of the envelope's own dispatch and the listener's path for it)
 *
 * With `--rounds N`, every server runs once per round in turn (started afresh, each path after a warm-up of
 * `--warmup` seconds, default `--seconds`; each round starts one target later than the one before, and on PostgreSQL
 * a `CHECKPOINT` precedes each turn) and the table shows the medians: on a shared machine the background load
 * then falls on all of them alike.
 *
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres), dropped afterwards; SQLite in a
 * temporary folder. Asserts nothing.
 */
import autocannon from "autocannon"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  account,
  arg,
  call,
  cpuMs,
  flag,
  mainScript,
  pgCheckpoint,
  pgDatabase,
  postgresCpuMs,
  record,
  type Running,
  serverEnv,
  start
} from "./support.js"

const databases = arg("db", "sqlite,pg").split(",")
const targets = arg("targets", "mediagate,raw,floor").split(",")
const seconds = Number(arg("seconds", "10"))
const paths = arg("paths", "get,post").split(",").filter((p): p is "get" | "post" => p === "get" || p === "post")
const connections = Number(arg("connections", "32"))
const rounds = Math.max(1, Number(arg("rounds", "1")))
const warmup = Number(arg("warmup", String(seconds)))
const keyEnvironment = arg("key", "live") === "test" ? "test" : "live"
const before = arg("before", "")
if (before !== "" && !targets.includes("before")) targets.splice(1, 0, "before")

const profile = arg("profile", "")
const profileKind = flag("profile-heap") ? "heap" : "cpu"
const beforeNodeOptions = arg("before-node-options", "")
/** Starts a server, profiled when its script matches `--profile`, with `nodeOptions` when given. */
const launch = (script: string, env: Record<string, string>, nodeOptions = "") =>
  start(script, env, {
    profile: profile !== "" && script.includes(profile) ? profileKind : false,
    ...(nodeOptions === "" ? {} : { nodeOptions })
  })

/** An account with a large balance, a live key and one task, made through the admin API. */
const setup = async (base: string) => {
  const { token } = await account(base, 100_000_000, keyEnvironment)
  const task = record(
    (await call(base, "/api/v1/vendor3/text-to-video", { method: "POST", token, body: postBody })).data
  )
  return { token, taskId: String(task["id"]) }
}

const postBody = { model: "vendor3-3", input: { prompt: "a paper boat on a pond" } }

/** A server under load, with the key and the task its requests use. */
interface Target {
  readonly server: Running
  readonly token: string
  readonly taskId: string
}

interface Figures {
  /** Server CPU per answered request (µs): steadier than req/s on a shared machine. */
  readonly cpuPerRequest: number
  /** On PostgreSQL, the database server's CPU per answered request (µs: every `postgres` process's). */
  readonly postgresPerRequest: number | undefined
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly non2xx: number
}

const load = async (
  server: Running,
  token: string,
  path: "get" | "post",
  taskId: string,
  duration = seconds,
  onPostgres = false
): Promise<Figures> => {
  const base = server.base
  const cpuBefore = cpuMs(server.child.pid)
  const postgresBefore = onPostgres ? postgresCpuMs() : 0
  const result = await autocannon({
    url: path === "get" ? `${base}/api/v1/tasks/${taskId}` : `${base}/api/v1/vendor3/text-to-video`,
    method: path === "get" ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(path === "post" ? { body: JSON.stringify(postBody) } : {}),
    connections,
    duration
  })
  return {
    cpuPerRequest: ((cpuMs(server.child.pid) - cpuBefore) * 1000) / Math.max(1, result.requests.total),
    postgresPerRequest: onPostgres
      ? ((postgresCpuMs() - postgresBefore) * 1000) / Math.max(1, result.requests.total)
      : undefined,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts
  }
}

const rows: Array<{ db: string; path: string; target: string; figures: Figures }> = []

for (const db of databases) {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-http-"))
  const pg = db === "pg" ? pgDatabase("http") : undefined
  const cleanups: Array<() => void> = []
  try {
    // a first server, not measured: it migrates the database and makes the account, key and task that raw and the
    // floor read
    const defaults = serverEnv(dir, pg?.url)
    const mediagate = await launch(mainScript, defaults)
    const { taskId, token } = await setup(mediagate.base)
    /** A build of Mediagate on a database of its own, with its own account, key and task. */
    const own = async (script: string, extra: Record<string, string>, nodeOptions = ""): Promise<Target> => {
      const ownDir = mkdtempSync(join(tmpdir(), "mediagate-bench-http-"))
      const ownPg = db === "pg" ? pgDatabase("http") : undefined
      cleanups.push(() => {
        ownPg?.drop()
        rmSync(ownDir, { recursive: true, force: true })
      })
      const server = await launch(script, { ...serverEnv(ownDir, ownPg?.url), ...extra }, nodeOptions)
      return { server, ...await setup(server.base) }
    }
    const shared = (server: Running): Target => ({ server, token, taskId })
    const servers: Record<string, () => Promise<Target>> = {
      mediagate: () => own(mainScript, {}),
      "log-off": () => own(mainScript, { MEDIAGATE_ACCESS_LOG: "false" }),
      "api-node": () => own(mainScript, { MEDIAGATE_WORKERS: "0" }),
      "two-threads": () => own(mainScript, { MEDIAGATE_WORKER_THREAD: "true" }),
      "admission-off": () => own(mainScript, { MEDIAGATE_ADMISSION_MAX_WAIT_MS: "0" }),
      before: () => own(join(before, mainScript), {}, beforeNodeOptions),
      // the same build with every request through the platform's HttpApiBuilder router (no dispatch of its own)
      platform: () => own(mainScript, { MEDIAGATE_HTTP_DISPATCH: "false" }),
      raw: async () =>
        shared(
          await launch(
            "bench/servers/raw.mjs",
            pg !== undefined ? { DATABASE_URL: pg.url } : { SQLITE_FILE: join(dir, "mediagate.db") }
          )
        ),
      floor: async () => shared(await launch("bench/servers/floor.mjs", { KEY: token, TASK_ID: taskId }))
    }
    const measure = async (target: string, { server, taskId, token }: Target, path: "get" | "post", round: number) => {
      await load(server, token, path, taskId, warmup) // warm-up run, not recorded
        .catch(() => undefined)
      const figures = await load(server, token, path, taskId, seconds, pg !== undefined)
      rows.push({ db, path, target, figures })
      console.log(
        `${db} ${path.toUpperCase()} ${target}${rounds > 1 ? ` (round ${round + 1})` : ""}: ${
          figures.rps.toFixed(0)
        } req/s, ${figures.cpuPerRequest.toFixed(0)} µs CPU/request${
          figures.postgresPerRequest === undefined
            ? ""
            : ` + ${figures.postgresPerRequest.toFixed(0)} µs of PostgreSQL's`
        }, p50 ${figures.p50} ms, p99 ${figures.p99} ms${figures.non2xx > 0 ? `, ${figures.non2xx} not 2xx` : ""}${
          server.logLines() > 0 ? `, ${server.logLines()} log lines read` : ""
        }`
      )
    }
    for (let round = 0; round < rounds; round++) {
      // each round starts one target later, so that over the rounds each takes each place in the order (a place
      // after another's writes, or while the machine's background load rises, falls on all of them alike)
      for (const target of targets.map((_, i) => targets[(i + round) % targets.length]!)) {
        if (pg !== undefined) pgCheckpoint()
        const up = await servers[target]!()
        try {
          for (const path of paths) await measure(target, up, path, round)
        } finally {
          await up.server.stop()
        }
      }
    }
    await mediagate.stop()
  } finally {
    for (const cleanup of cleanups) cleanup()
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
    postgresPerRequest: runs[0]!.postgresPerRequest === undefined
      ? undefined
      : median(runs.map((f) => f.postgresPerRequest ?? 0)),
    rps: median(runs.map((f) => f.rps)),
    p50: median(runs.map((f) => f.p50)),
    p99: median(runs.map((f) => f.p99)),
    non2xx: runs.reduce((sum, f) => sum + f.non2xx, 0)
  }
}
/** The database server's CPU a request, where there is one. */
const postgresPart = (f: Figures) =>
  f.postgresPerRequest === undefined ? "" : ` + ${f.postgresPerRequest.toFixed(0)} µs of PostgreSQL's`
const ratio = (a: Figures | undefined, b: Figures | undefined) => (a && b ? `${(a.rps / b.rps).toFixed(2)}×` : "–")

console.log(
  `\n${connections} connections, ${seconds} s per run (after a warm-up run of ${warmup} s)` +
    (rounds > 1 ? `; medians of ${rounds} interleaved rounds` : "") + "\n"
)
console.log(
  "| Path | DB | Mediagate | raw node:http + SQL | framework floor | Mediagate / raw | Mediagate / floor | p99 Mediagate / floor | CPU/request floor / Mediagate |"
)
console.log("|---|---|---|---|---|---|---|---|---|")
const comparisons: Array<string> = []
for (const db of databases) {
  for (const path of ["get", "post"]) {
    const m = find(db, path, "mediagate")
    const b = find(db, path, "before")
    const platform = find(db, path, "platform")
    if (platform !== undefined && m !== undefined) {
      comparisons.push(
        `${db} ${path.toUpperCase()}: dispatch ${m.rps.toFixed(0)} req/s, ${m.cpuPerRequest.toFixed(0)} µs` +
          ` CPU, p99 ${m.p99} ms; platform router ${platform.rps.toFixed(0)} req/s, ${
            platform.cpuPerRequest.toFixed(0)
          }` +
          ` µs CPU, p99 ${platform.p99} ms: dispatch / platform ${ratio(m, platform)} req/s,` +
          ` ${(platform.cpuPerRequest / m.cpuPerRequest).toFixed(2)}× less CPU per request`
      )
    }
    if (b !== undefined) {
      comparisons.push(
        `${db} ${path.toUpperCase()}: before ${b.rps.toFixed(0)} req/s, ${b.cpuPerRequest.toFixed(0)} µs CPU${
          postgresPart(b)
        }, p99 ${b.p99} ms → now ${
          m
            ? `${m.rps.toFixed(0)} req/s, ${m.cpuPerRequest.toFixed(0)} µs CPU${postgresPart(m)}, p99 ${m.p99} ms (${
              ratio(m, b)
            })`
            : "–"
        }`
      )
    }
    for (const mode of ["log-off", "api-node", "two-threads"]) {
      const special = find(db, path, mode)
      if (special !== undefined && m !== undefined) {
        comparisons.push(
          `${db} ${path.toUpperCase()}: ${mode} ${special.rps.toFixed(0)} req/s, ${
            special.cpuPerRequest.toFixed(0)
          } µs CPU, p99 ${special.p99} ms; the default / ${mode} ${ratio(m, special)}` +
            (mode === "log-off" ? ` (goal ≥ 0.90×: ${m.rps / special.rps >= 0.9 ? "PASS" : "FAIL"})` : "")
        )
      }
    }
    const r = find(db, path, "raw")
    const f = find(db, path, "floor")
    const cell = (
      x: Figures | undefined
    ) => (x ? `${x.rps.toFixed(0)} req/s, p99 ${x.p99} ms, ${x.cpuPerRequest.toFixed(0)} µs CPU` : "–")
    console.log(
      `| ${path === "get" ? "GET /api/v1/tasks/{id}" : "POST /api/v1/vendor3/text-to-video"} | ${db} | ${cell(m)} | ${
        cell(r)
      } | ${cell(f)} | ${ratio(m, r)} | ${ratio(m, f)} | ${m && f ? (m.p99 / Math.max(f.p99, 1)).toFixed(1) : "–"} | ${
        m && f ? (f.cpuPerRequest / m.cpuPerRequest).toFixed(2) : "–"
      } |`
    )
  }
}
if (comparisons.length > 0) {
  console.log(`\nComparisons (--before ${before || "–"}, target platform):\n${comparisons.join("\n")}`)
}
