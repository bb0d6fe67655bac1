/**
 * The raw baseline: a bare `node:http` server doing the SQL Mediagate does on the two benchmarked routes, on
 * Mediagate's own tables (the database must have been migrated by Mediagate first), with no framework:
 *
 * - `GET /api/v1/tasks/:id`: the key looked up by the SHA-256 of the bearer token, then the task by id (checked
 *   against the key's account), answered as the specification's task JSON.
 * - `POST /api/v1/vendor3/text-to-video`: the key lookup, a minimal body check, then the accept transaction as
 *   Mediagate makes it — on PostgreSQL the account debited first (which locks its row, as Mediagate's charge does
 *   before any other write), then the task insert with the worker wake-up notify; on SQLite the task insert, then
 *   the debit — then the key's and the month's spend checked and the ledger entry, key spend and month spend
 *   written (PostgreSQL: one statement; SQLite: the spends read by the debit, three writes) — answered 201 with the
 *   acknowledgement.
 *
 *   PORT=... DATABASE_URL=postgres://... | SQLITE_FILE=... [PREFIX=mediagate_] node bench/servers/raw.mjs
 */
import { createHash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)
const prefix = process.env.PREFIX ?? "mediagate_"
const t = (name) => `"${prefix}${name}"`
const price = 3_200_000 // vendor3-3, 5 s, no sound: $3.20
const models = new Set(["vendor3-3", "vendor3-3_fast"])

let counter = 0
const newId = (kind) =>
  `${kind}_${Date.now().toString(36).padStart(10, "0")}${(counter++).toString(36)}${randomBytes(4).toString("hex")}`
const month = (ms) => new Date(ms).toISOString().slice(0, 7)
const hash = (token) => createHash("sha256").update(token).digest("hex")

const iso = (ms) => (ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString())
const taskJson = (row) => ({
  id: row.id,
  type: row.media_type,
  operation: row.operation,
  status: row.status,
  provider: row.provider,
  model: row.model,
  progress: Number(row.progress),
  cost: Number(row.charged_micros) / 1e6,
  input: JSON.parse(row.input),
  metadata: JSON.parse(row.metadata),
  webhookUrl: row.webhook_url,
  original_task_id: row.original_task_id,
  estimated_seconds: Number(row.estimated_seconds),
  created_at: iso(row.created_at),
  started_at: iso(row.started_at),
  completed_at: iso(row.completed_at)
})

const taskRow = (key, body, now) => [
  newId("task"),
  key.account_id,
  key.id,
  "live",
  "vendor3/text-to-video",
  "vendor3",
  "text-to-video",
  "video",
  body.model,
  "pending",
  JSON.stringify({ prompt: body.input.prompt, aspect_ratio: "16:9" }),
  JSON.stringify(body.metadata ?? {}),
  null,
  null,
  price,
  0,
  90,
  0,
  null,
  null,
  null,
  0,
  null,
  null,
  now,
  now + 3_600_000,
  0,
  now,
  null,
  null
]
const taskColumns = "id, account_id, key_id, environment, endpoint, provider, operation, media_type, model, status, " +
  "input, metadata, webhook_url, original_task_id, charged_micros, refunded_micros, estimated_seconds, progress, " +
  "result, error, upstream_job_id, fence, lease_owner, lease_expires_at, next_run_at, deadline_at, polls, " +
  "created_at, started_at, completed_at"

const send = (res, status, body) => {
  const json = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
  res.end(json)
}
const failure = (res, status, code, message) => send(res, status, { success: false, error: { code, message } })

const bearer = (req) => {
  const h = req.headers.authorization
  return h !== undefined && h.startsWith("Bearer ") ? h.slice(7) : undefined
}

const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const validBody = (text) => {
  try {
    const body = JSON.parse(text)
    return typeof body === "object" && body !== null && models.has(body.model) && typeof body.input === "object" &&
        body.input !== null && typeof body.input.prompt === "string" && body.input.prompt.length > 0
      ? body
      : undefined
  } catch {
    return undefined
  }
}

