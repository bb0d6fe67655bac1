/**
 * The table prefix of the SQL accounts stores: the conformance suite under a custom prefix, every object the
 * migrations create (the idempotent answers' table included) named with it, and invalid prefixes refused before the
 * database is touched.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlAccounts from "../src/SqlAccounts.js"
import { accountsSuite, Dump } from "./AccountsSuite.js"
import { outsidePrefix, postgres, runPostgres, schemaObjects, sqlite } from "./databases.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"
import * as FakeOperatorViews from "./FakeOperatorViews.js"

const prefix = "acme_mg_"

type Database = () => Layer.Layer<SqlClient.SqlClient, unknown>

const databases: ReadonlyArray<readonly [string, Database]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

/** Every row of the prefixed accounts tables, as text. */
const dump = Layer.effect(
  Dump,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    dump: () =>
      Effect.gen(function*() {
        const t = SqlAccounts.tables(prefix)
        const keys = yield* sql`SELECT * FROM ${sql(t.keys)}`
        const accounts = yield* sql`SELECT * FROM ${sql(t.accounts)}`
        const stored = yield* sql`SELECT * FROM ${sql(t.responses)}`
        return JSON.stringify({ accounts, keys, stored }, (_k, v) => typeof v === "bigint" ? String(v) : v)
      })
  }))
)

for (const [name, database] of databases) {
  accountsSuite(
    `${name}, prefix ${prefix}`,
    () => Layer.merge(SqlAccounts.layerStore({ prefix }), dump).pipe(Layer.provide(database()))
  )
}

for (const [name, database] of databases) {
  describe(`SqlAccounts with the prefix ${prefix} on ${name}`, () => {
    it.effect("every table, index and constraint the migrations create carries the prefix", () =>
      Effect.gen(function*() {
        const admin = yield* Services.AdminService
        const keys = yield* Services.KeyService
        // a row in every table: an account, its keys, an idempotent answer
        const account = yield* admin.createAccount({ name: "Acme", balance: 10 })
        const root = yield* admin.createKey(account.id, { name: "root" })
        const principal = yield* keys.authenticate({ authorization: `Bearer ${root.key}`, clientAddress: "127.0.0.1" })
        const created = yield* keys.create(principal, { name: "ci" }, "idem-1")
        expect(yield* keys.create(principal, { name: "ci" }, "idem-1")).toEqual(created)
        expect((yield* keys.list(principal)).map((k) => k.name).sort()).toEqual(["ci", "root"])
        const objects = yield* schemaObjects
        expect(outsidePrefix(objects, prefix)).toEqual([])
        const tables = objects.filter((o) => o.kind === "table").map((o) => o.name).sort()
        expect(tables).toEqual(
          [...Object.values(SqlAccounts.tables(prefix)), SqlAccounts.migrationsTable(prefix)].sort()
        )
        expect(SqlAccounts.tables(prefix).responses).toBe("acme_mg_idempotent_responses")
        expect(SqlAccounts.migrationsTable(prefix)).toBe("acme_mg_accounts_migrations")
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM ${sql(SqlAccounts.tables(prefix).responses)}`
        expect(Number(rows[0]!.n)).toBe(1)
      }).pipe(
        Effect.provide(
          FakeOperatorViews.withAdmin(SqlAccounts.layer({ flushInterval: "1 hour" }, { prefix })).pipe(
            Layer.provideMerge(Layer.merge(database(), FakeBillingAccounts.layer))
          )
        ),
        Effect.scoped
      ))
  })
}

describe("SqlAccounts and invalid table prefixes", () => {
  it.effect("are refused with a clear PersistenceError before the database is touched", () =>
    Effect.gen(function*() {
      for (const bad of ["ACME_", "0_", "acme.mg_", "a".repeat(31), "mg\"; DROP TABLE x; --"]) {
        const error = yield* Effect.flip(Layer.build(SqlAccounts.layerStore({ prefix: bad })))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toMatch(/^accounts storage: invalid table prefix /)
        expect(error.message).toContain(JSON.stringify(bad))
        assert.instanceOf(yield* Effect.flip(SqlAccounts.makeIdempotencyStore({ prefix: bad })), PersistenceError)
        assert.instanceOf(yield* Effect.flip(SqlAccounts.migrate(bad)), PersistenceError)
        assert.instanceOf(yield* Effect.flip(SqlAccounts.migrations(bad)), Migrator.MigrationError)
      }
      expect(yield* schemaObjects).toEqual([])
    }).pipe(Effect.provide(sqlite()), Effect.scoped))
})
