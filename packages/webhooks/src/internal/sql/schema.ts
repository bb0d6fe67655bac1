/**
 * The SQL webhook storage's tables and migrations (SQLite and PostgreSQL), under the store's table prefix.
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"

/** The name of the storage in its errors and migrations. */
export const storeName = "webhook storage"

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
