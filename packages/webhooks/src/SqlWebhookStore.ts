/**
 * Webhook storage on SQL: SQLite and PostgreSQL on the `SqlClient` in context, with the semantics of the memory
 * storage (`WebhookStore.makeMemory`) and the same conformance suite.
 *
 * Tables, created by {@link migrations} in {@link migrationsTable}, every name under the store's prefix
 * (`options.prefix`, default `mediagate_`, see {@link tables}): registrations, their idempotency keys, deliveries,
 * the attempt log and the dispatcher's cursor. Rows are decoded with Schema: a corrupt row fails with a
 * `PersistenceError` naming its table and column. "now" is the database clock, or Effect's `Clock` with
 * `time: "clock"` (tests, under `TestClock`).
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import type { OutboxEntry } from "@mediagate/engine/TaskOutbox"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  AttemptRow,
  attemptRow,
  type ClaimedDelivery,
  DeliveryRow,
  type FannedOut,
  fannedRows,
  type FanOutLease,
  newRow,
  reused,
  type Settle,
  settled,
  WebhookRow,
  WebhookStore
} from "./WebhookStore.js"

const storeName = "webhook storage"

/** The tables of the webhook storage under `prefix`. */
export const tables = (prefix: string = SqlStore.defaultPrefix) =>
  ({
    webhooks: `${prefix}webhooks`,
    idempotency: `${prefix}webhook_idempotency`,
    deliveries: `${prefix}webhook_deliveries`,
    attempts: `${prefix}webhook_delivery_attempts`,
    cursor: `${prefix}webhook_dispatch_cursor`
  }) as const

