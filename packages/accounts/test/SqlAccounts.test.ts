import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlAccounts from "../src/SqlAccounts.js"
import { accountsSuite, Dump } from "./AccountsSuite.js"
import { pgAvailable, pgNotRunning, postgres, runPostgres, sqlite } from "./databases.js"

if (!runPostgres) console.warn(`${pgNotRunning}: its tests are skipped`)

/** Every row of the accounts tables, as text. */
const dump = Layer.effect(Dump, Effect.map(SqlClient.SqlClient, (sql) => ({
  dump: () =>
    Effect.gen(function*() {
      const t = SqlAccounts.tables()
      const keys = yield* sql`SELECT * FROM ${sql(t.keys)}`
      const accounts = yield* sql`SELECT * FROM ${sql(t.accounts)}`
      const stored = yield* sql`SELECT * FROM ${sql(t.responses)}`
      return JSON.stringify({ accounts, keys, stored }, (_k, v) => typeof v === "bigint" ? String(v) : v)
    })
})))

const backend = (database: () => Layer.Layer<SqlClient.SqlClient, unknown>) => () =>
  Layer.merge(SqlAccounts.layerStore(), dump).pipe(Layer.provide(database()))

accountsSuite("sqlite", backend(sqlite))
if (runPostgres) accountsSuite("postgres", backend(postgres))

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})

describe("SQL migrations", () => {
  it.effect("run once into their own table", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* SqlAccounts.migrate()
      yield* SqlAccounts.migrate()
      const rows = yield* sql<{ name: string }>`SELECT name FROM ${sql(SqlAccounts.migrationsTable())} ORDER BY migration_id`
      assert.deepStrictEqual(rows.map((r) => r.name), ["accounts_api_keys", "idempotent_responses"])
    }).pipe(Effect.provide(sqlite())))
})
