/**
 * Mediagate embedded into an application's own database: the application already has tables named like
 * Mediagate's plain 0.1 names (`tasks`, `accounts`, `api_keys`, `webhooks`, `billing_accounts`, `billing_ledger`,
 * ...), indexes, a trigger and (PostgreSQL) a trigger function of the same names, with rows of its own. All four
 * SQL stores migrate with the default prefix (`mediagate_`) on that database, do a round trip each, and leave every
 * object and row of the application as it was. SQLite, and PostgreSQL when it runs (always under `CI=true`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as SqlAccounts from "@mediagate/accounts/SqlAccounts"
import * as PaymentProvider from "@mediagate/billing/PaymentProvider"
import * as SqlBilling from "@mediagate/billing/SqlBilling"
import { Services } from "@mediagate/contract"
import * as ResultLinks from "@mediagate/engine/ResultLinks"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import { TaskStorage } from "@mediagate/engine/TaskStorage"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Databases from "@mediagate/testing/databases"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as SqlWebhookStore from "@mediagate/webhooks/SqlWebhookStore"
import * as WebhookStore from "@mediagate/webhooks/WebhookStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stack from "../src/internal/stack.js"

const { postgres, runPostgres, sqlite } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

// -----------------------------------------------------------------------------------------------------------------
// the application's own schema
// -----------------------------------------------------------------------------------------------------------------

/** Every plain name the stores of Mediagate 0.1 created, plus Effect's default migrations table. */
const embedderTables = [
  "tasks",
  "task_idempotency",
  "task_outbox",
  "billing_accounts",
  "billing_key_spend",
  "billing_month_spend",
  "billing_ledger",
  "billing_top_up_requests",
  "ledger_entries",
  "accounts",
  "api_keys",
  "idempotent_responses",
  "webhooks",
  "webhook_idempotency",
  "webhook_deliveries",
  "webhook_delivery_attempts",
  "webhook_dispatch_cursor",
  "effect_sql_migrations"
]