/** The table the webhook migrations are recorded in: `<prefix>webhooks_migrations`. */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}webhooks_migrations`

const createTables = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, id: idType } = SqlStore.columns(sql)
    const t = tables(prefix)
    yield* sql.unsafe(`CREATE TABLE ${t.webhooks} (
  id ${idType} PRIMARY KEY NOT NULL,
  account_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  description TEXT,
  enabled INTEGER NOT NULL,
  secret TEXT NOT NULL,
  created_at ${big} NOT NULL,
  deleted_at ${big}
)`)
    yield* sql.unsafe(`CREATE INDEX ${t.webhooks}_account_idx ON ${t.webhooks} (account_id, id)`)
    yield* sql.unsafe(`CREATE TABLE ${t.idempotency} (
  account_id TEXT NOT NULL,
  "key" TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  created_at ${big} NOT NULL,
  PRIMARY KEY (account_id, "key")
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.deliveries} (
  id ${idType} PRIMARY KEY NOT NULL,
  webhook_id ${idType},
  account_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL,
  last_status_code INTEGER,
  last_error TEXT,
  next_attempt_at ${big},
  lease_owner TEXT,
  lease_expires_at ${big},
  fence ${big} NOT NULL,
  created_at ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE INDEX ${t.deliveries}_webhook_idx ON ${t.deliveries} (webhook_id, id DESC)`)
    yield* sql.unsafe(`CREATE INDEX ${t.deliveries}_event_idx ON ${t.deliveries} (event_id)`)
    yield* sql.unsafe(
      `CREATE INDEX ${t.deliveries}_due_idx ON ${t.deliveries} (next_attempt_at, id) WHERE status = 'pending'`
    )
    yield* sql.unsafe(`CREATE TABLE ${t.attempts} (
  delivery_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  status_code INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  response_excerpt TEXT,
  at ${big} NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.cursor} (
  name TEXT PRIMARY KEY NOT NULL,
  position TEXT NOT NULL
)`)
  })

/**
 * The webhook migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails
 * the loader with a `MigrationError`.
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_webhooks": createTables(prefix),
    // retention deletes settled deliveries and idempotency records by age
    "0002_webhook_retention": Effect.flatMap(SqlClient.SqlClient, (sql) => {
      const t = tables(prefix)
      return Effect.zipRight(
        sql.unsafe(`CREATE INDEX ${t.deliveries}_created_idx ON ${t.deliveries} (created_at)`),
        sql.unsafe(`CREATE INDEX ${t.idempotency}_created_idx ON ${t.idempotency} (created_at)`)
      )
    }),
    // the operators' backlog: deliveries that failed in the last hour, found by their last attempt's time
    "0003_webhook_attempts_at": Effect.flatMap(SqlClient.SqlClient, (sql) => {
      const t = tables(prefix)
      return sql.unsafe(`CREATE INDEX ${t.attempts}_at_idx ON ${t.attempts} (at)`)
    }),
    // test and live apart: a webhook receives the events of the tasks of its environment only (existing: live)
    "0004_webhook_environment": Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql.unsafe(`ALTER TABLE ${tables(prefix).webhooks}
        ADD COLUMN environment TEXT NOT NULL DEFAULT 'live' CHECK (environment IN ('live', 'test'))`)
    )
  }))

/**
 * Runs the webhook migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)

const { column } = SqlRows
const { hasNul } = SqlStore

/** The decoders of the webhook rows (their Schemas are the records of `WebhookStore`), named after their tables. */
const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    webhook: SqlRows.decoder(names.webhooks, WebhookRow),
    delivery: SqlRows.decoder(names.deliveries, DeliveryRow),
    // a claimed delivery with its configured webhook (the claim's `RETURNING` reads it)
    claimed: SqlRows.decoder(
      names.deliveries,
      Schema.Struct({
        ...DeliveryRow.fields,
        webhookSecret: column("webhook_secret", Schema.NullOr(Schema.String)),
        webhookEnabled: column("webhook_enabled", Schema.NullOr(SqlRows.Flag)),
        webhookDeletedAt: column("webhook_deleted_at", Schema.NullOr(SqlRows.Number))
      })
    ),
    attempt: SqlRows.decoder(names.attempts, AttemptRow),
    idempotency: SqlRows.decoder(
      names.idempotency,
      Schema.Struct({
        fingerprint: Schema.String,
        webhookId: column("webhook_id", Schema.String),
        createdAt: column("created_at", SqlRows.Number)
      })
    ),
    cursor: SqlRows.decoder(names.cursor, Schema.Struct({ position: Schema.String })),
    fanned: SqlRows.decoder(names.deliveries, Schema.Struct({ moved: SqlRows.Number, created: SqlRows.Number })),
    count: SqlRows.decoder(names.deliveries, Schema.Struct({ n: SqlRows.Number })),
    due: SqlRows.decoder(names.deliveries, Schema.Struct({ due: Schema.NullOr(SqlRows.Number) })),
    backlog: SqlRows.decoder(
      names.deliveries,
      Schema.Struct({
        pending: SqlRows.Number,
        due: SqlRows.Number,
        failed: SqlRows.Number
      })
    )
  }
}

/** Storage failures become {@link PersistenceError}. */
const persistence = SqlStore.persistence(storeName)

/** Options of the SQL storage: the table prefix and where "now" comes from (default: the database clock). */
export interface SqlOptions extends SqlStore.PrefixOptions, SqlStore.TimeOptions {}

const cursorName = "outbox"

/** The most deliveries one fan-out statement inserts on PostgreSQL (7 parameters each); more go in a transaction. */
const maxFanOutStatement = 4000

/** The most settles in one statement of `settleAll` (12 parameters each). */
const maxSettleRound = 500

/**
 * Builds the SQL storage on the `SqlClient` in context, after running the migrations, with its tables under
 * `options.prefix` (default `mediagate_`; an invalid prefix fails with a `PersistenceError`).
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  WebhookStore["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const rows = decoders(prefix)

    const now = SqlStore.storageNow(sql, pg, options.time).pipe(persistence("now"))

    const selectWebhooks = (accountId: string) =>
      sql`SELECT * FROM ${t.webhooks} WHERE account_id = ${accountId} AND deleted_at IS NULL ORDER BY id`.pipe(
        Effect.flatMap(rows.webhook.all)
      )
    const selectWebhook = (id: string) =>
      sql`SELECT * FROM ${t.webhooks} WHERE id = ${id}`.pipe(Effect.flatMap(rows.webhook.first))
    const insertDeliveries = (deliveries: ReadonlyArray<DeliveryRow>) =>
      Effect.flatMap(
        Effect.forEach(deliveries, rows.delivery.encode),
        (encoded) => sql`INSERT INTO ${t.deliveries} ${sql.insert(encoded)}`
      )

    /** The compare-and-set, then the deliveries read and inserted, in one transaction (SQLite; large fan-outs). */
    const fanOutInTransaction = <F extends { readonly rows: ReadonlyArray<DeliveryRow> }, E>(
      compareAndSet: Effect.Effect<ReadonlyArray<unknown>, SqlError>,
      deliveries: Effect.Effect<F, E>
    ) =>
      sql.withTransaction(Effect.gen(function*() {
        const moved = yield* compareAndSet
        if (moved.length === 0) return Option.none<F>()
        const created = yield* deliveries
        for (let i = 0; i < created.rows.length; i += 200) yield* insertDeliveries(created.rows.slice(i, i + 200))
        return Option.some(created)
      }))

    /**
     * PostgreSQL: the compare-and-set and the inserts in one statement (data-modifying CTEs): the deliveries are
     * inserted only when the cursor moved.
     */
    const fanOutStatement = (compareAndSet: Statement.Statement<unknown>, created: ReadonlyArray<DeliveryRow>) => {
      if (created.length === 0) {
        return Effect.map(compareAndSet, (moved) => moved.length === 0 ? Option.none<number>() : Option.some(0))
      }
      const time = created[0]!.createdAt
      // a leased delivery (`fanOutLeased`) carries its owner, expiry and fence 1; the others none and 0
      const values = created.map((d) =>
        sql`(${d.id}, ${d.webhookId}, ${d.accountId}, ${d.eventId}, ${d.eventType}, ${d.url}, ${d.payload}, ${d.leaseOwner}, ${
          d.leaseExpiresAt === null ? null : String(d.leaseExpiresAt)
        })`
      )
      return sql`WITH moved AS (${compareAndSet}),
        created AS (
          INSERT INTO ${t.deliveries} (id, webhook_id, account_id, event_id, event_type, url, payload, status, attempts,
            last_status_code, last_error, next_attempt_at, lease_owner, lease_expires_at, fence, created_at)
          SELECT v.id, v.webhook_id, v.account_id, v.event_id, v.event_type, v.url, v.payload, 'pending', 0,
            NULL, NULL, CAST(${time} AS BIGINT), v.lease_owner, CAST(v.lease_expires_at AS BIGINT),
            CASE WHEN v.lease_owner IS NULL THEN 0 ELSE 1 END, CAST(${time} AS BIGINT)
          FROM (VALUES ${sql.csv(values)})
            AS v (id, webhook_id, account_id, event_id, event_type, url, payload, lease_owner, lease_expires_at)
          WHERE EXISTS (SELECT 1 FROM moved)
          RETURNING id)
        SELECT (SELECT COUNT(*) FROM moved) AS moved, (SELECT COUNT(*) FROM created) AS created`.pipe(
        Effect.flatMap(rows.fanned.single),
        Effect.map(({ created, moved }) => moved === 0 ? Option.none<number>() : Option.some(created))
      )
    }

    /** The attempt logs of deliveries, by delivery then attempt (`attempts`, `attemptsOf`). */
    const attemptsOf = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql`SELECT * FROM ${t.attempts} WHERE ${sql.in("delivery_id", ids)} ORDER BY delivery_id, attempt`.pipe(
          Effect.flatMap(rows.attempt.all),
          persistence("attempts")
        )

    /**
     * The fan-out (`fanOut`, `fanOutLeased`): the accounts' live webhooks read, the deliveries built (the first
     * `lease.limit` leased), the cursor's compare-and-set and the inserts.
     */
    const fanOutLeased = (
      expected: string | undefined,
      next: string,
      entries: ReadonlyArray<OutboxEntry>,
      at: number,
      lease?: FanOutLease
    ) =>
      Effect.suspend(() => {
        const accounts = [...new Set(entries.map((entry) => entry.accountId))]
        const liveWebhooks = accounts.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM ${t.webhooks}
            WHERE ${sql.in("account_id", accounts)} AND deleted_at IS NULL AND enabled = 1`.pipe(
            Effect.flatMap(rows.webhook.all)
          )
        const build = (webhooks: ReadonlyArray<WebhookRow>) => fannedRows(entries, webhooks, Math.floor(at), lease)
        const answer = (fanned: ReturnType<typeof build>): FannedOut => ({
          created: fanned.rows.length,
          leased: fanned.leased
        })
        // the compare-and-set: on PostgreSQL it locks the cursor row, so a concurrent dispatcher waits and then
        // finds the cursor moved
        const compareAndSet = expected === undefined
          ? sql`INSERT INTO ${t.cursor} (name, position) VALUES (${cursorName}, ${next})
              ON CONFLICT (name) DO NOTHING RETURNING name`
          : sql`UPDATE ${t.cursor} SET position = ${next}
              WHERE name = ${cursorName} AND position = ${expected} RETURNING name`
        if (pg) {
          // PostgreSQL: the webhooks are read first, then one statement moves the cursor and inserts the
          // deliveries only if it moved (atomic by itself: two round trips, no transaction). A webhook changed
          // between the two is as if the fan-out had run a moment earlier (as with a claim, the attempt uses the
          // webhook as read here).
          return Effect.flatMap(liveWebhooks, (webhooks) => {
            const fanned = build(webhooks)
            return fanned.rows.length > maxFanOutStatement
              ? Effect.map(fanOutInTransaction(compareAndSet, Effect.succeed(fanned)), Option.map(answer))
              : Effect.map(fanOutStatement(compareAndSet, fanned.rows), Option.as(answer(fanned)))
          })
        }
        return Effect.map(fanOutInTransaction(compareAndSet, Effect.map(liveWebhooks, build)), Option.map(answer))
      }).pipe(persistence("fanOut"))

    /**
     * One round of `settleAll` (distinct deliveries, valid ids and fences): the fenced update of every delivery
     * from the values computed from its claimed row, the attempts logged, the webhooks answered `410` disabled.
     * PostgreSQL: one statement (data-modifying CTEs); SQLite: three in a transaction. Answers the ids recorded.
     */
    const settleRound = (batch: ReadonlyArray<Settle>) => {
      const values = batch.map(({ attempt, delivery, settlement }) => {
        const next = settled(delivery, attempt, settlement)
        const disable = settlement.status === "failed" && settlement.disableWebhook === true ? delivery.webhookId : null
        return sql`(${delivery.id}, CAST(${delivery.fence} AS BIGINT), CAST(${next.attempts} AS INTEGER),
          CAST(${next.lastStatusCode} AS INTEGER), ${next.lastError}, ${next.status},
          CAST(${next.nextAttemptAt} AS BIGINT), CAST(${attempt === undefined ? 0 : 1} AS INTEGER), ${disable},
          CAST(${attempt === undefined ? null : Math.round(attempt.durationMs)} AS INTEGER),
          ${attempt?.responseExcerpt ?? null}, CAST(${
          attempt === undefined ? null : Math.floor(attempt.at)
        } AS BIGINT))`
      })
      const settles = sql`settles (s_id, s_fence, s_attempts, s_code, s_error, s_status, s_next, s_log, s_disable,
        s_duration, s_excerpt, s_at) AS (VALUES ${sql.csv(values)})`
      const update = sql`UPDATE ${t.deliveries} SET attempts = settles.s_attempts, last_status_code = settles.s_code,
          last_error = settles.s_error, status = settles.s_status, next_attempt_at = settles.s_next,
          lease_owner = NULL, lease_expires_at = NULL
        FROM settles
        WHERE ${t.deliveries}.id = settles.s_id AND ${t.deliveries}.fence = settles.s_fence
          AND ${t.deliveries}.lease_owner IS NOT NULL AND ${t.deliveries}.status = 'pending'`
      const ids = (recorded: ReadonlyArray<Record<string, unknown>>) =>
        new Set(recorded.map((row) => String(row["id"])))
      if (pg) {
        return sql`WITH ${settles},
          up AS (${update} RETURNING settles.*),
          logged AS (INSERT INTO ${t.attempts} (delivery_id, attempt, status_code, error, duration_ms, response_excerpt, at)
            SELECT s_id, s_attempts, s_code, s_error, s_duration, s_excerpt, s_at FROM up WHERE s_log = 1),
          disabled AS (UPDATE ${t.webhooks} SET enabled = 0
            WHERE id IN (SELECT s_disable FROM up WHERE s_disable IS NOT NULL))
          SELECT s_id AS id FROM up`.pipe(Effect.map(ids))
      }
      return sql.withTransaction(Effect.gen(function*() {
        const recorded = ids(yield* sql`WITH ${settles} ${update} RETURNING ${t.deliveries}.id`)
        const logged: Array<AttemptRow> = []
        const disable: Array<string> = []
        for (const { attempt, delivery, settlement } of batch) {
          if (!recorded.has(delivery.id)) continue
          if (attempt !== undefined) {
            logged.push({ ...attemptRow(delivery.id, delivery.attempts + 1, attempt), at: Math.floor(attempt.at) })
          }
          if (settlement.status === "failed" && settlement.disableWebhook === true && delivery.webhookId !== null) {
            disable.push(delivery.webhookId)
          }
        }
        if (logged.length > 0) {
          const encoded = yield* Effect.forEach(logged, rows.attempt.encode)
          yield* sql`INSERT INTO ${t.attempts} ${sql.insert(encoded)}`
        }
        if (disable.length > 0) yield* sql`UPDATE ${t.webhooks} SET enabled = 0 WHERE ${sql.in("id", disable)}`
        return recorded
      }))
    }

    const service: WebhookStore["Type"] = {
      now,
      createWebhook: (webhook, claim) =>
        sql.withTransaction(Effect.gen(function*() {
          if (claim !== undefined) {
            const previous = yield* sql`SELECT fingerprint, webhook_id, created_at FROM ${t.idempotency}
              WHERE account_id = ${webhook.accountId} AND "key" = ${claim.key}${sql.literal(pg ? " FOR UPDATE" : "")}`
              .pipe(
                Effect.flatMap(rows.idempotency.first),
                Effect.map(Option.getOrUndefined)
              )
            const verdict = IdempotencyWindow.judge(previous, claim)
            if (verdict === "Reused") return yield* Effect.fail(reused())
            if (verdict === "Replay" && previous !== undefined) {
              const original = yield* selectWebhook(previous.webhookId)
              if (Option.isSome(original)) return { _tag: "Replayed", webhook: original.value } as const
            }
            yield* sql`INSERT INTO ${t.idempotency} (account_id, "key", fingerprint, webhook_id, created_at)
              VALUES (${webhook.accountId}, ${claim.key}, ${claim.fingerprint}, ${webhook.id}, ${
              Math.floor(webhook.createdAt)
            })
              ON CONFLICT (account_id, "key") DO UPDATE SET fingerprint = excluded.fingerprint,
                webhook_id = excluded.webhook_id, created_at = excluded.created_at`
          }
          const encoded = yield* rows.webhook.encode({ ...webhook, createdAt: Math.floor(webhook.createdAt) })
          yield* sql`INSERT INTO ${t.webhooks} ${sql.insert(encoded)}`
          return { _tag: "Created", webhook } as const
        })).pipe(persistence("createWebhook")),
      listWebhooks: (accountId) =>
        persistence("listWebhooks")(hasNul(accountId) ? Effect.succeed([]) : selectWebhooks(accountId)),
      getWebhook: (accountId, id) =>
        persistence("getWebhook")(
          hasNul(accountId, id)
            ? Effect.succeedNone
            : selectWebhook(id).pipe(
              Effect.map(Option.filter((w) => w.accountId === accountId && w.deletedAt === null))
            )
        ),
      getWebhookById: (id) => persistence("getWebhookById")(hasNul(id) ? Effect.succeedNone : selectWebhook(id)),
      removeWebhook: (accountId, id, at) =>
        persistence("removeWebhook")(
          hasNul(accountId, id)
            ? Effect.succeed(false)
            : sql`UPDATE ${t.webhooks} SET deleted_at = ${Math.floor(at)}, enabled = 0
                WHERE id = ${id} AND account_id = ${accountId} AND deleted_at IS NULL RETURNING id`.pipe(
              Effect.map((removed) => removed.length > 0)
            )
        ),
      setEnabled: (id, enabled) =>
        Effect.asVoid(sql`UPDATE ${t.webhooks} SET enabled = ${enabled ? 1 : 0} WHERE id = ${id}`).pipe(
          persistence("setEnabled")
        ),
      listDeliveries: (accountId, webhookId, query) =>
        Effect.gen(function*() {
          const limit = Math.max(0, Math.floor(query.limit))
          if (hasNul(accountId, webhookId, query.beforeId, query.status)) return { items: [], hasMore: false, total: 0 }
          // operators leave out the webhook or the account: every target, every account
          const filters = [
            ...(accountId === undefined ? [] : [sql`account_id = ${accountId}`]),
            ...(webhookId === undefined ? [] : [sql`webhook_id = ${webhookId}`]),
            ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
          ]
          const scope = sql.and(filters)
          const page = query.beforeId === undefined ? scope : sql`${scope} AND id < ${query.beforeId}`
          const items = yield* sql`SELECT * FROM ${t.deliveries} WHERE ${page} ORDER BY id DESC LIMIT ${limit + 1}`
            .pipe(
              Effect.flatMap(rows.delivery.all)
            )
          const total = yield* sql`SELECT COUNT(*) AS n FROM ${t.deliveries} WHERE ${scope}`.pipe(
            Effect.flatMap(rows.count.single)
          )
          return { items: items.slice(0, limit), hasMore: items.length > limit, total: total.n }
        }).pipe(persistence("listDeliveries")),
      getDelivery: (accountId, webhookId, id) =>
        persistence("getDelivery")(
          hasNul(accountId, webhookId, id)
            ? Effect.succeedNone
            : sql`SELECT * FROM ${t.deliveries}
                WHERE id = ${id} AND account_id = ${accountId} AND webhook_id = ${webhookId}`.pipe(
              Effect.flatMap(rows.delivery.first)
            )
        ),
      deliveriesOfEvent: (eventId) =>
        sql`SELECT * FROM ${t.deliveries} WHERE event_id = ${eventId} ORDER BY id`.pipe(
          Effect.flatMap(rows.delivery.all),
          persistence("deliveriesOfEvent")
        ),
      addDelivery: (delivery, at, addOptions) =>
        sql.withTransaction(Effect.gen(function*() {
          const row = newRow(delivery, Math.floor(at))
          yield* insertDeliveries([row])
          if (addOptions.enableWebhook && delivery.webhookId !== null) {
            yield* sql`UPDATE ${t.webhooks} SET enabled = 1 WHERE id = ${delivery.webhookId} AND deleted_at IS NULL`
          }
          return row
        })).pipe(persistence("addDelivery")),
      readCursor: sql`SELECT position FROM ${t.cursor} WHERE name = ${cursorName}`.pipe(
        Effect.flatMap(rows.cursor.first),
        Effect.map(Option.match({ onNone: () => undefined, onSome: (row) => row.position })),
        persistence("readCursor")
      ),
      fanOut: (expected, next, entries, at) =>
        Effect.map(fanOutLeased(expected, next, entries, at), Option.map((fanned) => fanned.created)),
      fanOutLeased,
      claimDue: (owner, limit, leaseMs, at) =>
        Effect.suspend(() => {
          const n = Math.max(0, Math.floor(limit))
          if (n === 0) return Effect.succeed([])
          const time = Math.floor(at)
          return sql`UPDATE ${t.deliveries} SET fence = fence + 1, lease_owner = ${owner},
              lease_expires_at = ${time + Math.floor(leaseMs)}
            WHERE id IN (
              SELECT id FROM ${t.deliveries}
              WHERE status = 'pending' AND next_attempt_at <= ${time}
                AND (lease_expires_at IS NULL OR lease_expires_at <= ${time})
              ORDER BY next_attempt_at, id
              LIMIT ${n}${sql.literal(pg ? " FOR UPDATE SKIP LOCKED" : "")}
            )
            RETURNING *,
              (SELECT w.secret FROM ${t.webhooks} w WHERE w.id = ${t.deliveries}.webhook_id) AS webhook_secret,
              (SELECT w.enabled FROM ${t.webhooks} w WHERE w.id = ${t.deliveries}.webhook_id) AS webhook_enabled,
              (SELECT w.deleted_at FROM ${t.webhooks} w WHERE w.id = ${t.deliveries}.webhook_id) AS webhook_deleted_at`
            .pipe(
              Effect.flatMap(rows.claimed.all),
              Effect.map((claimed) =>
                claimed
                  .map(({ webhookDeletedAt, webhookEnabled, webhookSecret, ...row }): ClaimedDelivery => ({
                    ...row,
                    webhook: webhookSecret === null
                      ? null
                      : { secret: webhookSecret, enabled: webhookEnabled === true, deletedAt: webhookDeletedAt }
                  }))
                  .sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0) || (a.id < b.id ? -1 : 1))
              )
            )
        }).pipe(persistence("claimDue")),
      settle: (id, fence, attempt, settlement) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!Number.isSafeInteger(fence) || hasNul(id)) return false
          const current = yield* sql`SELECT * FROM ${t.deliveries}
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND status = 'pending'`.pipe(
            Effect.flatMap(rows.delivery.first)
          )
          if (Option.isNone(current)) return false
          const row = current.value
          const next = settled(row, attempt, settlement)
          const updated = yield* sql`UPDATE ${t.deliveries} SET attempts = ${next.attempts},
              last_status_code = ${next.lastStatusCode}, last_error = ${next.lastError}, status = ${next.status},
              next_attempt_at = ${next.nextAttemptAt}, lease_owner = NULL, lease_expires_at = NULL
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND status = 'pending' RETURNING id`
          if (updated.length === 0) return false
          if (attempt !== undefined) {
            const logged = { ...attemptRow(id, next.attempts, attempt), at: Math.floor(attempt.at) }
            yield* sql`INSERT INTO ${t.attempts} ${sql.insert(yield* rows.attempt.encode(logged))}`
          }
          if (settlement.status === "failed" && settlement.disableWebhook === true && row.webhookId !== null) {
            yield* sql`UPDATE ${t.webhooks} SET enabled = 0 WHERE id = ${row.webhookId}`
          }
          return true
        })).pipe(persistence("settle")),
      settleAll: (settles) =>
        Effect.gen(function*() {
          const answers = settles.map(() => false)
          // rounds of distinct deliveries: a delivery given twice is settled by its first settle, or not at all
          let left = settles.flatMap((settle, i) =>
            Number.isSafeInteger(settle.delivery.fence) && !hasNul(settle.delivery.id) ? [i] : []
          )
          while (left.length > 0) {
            const seen = new Set<string>()
            const round: Array<number> = []
            const later: Array<number> = []
            for (const i of left) {
              const id = settles[i]!.delivery.id
              if (seen.has(id)) later.push(i)
              else {
                seen.add(id)
                round.push(i)
              }
            }
            for (let from = 0; from < round.length; from += maxSettleRound) {
              const chunk = round.slice(from, from + maxSettleRound)
              const recorded = yield* settleRound(chunk.map((i) => settles[i]!))
              for (const i of chunk) answers[i] = recorded.has(settles[i]!.delivery.id)
            }
            left = later
          }
          return answers
        }).pipe(persistence("settleAll")),
      attempts: (id) => attemptsOf([id]),
      attemptsOf,
      nextDueAt: sql`SELECT MIN(CASE WHEN lease_expires_at IS NOT NULL AND lease_expires_at > next_attempt_at
          THEN lease_expires_at ELSE next_attempt_at END) AS due
        FROM ${t.deliveries} WHERE status = 'pending' AND next_attempt_at IS NOT NULL`.pipe(
        Effect.flatMap(rows.due.first),
        Effect.map(Option.flatMap((row) => Option.fromNullable(row.due))),
        persistence("nextDueAt")
      ),
      releaseAll: (owner) =>
        sql`UPDATE ${t.deliveries} SET lease_owner = NULL, lease_expires_at = NULL
          WHERE lease_owner = ${owner} AND status = 'pending' RETURNING id`.pipe(
          Effect.map((released) => released.length),
          persistence("releaseAll")
        ),
      pruneDeliveries: (before) =>
        Effect.suspend(() => {
          const settledBefore = sql`status <> 'pending' AND created_at < ${Math.floor(before)}`
          return sql.withTransaction(
            sql`DELETE FROM ${t.attempts} WHERE delivery_id IN (SELECT id FROM ${t.deliveries} WHERE ${settledBefore})`
              .pipe(
                Effect.zipRight(sql`DELETE FROM ${t.deliveries} WHERE ${settledBefore} RETURNING id`)
              )
          )
        }).pipe(Effect.map((pruned) => pruned.length), persistence("pruneDeliveries")),
      pruneIdempotency: (before) =>
        sql`DELETE FROM ${t.idempotency} WHERE created_at < ${Math.floor(before)} RETURNING webhook_id`.pipe(
          Effect.map((pruned) => pruned.length),
          persistence("pruneIdempotency")
        ),
      backlog: (at, failedSince) =>
        sql`SELECT
          (SELECT COUNT(*) FROM ${t.deliveries} WHERE status = 'pending') AS pending,
          (SELECT COUNT(*) FROM ${t.deliveries} WHERE status = 'pending' AND next_attempt_at <= ${
          Math.floor(at)
        }) AS due,
          (SELECT COUNT(*) FROM ${t.deliveries} WHERE status = 'failed' AND id IN (
            SELECT delivery_id FROM ${t.attempts} WHERE at >= ${Math.floor(failedSince)})) AS failed`.pipe(
          Effect.flatMap(rows.backlog.single),
          Effect.map(({ due, failed, pending }) => ({ pending, due, failedSince: failed })),
          persistence("backlog")
        )
    }
    return service
  })

/** The SQL storage as a layer (runs the migrations). */
export const layer = (
  options: SqlOptions = {}
): Layer.Layer<WebhookStore, SqlError | Migrator.MigrationError | PersistenceError, SqlClient.SqlClient> =>
  Layer.effect(WebhookStore, make(options))