/** The two dialects: each answers `key(hash)`, `task(id)` and `accept(key, body, now)` as promises. */
const sqlite = () => {
  const Database = require("better-sqlite3")
  const db = new Database(process.env.SQLITE_FILE)
  db.pragma("journal_mode = WAL")
  // as Mediagate's connections (@mediagate/persistence: statement journals and sorts in memory)
  db.pragma("temp_store = MEMORY")
  const keyBy = db.prepare(`SELECT * FROM ${t("api_keys")} WHERE key_hash = ?`)
  const taskBy = db.prepare(`SELECT * FROM ${t("tasks")} WHERE id = ?`)
  const debit = db.prepare(
    `UPDATE ${t("billing_accounts")} SET balance_micros = balance_micros - ?, updated_at = ? ` +
      `WHERE account_id = ? RETURNING *, ` +
      `(SELECT spend_limit_micros FROM ${t("billing_key_spend")} WHERE key_id = ?) AS key_limit, ` +
      `(SELECT spent_micros FROM ${t("billing_key_spend")} WHERE key_id = ?) AS key_spent, ` +
      `(SELECT spent_micros FROM ${t("billing_month_spend")} WHERE account_id = ? AND month = ?) AS month_spent`
  )
  const ledger = db.prepare(
    `INSERT INTO ${t("billing_ledger")} (account_id, kind, amount_micros, key_id, task_id, ` +
      `description, month, created_at) VALUES (?, 'charge', ?, ?, ?, ?, ?, ?)`
  )
  const spend = db.prepare(
    `INSERT INTO ${t("billing_key_spend")} (key_id, account_id, spend_limit_micros, spent_micros) ` +
      `VALUES (?, ?, NULL, ?) ON CONFLICT (key_id) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros`
  )
  const monthSpend = db.prepare(
    `INSERT INTO ${t("billing_month_spend")} (account_id, month, spent_micros) VALUES ` +
      `(?, ?, ?) ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros`
  )
  const insert = db.prepare(
    `INSERT INTO ${t("tasks")} (${taskColumns}) VALUES (${taskColumns.split(",").map(() => "?").join(", ")})`
  )
  const refused = new Error("refused")
  const accept = db.transaction((key, body, now) => {
    const row = taskRow(key, body, now)
    insert.run(...row)
    const acct = debit.get(price, now, key.account_id, key.id, key.id, key.account_id, month(now))
    if (acct === undefined || Number(acct.balance_micros) + price < price) throw refused
    if (acct.key_limit != null && Number(acct.key_spent) + price > Number(acct.key_limit)) throw refused
    ledger.run(key.account_id, -price, key.id, row[0], "vendor3-3 text-to-video", month(now), now)
    spend.run(key.id, key.account_id, price)
    monthSpend.run(key.account_id, month(now), price)
    return row
  })
  return {
    key: async (h) => keyBy.get(h),
    task: async (id) => taskBy.get(id),
    accept: async (key, body, now) => {
      try {
        return accept.immediate(key, body, now)
      } catch (e) {
        if (e === refused) return undefined
        throw e
      }
    }
  }
}

