/**
 * List benchmark: `GET /api/v1/tasks?limit=20` of one account holding N tasks, measured from outside through the
 * built example server as `npm start` runs it (workers on, access log read from a pipe), for no filter and for each
 * single filter of status, provider and model, at every size, on SQLite and PostgreSQL. Prints p50/p99 and the ratio
 * of the largest size to the smallest, and checks that every answer's `pagination.total` is the exact count of
 * matching tasks.
 *
 *   npm run build && tsx bench/list.ts -- [--db sqlite,pg] [--sizes 1000,100000] [--seconds 5] [--rounds 3]
 *     [--connections 10] [--filters none,status,provider,model,rare,common,everywhere]
 *
 * The figures in docs/performance.md ("Task list at 1,000,000 tasks") are from `--sizes 1000,1000000`. Every size
 * gets a database and
 * a server of its own: the server migrates it and makes the account through the admin API, then, while it is
 * stopped, the account's tasks are written directly with SQL (a recursive CTE on SQLite, generate_series on
 * PostgreSQL, in batches of 100,000) into the tasks table itself, so that its triggers keep the per-account counts
 * (when the storage has them). The sizes then take turns under the same load (autocannon, `--connections`
 * connections for `--seconds`), filter by filter, for `--rounds` rounds; a size's p50 and p99 are those of every
 * response of its rounds.
 * PostgreSQL runs in fresh databases at 127.0.0.1:5432 (user postgres), dropped afterwards, VACUUM ANALYZEd after
 * the fill (the tasks, their counts and their search tables, as autovacuum would); SQLite in temporary folders.
 *
 * Task i is of the catalog's (endpoint, model) pair number i % 31 (the benchmarked provider, vendor1, holds 9 of
 * them: 29% of the tasks; the benchmarked model 3%) and, from a hash of i, is 85% succeeded, 8% failed, 3%
 * cancelled, 2% expired, 1% running, 1% pending. Its prompt is "a paper boat on a pond, <word> <hue>": the word one
 * of 1,000 (from a hash of i: 0.1% of the tasks each), the hue one of 50 (2% each). The prompt searches (`search=`,
 * goal p99 ≤ 50 ms at 1,000,000 tasks): `rare` a word, `common` a hue, `everywhere` "boat" (every task).
 */
import { Catalog } from "@mediagate/contract"
import autocannon from "autocannon"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { account, adminToken, arg, call, mainScript, pgDatabase, type Running, start } from "./support.js"

const databases = arg("db", "sqlite,pg").split(",")
const sizes = arg("sizes", "1000,100000").split(",").map(Number).sort((a, b) => a - b)
const seconds = Number(arg("seconds", "5"))
const connections = Number(arg("connections", "10"))
const filterNames = arg("filters", "none,status,provider,model,rare,common,everywhere").split(",")
const rounds = Number(arg("rounds", "3"))
const prefix = "mediagate_"
const batch = 100_000
/**
 * Task i was created at `start0 + i` seconds: the last of 1,000,000 tasks 2.4 days ago, so the pruner (results kept
 * 30 days) has nothing of them to do while the load runs.
 */
const start0 = Date.now() - 14 * 86_400_000

// -----------------------------------------------------------------------------------------------------------------
// the server
// -----------------------------------------------------------------------------------------------------------------

/**
 * The built server with `npm start`'s defaults, workers on. The written tasks stay as written: the running and pending
 * ones have no next run (`next_run_at` NULL), so no worker claims them.
 */
const startServer = (env: Record<string, string>) =>
  start(mainScript, { MEDIAGATE_ADMIN_TOKEN: adminToken, MEDIAGATE_FILE_SECRET: "bench-file-secret", ...env })

// -----------------------------------------------------------------------------------------------------------------
// the tasks, written with SQL
// -----------------------------------------------------------------------------------------------------------------

/** Every (endpoint, family, operation, media type, model) of the catalog: task i is of kind i % kinds.length. */
const kinds = Catalog.endpointList.flatMap((endpoint) =>
  endpoint.models.map((model) =>
    [endpoint.key, endpoint.family, endpoint.operation, endpoint.mediaType, model] as const
  )
)
const kindsValues = kinds.map((k, i) => `(${i}, ${k.map((v) => `'${v}'`).join(", ")})`).join(", ")

