import { assert, describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Billing } from "@mediagate/engine/Billing"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import * as SqlBilling from "../src/SqlBilling.js"
import { billingSuite, Tx } from "./BillingSuite.js"
import { pgAvailable, pgNotRunning, postgres, runPostgres, sqlite } from "./databases.js"

if (!runPostgres) console.warn(`${pgNotRunning}: its tests are skipped`)

const txLayer = Layer.effect(
  Tx,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    run: <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> => sql.withTransaction(self)
  }))
)

const backend = (database: () => Layer.Layer<SqlClient.SqlClient, unknown>) => ({
  transactional: true,
  layer: (provider: Layer.Layer<PaymentProvider.PaymentProvider>) =>
    Layer.merge(SqlBilling.layer(), txLayer).pipe(Layer.provide(Layer.merge(database(), provider)))
})

billingSuite("sqlite", backend(sqlite))
if (runPostgres) billingSuite("postgres", backend(postgres))

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlBilling on ${name}`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, SqlClient.SqlClient | BillingAccounts | Billing>) =>
      body.pipe(
        Effect.provide(
          Layer.provideMerge(SqlBilling.layer(), Layer.merge(database(), PaymentProvider.layerNone))
        ),
        Effect.scoped
      )

    it.effect("migrates once, into its own migrations table", () =>
      run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // a second build on the same database runs no migration again
        const again = yield* SqlBilling.migrate()
        expect(again).toEqual([])
        const rows = yield* sql<{ name: string }>`SELECT name FROM ${sql(SqlBilling.migrationsTable())}`
        expect(rows.map((r) => r.name)).toEqual(["billing", "key_spend_ancestors"])
      })))

    it.effect("the ledger is append-only", () =>
      run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const ledger = sql(SqlBilling.tables().ledger)
        yield* (yield* BillingAccounts).open("acct_a", defaultSettings, 5_000_000)
        const update = yield* Effect.exit(sql`UPDATE ${ledger} SET amount_micros = 0`)
        const remove = yield* Effect.exit(sql`DELETE FROM ${ledger}`)
        assert.isTrue(update._tag === "Failure" && remove._tag === "Failure")
        const rows = yield* sql<{ amount_micros: unknown }>`SELECT amount_micros FROM ${ledger}`
        expect(rows.map((r) => Number(r.amount_micros))).toEqual([5_000_000])
      })))

    it.effect("a corrupt row is a PersistenceError naming its table and column, not a defect", () =>
      run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const accounts = yield* BillingAccounts
        const table = SqlBilling.tables().accounts
        yield* accounts.open("acct_a", defaultSettings, 5_000_000)
        // a value the CHECK constraint would refuse, written behind the store's back
        yield* sql.onDialectOrElse({
          pg: () => sql.unsafe(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_billing_mode_check`),
          orElse: () => sql.unsafe("PRAGMA ignore_check_constraints = ON")
        })
        yield* sql`UPDATE ${sql(table)} SET billing_mode = 'bogus' WHERE account_id = 'acct_a'`
        const error = yield* Effect.flip(accounts.state("acct_a"))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toBe(
          `billing: state failed: ${table}.billing_mode: Expected "prepaid" | "postpaid", actual "bogus"`
        )
        expect(error.cause).toMatchObject({ _tag: "RowError", table, column: "billing_mode" })
        // the same row read under a lock (a charge) fails the same way, and charges nothing
        const billing = yield* Billing
        const charge = yield* Effect.flip(
          billing.charge({ accountId: "acct_a", keyId: "k", taskId: "t", amountMicros: 1, description: "x" })
        )
        expect(charge).toMatchObject({ _tag: "PersistenceError", message: expect.stringMatching(/^billing: charge failed: /) })
      })))
  })
}
