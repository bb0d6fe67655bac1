/**
 * The table prefix of SQL billing: the conformance suite under a custom prefix, every object the migrations create
 * (tables, indexes, sequences, the ledger's triggers and, on PostgreSQL, their function) named with it, the ledger
 * still append-only under the prefix, and invalid prefixes refused before the database is touched.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { assert, describe, expect, it } from "@effect/vitest"
import { Billing } from "@mediagate/engine/Billing"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import * as SqlBilling from "../src/SqlBilling.js"
import { billingSuite, Tx } from "./BillingSuite.js"
import { outsidePrefix, postgres, runPostgres, schemaObjects, sqlite } from "./databases.js"

const prefix = "acme_mg_"

type Database = () => Layer.Layer<SqlClient.SqlClient, unknown>

const databases: ReadonlyArray<readonly [string, Database]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

const txLayer = Layer.effect(
  Tx,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    run: <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> => sql.withTransaction(self)
  }))
)

for (const [name, database] of databases) {
  billingSuite(`${name}, prefix ${prefix}`, {
    transactional: true,
    layer: (provider) =>
      Layer.merge(SqlBilling.layer({ prefix }), txLayer).pipe(Layer.provide(Layer.merge(database(), provider)))
  })
}

for (const [name, database] of databases) {
  describe(`SqlBilling with the prefix ${prefix} on ${name}`, () => {
    const run = <A, E>(
      body: Effect.Effect<A, E, SqlClient.SqlClient | Billing | BillingAccounts | BillingLedger | Scope.Scope>
    ) =>
      body.pipe(
        Effect.provide(
          Layer.provideMerge(SqlBilling.layer({ prefix }), Layer.merge(database(), PaymentProvider.layerSimulated))
        ),
        Effect.scoped
      )

    it.effect("every table, index, sequence, trigger and function the migrations create carries the prefix", () =>
      run(Effect.gen(function*() {
        const accounts = yield* BillingAccounts
        const ledger = yield* BillingLedger
        // a row in every table: the account, its ledger, a key's and the month's spend, an auto top-up request
        yield* accounts.open("acct_a", {
          ...defaultSettings,
          autoTopUpEnabled: true,
          autoTopUpThresholdMicros: 900_000,
          autoTopUpAmountMicros: 1_000_000
        }, 1_000_000)
        yield* accounts.registerKey("acct_a", "key_a", 5_000_000)
        yield* (yield* Billing).charge({
          accountId: "acct_a",
          keyId: "key_a",
          taskId: "task_a",
          amountMicros: 200_000,
          description: "a task"
        })
        expect((yield* ledger.entries("acct_a")).map((e) => e.kind)).toEqual(["top_up", "charge", "top_up"])
        expect((yield* ledger.topUpRequests("acct_a")).map((r) => r.status)).toEqual(["credited"])
        expect(yield* accounts.keySpend("key_a")).toMatchObject({ spentMicros: 200_000 })
        expect((yield* accounts.state("acct_a")).monthToDateMicros).toBe(200_000)
        const objects = yield* schemaObjects
        expect(outsidePrefix(objects, prefix)).toEqual([])
        const tables = objects.filter((o) => o.kind === "table").map((o) => o.name).sort()
        expect(tables).toEqual([...Object.values(SqlBilling.tables(prefix)), SqlBilling.migrationsTable(prefix)].sort())
        expect(SqlBilling.migrationsTable(prefix)).toBe("acme_mg_billing_migrations")
        const triggers = objects.filter((o) => o.kind === "trigger")
        expect(triggers.length).toBeGreaterThan(0)
        for (const trigger of triggers) expect(trigger.table).toBe("acme_mg_billing_ledger")
        const sql = yield* SqlClient.SqlClient
        if (sql.onDialectOrElse({ pg: () => true, orElse: () => false })) {
          expect(objects.filter((o) => o.kind === "function").map((o) => o.name).sort()).toEqual([
            "acme_mg_billing_charge",
            "acme_mg_billing_ledger_append_only"
          ])
          expect(SqlBilling.chargeFunction(prefix)).toBe("acme_mg_billing_charge")
          expect(objects.filter((o) => o.kind === "sequence").map((o) => o.name).sort()).toEqual([
            "acme_mg_billing_ledger_id_seq",
            "acme_mg_billing_top_up_requests_id_seq"
          ])
        }
      })))

    it.effect("the ledger stays append-only under the prefix", () =>
      run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const ledger = sql(SqlBilling.tables(prefix).ledger)
        yield* (yield* BillingAccounts).open("acct_a", defaultSettings, 5_000_000)
        const update = yield* Effect.flip(sql`UPDATE ${ledger} SET amount_micros = 0`)
        const remove = yield* Effect.flip(sql`DELETE FROM ${ledger}`)
        for (const error of [update, remove]) {
          expect(String(error.cause)).toContain("acme_mg_billing_ledger is append-only")
        }
        const rows = yield* sql<{ amount_micros: unknown }>`SELECT amount_micros FROM ${ledger}`
        expect(rows.map((r) => Number(r.amount_micros))).toEqual([5_000_000])
      })))

    it.effect("billing under another prefix in the same database is another billing", () =>
      run(Effect.gen(function*() {
        yield* (yield* BillingAccounts).open("acct_a", defaultSettings, 5_000_000)
        const plain = yield* Layer.build(SqlBilling.layer().pipe(Layer.provide(PaymentProvider.layerNone)))
        const missing = yield* Effect.flip(
          Effect.flatMap(BillingAccounts, (accounts) => accounts.state("acct_a")).pipe(Effect.provide(plain))
        )
        expect(missing._tag).toBe("AccountNotFound")
        expect((yield* (yield* BillingAccounts).state("acct_a")).balanceMicros).toBe(5_000_000)
      })))
  })
}

describe("SqlBilling and invalid table prefixes", () => {
  it.effect("are refused with a clear PersistenceError before the database is touched", () =>
    Effect.gen(function*() {
      for (const bad of ["Acme", "9_", "acme-mg_", "a".repeat(31), "x'; DROP TABLE y; --"]) {
        const error = yield* Effect.flip(
          Layer.build(SqlBilling.layer({ prefix: bad }).pipe(Layer.provide(PaymentProvider.layerNone)))
        )
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toMatch(/^billing: invalid table prefix /)
        expect(error.message).toContain(JSON.stringify(bad))
        assert.instanceOf(yield* Effect.flip(SqlBilling.make({ prefix: bad })), PersistenceError)
        assert.instanceOf(yield* Effect.flip(SqlBilling.migrate(bad)), PersistenceError)
        assert.instanceOf(yield* Effect.flip(SqlBilling.migrations(bad)), Migrator.MigrationError)
      }
      expect(yield* schemaObjects).toEqual([])
    }).pipe(Effect.provide(Layer.merge(sqlite(), PaymentProvider.layerNone)), Effect.scoped))
})