/** The application's tables (with columns Mediagate's are not), indexes and ledger guard, and two rows each. */
const createEmbedderSchema = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  for (const table of embedderTables) {
    yield* sql.unsafe(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, note TEXT)`)
    yield* sql.unsafe(`INSERT INTO ${table} (id, owner, note) VALUES (1, 'app', '${table} one'), (2, 'app', NULL)`)
  }
  // index names Mediagate 0.1 used (schema-wide names on PostgreSQL)
  for (
    const [index, table] of [["tasks_account_idx", "tasks"], ["api_keys_account_idx", "api_keys"], [
      "webhooks_account_idx",
      "webhooks"
    ], ["billing_ledger_account_idx", "billing_ledger"]]
  ) {
    yield* sql.unsafe(`CREATE INDEX ${index} ON ${table} (owner)`)
  }
  if (pg) {
    yield* sql.unsafe(`CREATE FUNCTION billing_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the application ledger is append-only';
END
$$`)
    yield* sql.unsafe(`CREATE TRIGGER billing_ledger_append_only BEFORE UPDATE OR DELETE ON billing_ledger
  FOR EACH ROW EXECUTE FUNCTION billing_ledger_append_only()`)
  } else {
    yield* sql.unsafe(`CREATE TRIGGER billing_ledger_no_update BEFORE UPDATE ON billing_ledger
BEGIN
  SELECT RAISE(ABORT, 'the application ledger is append-only');
END`)
  }
})

/** What the catalog says about every object not named `mediagate_...`, with its definition. */
const embedderCatalog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.onDialectOrElse({
    pg: () =>
      sql<{ readonly entry: string }>`
        SELECT 'index ' || indexname || ': ' || indexdef AS entry FROM pg_indexes
          WHERE schemaname = current_schema() AND indexname NOT LIKE 'mediagate\\_%'
        UNION ALL
        SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name NOT LIKE 'mediagate\\_%'
        UNION ALL
        SELECT 'trigger ' || tg.tgname || ' on ' || c.relname FROM pg_trigger tg
          JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = current_schema() AND NOT tg.tgisinternal AND c.relname NOT LIKE 'mediagate\\_%'
        UNION ALL
        SELECT 'function ' || p.proname || ': ' || p.prosrc FROM pg_proc p
          JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()
            AND p.proname NOT LIKE 'mediagate\\_%'`,
    orElse: () =>
      sql<{ readonly entry: string }>`
        SELECT type || ' ' || name || ' on ' || tbl_name || ': ' || COALESCE(sql, '') AS entry FROM sqlite_master
          WHERE name NOT LIKE 'mediagate\\_%' ESCAPE '\\' AND tbl_name NOT LIKE 'mediagate\\_%' ESCAPE '\\'
            AND name <> 'sqlite_sequence'`
  })
  return rows.map((row) => row.entry).sort()
})

/** Every row of every application table. */
const embedderRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const out: Record<string, unknown> = {}
  for (const table of embedderTables) {
    out[table] = yield* sql.unsafe(`SELECT id, owner, note FROM ${table} ORDER BY id`)
  }
  return JSON.parse(JSON.stringify(out)) as Record<string, unknown>
})

// -----------------------------------------------------------------------------------------------------------------
// the four stores, default prefix
// -----------------------------------------------------------------------------------------------------------------

const stores = Stack.Admin.pipe(
  Layer.provide(ResultLinks.layerAsStored),
  Layer.provideMerge(Layer.mergeAll(SqlTaskStorage.layer(), SqlAccounts.layer(), SqlWebhookStore.layer())),
  Layer.provideMerge(SqlBilling.layer()),
  Layer.provide(PaymentProvider.layerNone)
)

/** An account with billing and a key, a charged task, a webhook: every store writes. */
const roundTrip = Effect.gen(function*() {
  const adminService = yield* Services.AdminService
  const account = yield* adminService.createAccount({ name: "Acme", balance: 10 })
  const key = yield* adminService.createKey(account.id, { name: "root" })
  const storage = yield* TaskStorage
  const now = yield* storage.now
  const task = Fixtures.newTask({ accountId: account.id, keyId: key.id, chargedMicros: 2_000_000, createdAt: now })
  const charge = {
    accountId: account.id,
    keyId: key.id,
    taskId: task.id,
    amountMicros: 2_000_000,
    description: "a task"
  }
  yield* storage.accept({ task, charge, idempotency: { key: "idem", fingerprint: "f", notBefore: 0 } })
  expect((yield* adminService.getAccount(account.id)).balance).toBe(8)
  const webhooks = yield* WebhookStore.WebhookStore
  yield* webhooks.createWebhook({
    id: WebhookStore.webhookId(now),
    accountId: account.id,
    environment: "live",
    url: "https://hooks.example.com/",
    events: ["task.completed"],
    description: null,
    enabled: true,
    secret: "whsec_test",
    createdAt: now,
    deletedAt: null
  }, undefined)
  expect((yield* webhooks.listWebhooks(account.id)).length).toBe(1)
})

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`Mediagate in an application's ${name} database (default prefix)`, () => {
    it.live(
      "the four stores migrate beside the application's tasks, accounts, webhooks and ledger, touching none",
      () =>
        Effect.gen(function*() {
          yield* createEmbedderSchema
          const catalog = yield* embedderCatalog
          const rows = yield* embedderRows
          expect(catalog.length).toBeGreaterThan(embedderTables.length)

          const context = yield* Layer.build(stores)
          yield* roundTrip.pipe(Effect.provide(context))

          expect(yield* embedderCatalog).toEqual(catalog)
          expect(yield* embedderRows).toEqual(rows)
          // Mediagate's tables are there, each under the prefix
          const sql = yield* SqlClient.SqlClient
          const ours = [
            ...Object.values(SqlTaskStorage.tables()),
            ...Object.values(SqlBilling.tables()),
            ...Object.values(SqlAccounts.tables()),
            ...Object.values(SqlWebhookStore.tables()),
            SqlTaskStorage.migrationsTable(),
            SqlBilling.migrationsTable(),
            SqlAccounts.migrationsTable(),
            SqlWebhookStore.migrationsTable()
          ]
          for (const table of ours) {
            assert.isTrue(table.startsWith(SqlStore.defaultPrefix), table)
            yield* sql`SELECT COUNT(*) AS n FROM ${sql(table)}`
          }
          // the application's ledger guard still guards its ledger, and Mediagate's its own
          const refused = yield* Effect.flip(sql`UPDATE billing_ledger SET note = 'changed' WHERE id = 1`)
          expect(String(refused.cause)).toContain("the application ledger is append-only")
          const ledger = sql(SqlBilling.tables().ledger)
          const guarded = yield* Effect.flip(sql`DELETE FROM ${ledger}`)
          expect(String(guarded.cause)).toContain("mediagate_billing_ledger is append-only")
        }).pipe(Effect.provide(database()), Effect.scoped),
      { timeout: 20_000 }
    )
  })
}