/** The prompts' words: 1,000 of three syllables (none the start of another), 50 hues ("hue" and two letters). */
const syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "zo", "be", "da"]
const word = (n: number) => syllables[n % 10]! + syllables[Math.floor(n / 10) % 10]! + syllables[Math.floor(n / 100)]!
const hue = (n: number) => `hue${"abcdefghij"[n % 10]}${"abcde"[Math.floor(n / 10)]}`
const wordsValues = Array.from({ length: 1000 }, (_, n) => `(${n}, '${word(n)}')`).join(", ")
const huesValues = Array.from({ length: 50 }, (_, n) => `(${n}, '${hue(n)}')`).join(", ")
/** The word tables of the fill (`w`, `h`), after the catalog's kinds (`k`). */
const wordTables = `, w(n, word) AS (VALUES ${wordsValues}), h(n, hue) AS (VALUES ${huesValues})`
/** The joins that give task i its word and hue. */
const wordJoins = (i: string) => `JOIN w ON w.n = (${i} * 104729) % 1000 JOIN h ON h.n = (${i} * 15485863) % 50`

/**
 * The status of task i (from a hash of i, so that it does not follow the kind): 85% succeeded, 8% failed, 3%
 * cancelled, 2% expired, 1% running, 1% pending.
 */
const statusCase = (i: string) =>
  `CASE
  WHEN (${i} * 7919) % 100 < 85 THEN 'succeeded'
  WHEN (${i} * 7919) % 100 < 93 THEN 'failed'
  WHEN (${i} * 7919) % 100 < 96 THEN 'cancelled'
  WHEN (${i} * 7919) % 100 < 98 THEN 'expired'
  WHEN (${i} * 7919) % 100 < 99 THEN 'running'
  ELSE 'pending' END`

/** The SELECT list of task i (an integer expression) of `account`, in the column order of {@link columns}. */
const taskSelect = (i: string, pad: string, account: string, keyId: string) => `
  ${pad} AS id, '${account}', '${keyId}', 'live', k.endpoint, k.provider, k.operation, k.media_type, k.model,
  ${
  statusCase(i)
}, '{"prompt":"a paper boat on a pond, ' || w.word || ' ' || h.hue || '"}', '{}', NULL, NULL, 3200000, 0, 60, 100,
  NULL, NULL, 'job-' || ${i}, 1, NULL, NULL, NULL, ${start0} + ${i} * 1000 + 3600000, 1,
  ${start0} + ${i} * 1000, ${start0} + ${i} * 1000 + 10, ${start0} + ${i} * 1000 + 20000`

const columns = "id, account_id, key_id, environment, endpoint, provider, operation, media_type, model, status, " +
  "input, metadata, webhook_url, original_task_id, charged_micros, refunded_micros, estimated_seconds, progress, " +
  "result, error, upstream_job_id, fence, lease_owner, lease_expires_at, next_run_at, deadline_at, polls, " +
  "created_at, started_at, completed_at"

interface Store {
  /** Adds tasks [from, to) to the account. */
  readonly fill: (from: number, to: number) => void
  /** The exact number of the account's tasks matching a filter (an SQL condition), by COUNT(*). */
  readonly count: (filter: string | undefined) => number
  readonly close: () => void
}

const sqliteStore = (file: string, account: string, keyId: string): Store => {
  const require = createRequire(import.meta.url)
  const Database = require("better-sqlite3") as new(file: string) => {
    exec: (sql: string) => void
    prepare: (sql: string) => { get: (...params: Array<unknown>) => Record<string, unknown> }
    close: () => void
  }
  const db = new Database(file)
  db.exec("PRAGMA busy_timeout = 10000")
  return {
    fill: (from, to) => {
      for (let lo = from; lo < to; lo += batch) {
        const hi = Math.min(to, lo + batch)
        db.exec(`BEGIN; WITH RECURSIVE seq(i) AS (SELECT ${lo} UNION ALL SELECT i + 1 FROM seq WHERE i < ${hi - 1}),
          k(n, endpoint, provider, operation, media_type, model) AS (VALUES ${kindsValues})${wordTables}
          INSERT INTO ${prefix}tasks (${columns})
          SELECT ${taskSelect("seq.i", `'task_0' || printf('%025d', seq.i)`, account, keyId)}
          FROM seq JOIN k ON k.n = seq.i % ${kinds.length} ${wordJoins("seq.i")} WHERE true; COMMIT`)
      }
    },
    count: (filter) =>
      Number(
        db.prepare(`SELECT COUNT(*) AS n FROM ${prefix}tasks WHERE account_id = ?${filter ? ` AND ${filter}` : ""}`)
          .get(account)["n"]
      ),
    close: () => db.close()
  }
}