const postgres = () => {
  const { Pool } = require("pg")
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
  const one = async (text, values) => (await pool.query(text, values)).rows[0]
  return {
    key: (h) => one(`SELECT * FROM ${t("api_keys")} WHERE key_hash = $1`, [h]),
    task: (id) => one(`SELECT * FROM ${t("tasks")} WHERE id = $1`, [id]),
    accept: async (key, body, now) => {
      const c = await pool.connect()
      try {
        await c.query("BEGIN")
        // the account's row first, as Mediagate's charge does: every accept of the account waits on it before
        // taking any other lock (the task's insert first let two accepts deadlock on the account's row)
        const acct = (await c.query(
          `UPDATE ${t("billing_accounts")} SET balance_micros = balance_micros - $1, updated_at = $2 ` +
            `WHERE account_id = $3 RETURNING *`,
          [price, now, key.account_id]
        )).rows[0]
        if (acct === undefined || Number(acct.balance_micros) + price < price) {
          await c.query("ROLLBACK")
          return undefined
        }
        const row = taskRow(key, body, now)
        await c.query(
          `INSERT INTO ${t("tasks")} (${taskColumns}) VALUES (${
            taskColumns.split(",").map((_, i) => `$${i + 1}`).join(", ")
          }) ` +
            `RETURNING (SELECT pg_notify($${row.length + 1}, '')) AS woke`,
          [...row, `${prefix}tasks`]
        )
        const ok = (await c.query(
          `WITH k AS (
            SELECT spend_limit_micros, spent_micros FROM ${t("billing_key_spend")} WHERE key_id = $1 FOR UPDATE
          ), ok AS (
            SELECT NOT EXISTS (SELECT 1 FROM k WHERE spend_limit_micros IS NOT NULL AND spent_micros + $3 > spend_limit_micros) AS ok
          ), ledger AS (
            INSERT INTO ${
            t("billing_ledger")
          } (account_id, kind, amount_micros, key_id, task_id, description, month, created_at)
            SELECT $2, 'charge', CAST($4 AS BIGINT), $1, $5, $6, $7, CAST($8 AS BIGINT) FROM ok WHERE ok.ok
          ), key_spend AS (
            INSERT INTO ${t("billing_key_spend")} (key_id, account_id, spend_limit_micros, spent_micros)
            SELECT $1, $2, NULL, CAST($3 AS BIGINT) FROM ok WHERE ok.ok
            ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${
            t("billing_key_spend")
          }.spent_micros + excluded.spent_micros
          ), month_spend AS (
            INSERT INTO ${
            t("billing_month_spend")
          } (account_id, month, spent_micros) SELECT $2, $7, CAST($3 AS BIGINT) FROM ok WHERE ok.ok
            ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${
            t("billing_month_spend")
          }.spent_micros + excluded.spent_micros
          )
          SELECT ok FROM ok`,
          [key.id, key.account_id, price, -price, row[0], "vendor3-3 text-to-video", month(now), now]
        )).rows[0]
        if (!ok.ok) {
          await c.query("ROLLBACK")
          return undefined
        }
        await c.query("COMMIT")
        return row
      } catch (e) {
        await c.query("ROLLBACK").catch(() => {})
        throw e
      } finally {
        c.release()
      }
    }
  }
}

const db = process.env.DATABASE_URL ? postgres() : sqlite()

const handle = async (req, res) => {
  const token = bearer(req)
  if (token === undefined) return failure(res, 401, "AUTH_REQUIRED", "an API key is required")
  const key = await db.key(hash(token))
  if (
    key === undefined || key.revoked_at !== null || (key.expires_at !== null && Number(key.expires_at) < Date.now())
  ) {
    return failure(res, 401, "AUTH_INVALID_TOKEN", "invalid API key")
  }
  if (req.method === "GET" && req.url.startsWith("/api/v1/tasks/")) {
    const id = req.url.slice("/api/v1/tasks/".length)
    const row = await db.task(id)
    return row === undefined || row.account_id !== key.account_id
      ? failure(res, 404, "TASK_NOT_FOUND", `task ${id} not found`)
      : send(res, 200, { success: true, data: taskJson(row) })
  }
  if (req.method === "POST" && req.url === "/api/v1/vendor3/text-to-video") {
    const body = validBody(await readBody(req))
    if (body === undefined) return failure(res, 400, "VALIDATION_ERROR", "invalid request")
    const now = Date.now()
    const row = await db.accept(key, body, now)
    if (row === undefined) return failure(res, 402, "INSUFFICIENT_BALANCE", "insufficient balance")
    return send(res, 201, {
      success: true,
      data: {
        id: row[0],
        status: "pending",
        type: "text-to-video",
        provider: "vendor3",
        model: body.model,
        created_at: iso(now),
        estimated_seconds: 90
      }
    })
  }
  return failure(res, 404, "NOT_FOUND", "not found")
}

createServer((req, res) => {
  handle(req, res).catch((e) => {
    console.error(e)
    failure(res, 500, "INTERNAL_ERROR", "internal error")
  })
}).listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => console.log("Listening"))