const psql = (url: string, sql: string) => {
  const out = spawnSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], { encoding: "utf8", maxBuffer: 1 << 24 })
  if (out.status !== 0) throw new Error(`psql: ${out.stderr}`)
  return out.stdout.trim()
}

const pgStore = (url: string, account: string, keyId: string): Store => ({
  fill: (from, to) => {
    for (let lo = from; lo < to; lo += batch) {
      const hi = Math.min(to, lo + batch)
      psql(
        url,
        `WITH k(n, endpoint, provider, operation, media_type, model) AS (VALUES ${kindsValues})${wordTables}
        INSERT INTO ${prefix}tasks (${columns})
        SELECT ${taskSelect("g.i", `'task_0' || lpad(g.i::text, 25, '0')`, account, keyId)}
        FROM generate_series(${lo}::bigint, ${hi - 1}::bigint) AS g(i) JOIN k ON k.n = g.i % ${kinds.length}
        ${wordJoins("g.i")}`
      )
    }
    psql(url, `VACUUM ANALYZE ${prefix}tasks`)
    for (const table of ["task_counts", "task_search", "task_search_counts"]) {
      if (psql(url, `SELECT to_regclass('${prefix}${table}') IS NOT NULL`) === "t") {
        psql(url, `VACUUM ANALYZE ${prefix}${table}`)
      }
    }
  },
  count: (filter) =>
    Number(
      psql(
        url,
        `SELECT COUNT(*) FROM ${prefix}tasks WHERE account_id = '${account}'${filter ? ` AND ${filter}` : ""}`
      )
    ),
  close: () => undefined
})

// -----------------------------------------------------------------------------------------------------------------
// the load
// -----------------------------------------------------------------------------------------------------------------

/** The filters: query string and the SQL condition it selects. */
const filters: Record<string, readonly [string, string | undefined]> = {
  none: ["", undefined],
  status: ["&status=succeeded", "status = 'succeeded'"],
  provider: [`&provider=${kinds[0]![1]}`, `provider = '${kinds[0]![1]}'`],
  model: [`&model=${kinds[0]![4]}`, `model = '${kinds[0]![4]}'`],
  rare: [`&search=${word(123)}`, `input LIKE '%${word(123)}%'`],
  common: [`&search=${hue(7)}`, `input LIKE '%${hue(7)}%'`],
  everywhere: ["&search=boat", "input LIKE '%boat%'"]
}

interface Figures {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly non2xx: number
}

/** A run: autocannon's figures, and every response time (ms) for the pooled percentiles of all rounds. */
interface Run {
  readonly figures: Figures
  readonly latencies: ReadonlyArray<number>
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const load = (url: string, token: string, duration: number): Promise<Run> =>
  new Promise((resolve, reject) => {
    const latencies: Array<number> = []
    const instance = autocannon(
      { url, headers: { authorization: `Bearer ${token}` }, connections, duration },
      (error, result) => {
        if (error !== null && error !== undefined) return reject(error)
        const sorted = [...latencies].sort((a, b) => a - b)
        resolve({
          figures: {
            rps: result.requests.average,
            p50: Math.round(percentile(sorted, 50)),
            p99: Math.round(percentile(sorted, 99)),
            non2xx: result.non2xx + result.errors + result.timeouts
          },
          latencies
        })
      }
    )
    instance.on("response", (_client, _status, _bytes, time) => latencies.push(time))
  })

const rows: Array<{ db: string; size: number; filter: string; run: Run }> = []

/** One database of one size, with its server. */
interface Instance {
  readonly size: number
  readonly server: Running
  readonly token: string
  readonly store: Store
  readonly cleanup: () => void
}

const instance = async (db: string, size: number): Promise<Instance> => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-list-"))
  const pg = db === "pg" ? pgDatabase("list") : undefined
  const env: Record<string, string> = pg !== undefined ? { DATABASE_URL: pg.url } : { MEDIAGATE_DATA_DIR: dir }
  const cleanup = () => {
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    // the server migrates the database and makes the account; the tasks are written while it is stopped
    const first = await startServer(env)
    const { accountId, keyId, token } = await account(first.base)
    await first.stop()
    const store = pg !== undefined
      ? pgStore(pg.url, accountId, keyId)
      : sqliteStore(join(dir, "mediagate.db"), accountId, keyId)
    const fillStart = performance.now()
    store.fill(0, size)
    console.log(`${db}: ${size} tasks written in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`)
    return { size, server: await startServer(env), token, store, cleanup }
  } catch (error) {
    cleanup()
    throw error
  }
}

for (const db of databases) {
  const instances: Array<Instance> = []
  try {
    for (const size of sizes) instances.push(await instance(db, size))
    // the sizes take turns, filter by filter and round by round, so that the machine's background load (a shared
    // machine) falls on all of them alike
    for (let round = 0; round < rounds; round++) {
      for (const name of filterNames) {
        const [query, filter] = filters[name]!
        const path = `/api/v1/tasks?limit=20${query}`
        for (const { server, size, store, token } of instances) {
          if (round === 0) {
            const total = (await call(server.base, path, { token })).pagination?.total
            const expected = store.count(filter)
            if (total !== expected) throw new Error(`${db} ${size} ${name}: total ${total}, COUNT(*) ${expected}`)
            await load(`${server.base}${path}`, token, Math.max(2, Math.ceil(seconds / 3))) // warm-up, not recorded
          }
          const run = await load(`${server.base}${path}`, token, seconds)
          const figures = run.figures
          rows.push({ db, size, filter: name, run })
          console.log(
            `${db} ${size} ${name} (round ${round + 1}): ${figures.rps.toFixed(0)} req/s, p50 ${figures.p50} ms, ` +
              `p99 ${figures.p99} ms${figures.non2xx > 0 ? `, ${figures.non2xx} not 2xx` : ""}`
          )
        }
      }
    }
  } finally {
    for (const { cleanup, server, store } of instances) {
      await server.stop()
      store.close()
      cleanup()
    }
  }
}

const smallest = sizes[0]!
const largest = sizes[sizes.length - 1]!
/** A size's figures over all its rounds: p50 and p99 of every response time of every round, the mean req/s. */
const find = (db: string, size: number, filter: string): Figures | undefined => {
  const runs = rows.filter((r) => r.db === db && r.size === size && r.filter === filter).map((r) => r.run)
  if (runs.length === 0) return undefined
  const sorted = runs.flatMap((r) => r.latencies).sort((a, b) => a - b)
  return {
    rps: runs.reduce((sum, r) => sum + r.figures.rps, 0) / runs.length,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    non2xx: runs.reduce((sum, r) => sum + r.figures.non2xx, 0)
  }
}
const cell = (f: Figures | undefined) => (f ? `${f.p50} / ${f.p99} ms` : "–")

console.log(
  `\nGET /api/v1/tasks?limit=20, ${connections} connections, ${seconds} s per run (after a warm-up run), ` +
    `percentiles of the responses of all ${rounds} rounds\n`
)
console.log(
  `| DB | Filter | ${smallest} tasks p50 / p99 | ${largest} tasks p50 / p99 | p99 ${largest} / ${smallest} | p50 ${largest} / ${smallest} |`
)
console.log("|---|---|---|---|---|---|")
for (const db of databases) {
  for (const filter of filterNames) {
    const a = find(db, smallest, filter)
    const b = find(db, largest, filter)
    const ratio = (x: number | undefined, y: number | undefined) =>
      x !== undefined && y !== undefined ? `${(x / Math.max(y, 1)).toFixed(2)}×` : "–"
    console.log(`| ${db} | ${filter} | ${cell(a)} | ${cell(b)} | ${ratio(b?.p99, a?.p99)} | ${ratio(b?.p50, a?.p50)} |`)
  }
}
