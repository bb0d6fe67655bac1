import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import { assert, describe, expect, it } from "@effect/vitest"
import { Billing, isCharged } from "@mediagate/engine/Billing"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlProgram from "@mediagate/persistence/SqlProgram"
import type { RowError } from "@mediagate/persistence/SqlRows"
import * as WriteConnection from "@mediagate/persistence/WriteConnection"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import * as SqlBilling from "../src/SqlBilling.js"
import { billingSuite, Tx } from "./BillingSuite.js"
import { pgAvailable, pgNotRunning, postgres, runPostgres, sqlite, sqliteFilename } from "./databases.js"

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

/**
 * SQLite file whose charges run as the task storage's batches run them (`SqlTaskStorage` with a write connection):
 * billing's `chargeStatements` in a savepoint of a write connection's transaction, kept only when charged; a charge
 * the statements defer (an auto top-up due) made with `chargeInTransaction` in a transaction of the client.
 */
const writerBackend = {
  transactional: false,
  layer: (provider: Layer.Layer<PaymentProvider.PaymentProvider>) => {
    const charges = Layer.effect(
      Billing,
      Effect.gen(function*() {
        const billing = yield* Billing
        const writer = yield* WriteConnection.WriteConnection
        const sql = yield* SqlClient.SqlClient
        const statements = billing.chargeStatements
        if (writer === undefined || statements === undefined) return yield* Effect.dieMessage("no write path")
        const inTransaction = billing.chargeInTransaction ?? billing.charge
        const failed = (cause: SqlError | RowError) => new PersistenceError({ message: cause.message, cause })
        const charge: typeof billing.charge = (charge) =>
          Effect.flatMap(
            Clock.currentTimeMillis,
            (now) =>
              writer.transaction((tx) => tx.attempt(() => SqlProgram.runSync(statements(charge, now), tx), isCharged))
          ).pipe(
            Effect.mapError(failed),
            Effect.flatMap((outcome) =>
              Either.isRight(outcome)
                ? outcome.right === "charged"
                  ? Effect.void
                  : Effect.catchTag(
                    sql.withTransaction(inTransaction(charge)),
                    "SqlError",
                    (e) => Effect.fail(failed(e))
                  )
                : outcome.left._tag === "RowError"
                ? Effect.fail(failed(outcome.left))
                : Effect.fail(outcome.left)
            )
          )
        return { ...billing, charge }
      })
    )
    const database = Layer.unwrapScoped(
      Effect.map(
        sqliteFilename,
        (filename) => Layer.provideMerge(WriteConnection.layer(filename), SqliteClient.layer({ filename }))
      )
    )
    // charges run in transactions of their own (on the write connection): none of the client around them
    const asItIs = Layer.succeed(Tx, { run: (self) => self })
    return Layer.provideMerge(charges, Layer.merge(SqlBilling.layer(), asItIs)).pipe(
      Layer.provideMerge(Layer.merge(database, provider))
    )
  }
}

billingSuite("sqlite, charges on the write connection", writerBackend)
if (runPostgres) billingSuite("postgres", backend(postgres))

/**
 * PostgreSQL whose charges are made as the task storage's batches make them: billing's `chargeBatch`, in a
 * transaction (of its own, or a savepoint of the caller's), a refusal answered and failed here.
 */
const batchBackend = {
  transactional: true,
  layer: (provider: Layer.Layer<PaymentProvider.PaymentProvider>) => {
    const charges = Layer.effect(
      Billing,
      Effect.gen(function*() {
        const billing = yield* Billing
        const sql = yield* SqlClient.SqlClient
        const chargeBatch = billing.chargeBatch
        if (chargeBatch === undefined) return yield* Effect.dieMessage("no chargeBatch")
        const failed = (cause: SqlError) => new PersistenceError({ message: cause.message, cause })
        const inTransaction = billing.chargeInTransaction ?? billing.charge
        // a deferred charge (an auto top-up may follow it) made as the storage makes it: on its own, in a transaction
        const charge: typeof billing.charge = (charge) =>
          sql.withTransaction(Effect.flatMap(chargeBatch([charge]), ([outcome]) =>
            outcome === undefined
              ? Effect.dieMessage("no outcome")
              : Either.isLeft(outcome)
              ? Effect.fail(outcome.left)
              : outcome.right === "deferred"
              ? inTransaction(charge)
              : Effect.void)).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(failed(e))))
        return { ...billing, charge, chargeInTransaction: charge }
      })
    )
    return Layer.provideMerge(charges, Layer.merge(SqlBilling.layer(), txLayer)).pipe(
      Layer.provideMerge(Layer.merge(postgres(), provider))
    )
  }
}
if (runPostgres) billingSuite("postgres, charges in batches", batchBackend)

describe("the debited row's fast path", () => {
  const decode = Schema.decodeUnknownEither(SqlBilling.DebitedRow)
  const valid = {
    billing_mode: "prepaid",
    balance_micros: 1_800_000,
    monthly_spend_limit_micros: null,
    auto_top_up_enabled: 0,
    auto_top_up_threshold_micros: null,
    auto_top_up_amount_micros: null,
    credit_limit_micros: null,
    key_limit: null,
    key_spent: null,
    month_spent: 3_200_000,
    key_ancestors: null,
    // columns the row has and the Schema ignores
    account_id: "acct_a",
    created_at: 1_764_000_000_000
  }
  const variants: ReadonlyArray<Record<string, unknown>> = [
    {},
    { billing_mode: "postpaid", balance_micros: -5_000_000, monthly_spend_limit_micros: 100_000_000 },
    { billing_mode: "postpaid", credit_limit_micros: 25_000_000 },
    { auto_top_up_enabled: 1, auto_top_up_threshold_micros: 2_000_000, auto_top_up_amount_micros: 10_000_000 },
    { key_limit: 5_000_000, key_spent: 4_000_000, key_ancestors: "[]" },
    { key_ancestors: "[\"key_root\",\"key_mid\"]" },
    // what the Schema converts (strings and bigints of PostgreSQL, other flags): decoded by the Schema
    { balance_micros: "1800000", month_spent: 5n },
    { auto_top_up_enabled: 2 },
    // what the Schema refuses: reported by the Schema
    { billing_mode: "free" },
    { balance_micros: Number.NaN },
    { balance_micros: Infinity },
    { key_limit: "lots" },
    { credit_limit_micros: "much" },
    { key_ancestors: "not json" },
    { key_ancestors: "[1]" },
    { key_ancestors: "{}" },
    { key_ancestors: 7 },
    { auto_top_up_enabled: null },
    { month_spent: undefined }
  ]

  it("answers what the Schema decodes for every row it takes, and leaves every other row to it", () => {
    let taken = 0
    for (const variant of variants) {
      const row = { ...valid, ...variant }
      const fast = SqlBilling.debitedRowFast(row)
      const schema = decode(row)
      if (fast === undefined) {
        continue
      }
      taken++
      assert.isTrue(Either.isRight(schema), JSON.stringify(variant))
      expect(fast, JSON.stringify(variant)).toEqual(Either.getOrThrow(schema))
    }
    // the plain rows SQLite answers all take the fast path
    assert.strictEqual(taken, 6)
    for (const variant of variants.slice(6)) assert.isUndefined(SqlBilling.debitedRowFast({ ...valid, ...variant }))
    assert.isUndefined(SqlBilling.debitedRowFast(null))
  })
})

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})

const usd = 1_000_000

/** What `chargeBatch`'s tests use. */
const batchServices = Effect.all({ sql: SqlClient.SqlClient, accounts: BillingAccounts, billing: Billing })

/** A charge of `chargeBatch`'s tests (the key `key_<account>` unless given). */
const batchCharge = (accountId: string, amountMicros: number, taskId: string, keyId = `key_${accountId}`) => ({
  accountId,
  keyId,
  taskId,
  amountMicros,
  description: "vendor3-3 text-to-video"
})

/** A `chargeBatch` outcome by name: `charged`, `deferred` or the refusal's tag. */
const outcomeName = (outcome: Either.Either<string, { readonly _tag: string }>) =>
  Either.isRight(outcome) ? outcome.right : outcome.left._tag

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlBilling on ${name}`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, SqlClient.SqlClient | BillingAccounts | Billing | BillingLedger>) =>
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
        expect(rows.map((r) => r.name)).toEqual([
          "billing",
          "key_spend_ancestors",
          "charge_function",
          "credit_limit",
          "charge_batched"
        ])
      })))

    // PostgreSQL's batch of charges (SQLite's batches run on the write connection)
    if (name === "postgres") {
      it.effect("chargeBatch: charges of several accounts in one transaction, each answered", () =>
        run(Effect.gen(function*() {
          const { accounts, billing, sql } = yield* batchServices
          yield* accounts.open("acct_a", defaultSettings, 5 * usd)
          yield* accounts.open("acct_b", defaultSettings, 10 * usd)
          yield* accounts.registerKey("acct_b", "key_b", 4 * usd)
          const charge = (accountId: string, keyId: string, amountMicros: number, taskId: string) =>
            batchCharge(accountId, amountMicros, taskId, keyId)
          const outcomes = yield* sql.withTransaction(billing.chargeBatch!([
            charge("acct_b", "key_b", 3 * usd, "task_1"),
            charge("acct_a", "key_a", 3 * usd, "task_2"),
            // the key's limit: 3 of 4 spent in this batch already
            charge("acct_b", "key_b", 2 * usd, "task_3"),
            // the balance: 2 of 5 left in this batch
            charge("acct_a", "key_a", 3 * usd, "task_4"),
            charge("acct_a", "key_a", 0, "task_5"),
            charge("acct_a", "key_a", 2 * usd, "task_6"),
            charge("acct_x", "key_x", 1 * usd, "task_7")
          ]))
          expect(outcomes.map(outcomeName)).toEqual([
            "charged",
            "charged",
            "SpendLimitExceeded",
            "InsufficientBalance",
            "charged",
            "charged",
            "InsufficientBalance"
          ])
          const refused = outcomes[3]!
          assert.isTrue(
            Either.isLeft(refused) && refused.left.message.includes("the balance is 2 USD"),
            JSON.stringify(refused)
          )
          assert.strictEqual((yield* accounts.state("acct_a")).balanceMicros, 0)
          assert.strictEqual((yield* accounts.state("acct_b")).balanceMicros, 7 * usd)
          assert.strictEqual((yield* accounts.keySpend("key_b")).spentMicros, 3 * usd)
          // a refusal wrote nothing: only the charges made are in the ledger
          const charged = yield* sql<{ task_id: string }>`SELECT task_id FROM ${sql(SqlBilling.tables().ledger)}
            WHERE kind = 'charge' ORDER BY task_id`
          expect(charged.map((r) => r.task_id)).toEqual(["task_1", "task_2", "task_6"])
        })))

      it.effect("chargeBatch: a charge an auto top-up may follow is deferred, with every charge after it", () =>
        run(Effect.gen(function*() {
          const { accounts, billing, sql } = yield* batchServices
          yield* accounts.open("acct_t", {
            ...defaultSettings,
            autoTopUpEnabled: true,
            autoTopUpThresholdMicros: 2 * usd,
            autoTopUpAmountMicros: 10 * usd
          }, 6 * usd)
          yield* accounts.open("acct_u", defaultSettings, 3 * usd)
          const charge = batchCharge
          // no transaction: the statement commits on its own
          const outcomes = yield* billing.chargeBatch!([
            charge("acct_t", 2 * usd, "task_1"),
            charge("acct_u", 1 * usd, "task_2"),
            // 4 USD left: a refusal is answered and the batch goes on
            charge("acct_t", 5 * usd, "task_3"),
            // it would leave 1 USD, below the threshold: a top-up may follow it
            charge("acct_t", 3 * usd, "task_4"),
            charge("acct_u", 1 * usd, "task_5")
          ])
          expect(outcomes.map(outcomeName)).toEqual([
            "charged",
            "charged",
            "InsufficientBalance",
            "deferred",
            "deferred"
          ])
          assert.strictEqual((yield* accounts.state("acct_t")).balanceMicros, 4 * usd)
          assert.strictEqual((yield* accounts.state("acct_u")).balanceMicros, 2 * usd)
          const charged = yield* sql<{ task_id: string }>`SELECT task_id FROM ${sql(SqlBilling.tables().ledger)}
            WHERE kind = 'charge' ORDER BY task_id`
          expect(charged.map((r) => r.task_id)).toEqual(["task_1", "task_2"])
          // made on its own, the deferred charge asks for the top-up (requested of a provider that pays later)
          yield* billing.charge(charge("acct_t", 3 * usd, "task_4"))
          assert.strictEqual((yield* accounts.state("acct_t")).balanceMicros, 1 * usd)
          expect((yield* (yield* BillingLedger).topUpRequests("acct_t")).map((r) => r.status)).toEqual(["requested"])
        })))

      it.effect("chargeBatch: a batch answers and writes what its charges made one at a time would", () =>
        Effect.gen(function*() {
          // accounts of each kind, a key tree with limits at every level, a key without a spend row; charges drawn
          // from a fixed seed, passing the balances, credit limits, monthly limits and key limits along the way
          const setup = Effect.gen(function*() {
            const { accounts } = yield* batchServices
            yield* accounts.open("acct_pre", { ...defaultSettings, monthlySpendLimitMicros: 30 * usd }, 40 * usd)
            yield* accounts.open("acct_post", {
              ...defaultSettings,
              billingMode: "postpaid",
              creditLimitMicros: 12 * usd
            }, 0)
            yield* accounts.open("acct_low", defaultSettings, 3 * usd)
            yield* accounts.registerKey("acct_pre", "key_root", 25 * usd)
            yield* accounts.registerKey("acct_pre", "key_team", 12 * usd, ["key_root"])
            yield* accounts.registerKey("acct_pre", "key_dev", 6 * usd, ["key_team", "key_root"])
            yield* accounts.registerKey("acct_pre", "key_free", null, ["key_root"])
            yield* accounts.registerKey("acct_post", "key_post", 9 * usd)
          })
          const keysOf: Readonly<Record<string, ReadonlyArray<string>>> = {
            acct_pre: ["key_root", "key_team", "key_dev", "key_free", "key_unregistered"],
            acct_post: ["key_post", "key_post_new"],
            acct_low: ["key_low"],
            acct_none: ["key_none"]
          }
          let seed = 7
          const next = (n: number) => {
            seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0
            return (seed >>> 16) % n
          }
          const names = Object.keys(keysOf)
          const charges = Array.from({ length: 160 }, (_, i) => {
            const accountId = names[next(names.length)]!
            const keys = keysOf[accountId]!
            return batchCharge(
              accountId,
              next(5) === 0 ? 0 : (1 + next(4)) * usd / 2,
              `task_${i}`,
              keys[next(keys.length)]
            )
          })
          /** Every row billing wrote, in a comparable order. */
          const state = Effect.gen(function*() {
            const { sql } = yield* batchServices
            const t = SqlBilling.tables()
            return {
              accounts: yield* sql`SELECT account_id, balance_micros FROM ${sql(t.accounts)} ORDER BY account_id`,
              keys: yield* sql`SELECT key_id, account_id, spend_limit_micros, spent_micros FROM ${sql(t.keySpend)}
                ORDER BY key_id`,
              months: yield* sql`SELECT account_id, month, spent_micros FROM ${sql(t.monthSpend)} ORDER BY account_id`,
              ledger: yield* sql`SELECT account_id, key_id, task_id, amount_micros FROM ${sql(t.ledger)}
                WHERE kind = 'charge' ORDER BY id`
            }
          })
          const answer = (outcome: Either.Either<string, { readonly _tag: string; readonly message: string }>) =>
            Either.isRight(outcome) ? outcome.right : `${outcome.left._tag}: ${outcome.left.message}`
          const together = yield* run(Effect.gen(function*() {
            yield* setup
            const { billing } = yield* batchServices
            const outcomes = yield* billing.chargeBatch!(charges)
            return { outcomes: outcomes.map(answer), state: yield* state }
          }))
          const alone = yield* run(Effect.gen(function*() {
            yield* setup
            const { billing } = yield* batchServices
            const outcomes = yield* Effect.forEach(
              charges,
              (charge) => Effect.map(billing.chargeBatch!([charge]), ([outcome]) => answer(outcome!))
            )
            return { outcomes, state: yield* state }
          }))
          expect(together).toEqual(alone)
          // the draw reaches every rule: the balance, the credit limit, a key's limit, the monthly limit
          const refusals = together.outcomes.filter((outcome) => outcome !== "charged")
          const reached = (pattern: RegExp) => refusals.some((outcome) => pattern.test(outcome))
          expect({
            charged: together.outcomes.includes("charged"),
            balance: reached(/^InsufficientBalance: (?!.*credit limit)/),
            creditLimit: reached(/^InsufficientBalance: .*credit limit/),
            keyLimit: reached(/^SpendLimitExceeded: (?!Account monthly)/),
            monthlyLimit: reached(/^SpendLimitExceeded: Account monthly/)
          }).toEqual({ charged: true, balance: true, creditLimit: true, keyLimit: true, monthlyLimit: true })
        }))

      it.effect("chargeBatch: a refused charge whose row cannot be read is deferred; the others stand", () =>
        run(Effect.gen(function*() {
          const { accounts, billing, sql } = yield* batchServices
          const table = SqlBilling.tables().accounts
          yield* accounts.open("acct_a", defaultSettings, 5 * usd)
          yield* accounts.open("acct_b", defaultSettings, 5 * usd)
          // a mode the CHECK constraint would refuse, written behind billing's back: the function funds nothing
          yield* sql.unsafe(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_billing_mode_check`)
          yield* sql`UPDATE ${sql(table)} SET billing_mode = 'bogus' WHERE account_id = 'acct_b'`
          // no transaction: the statement has committed once it answers, so nothing after it may fail
          const outcomes = yield* billing.chargeBatch!([
            batchCharge("acct_a", 1 * usd, "task_1"),
            batchCharge("acct_b", 1 * usd, "task_2"),
            batchCharge("acct_a", 1 * usd, "task_3")
          ])
          expect(outcomes.map(outcomeName)).toEqual(["charged", "deferred", "charged"])
          assert.strictEqual((yield* accounts.state("acct_a")).balanceMicros, 3 * usd)
          const charged = yield* sql<{ task_id: string }>`SELECT task_id FROM ${sql(SqlBilling.tables().ledger)}
            WHERE kind = 'charge' ORDER BY task_id`
          expect(charged.map((r) => r.task_id)).toEqual(["task_1", "task_3"])
          // made alone, the deferred charge reports the row and charges nothing
          const error = yield* Effect.flip(billing.charge(batchCharge("acct_b", 1 * usd, "task_2")))
          assert.instanceOf(error, PersistenceError)
          expect(error.message).toContain(`${table}.billing_mode`)
        })))

      it.effect("chargeBatch: what goes with the charges made runs in the same statement, and fails with it", () =>
        run(Effect.gen(function*() {
          const { accounts, billing, sql } = yield* batchServices
          yield* accounts.open("acct_a", defaultSettings, 5 * usd)
          yield* sql`CREATE TABLE made_tasks (position INTEGER NOT NULL CHECK (position < 3))`
          const charge = (amountMicros: number, taskId: string) => batchCharge("acct_a", amountMicros, taskId)
          const alongside = (made: Statement.Fragment) =>
            sql`INSERT INTO made_tasks (position) SELECT p FROM (${made}) AS m(p)`
          // position 3 breaks the CHECK: the statement fails and nothing of it is written
          const failure = yield* Effect.flip(billing.chargeBatch!(
            [charge(2 * usd, "task_1"), charge(4 * usd, "task_2"), charge(0, "task_3"), charge(1 * usd, "task_4")],
            alongside
          ))
          assert.instanceOf(failure, PersistenceError)
          const positions = yield* sql<{ position: number }>`SELECT position FROM made_tasks ORDER BY position`
          expect(positions).toEqual([])
          assert.strictEqual((yield* accounts.state("acct_a")).balanceMicros, 5 * usd)
          yield* sql`ALTER TABLE made_tasks DROP CONSTRAINT made_tasks_position_check`
          const again = yield* billing.chargeBatch!(
            [charge(2 * usd, "task_1"), charge(4 * usd, "task_2"), charge(0, "task_3"), charge(1 * usd, "task_4")],
            alongside
          )
          expect(again.map(outcomeName)).toEqual([
            "charged",
            "InsufficientBalance",
            "charged",
            "charged"
          ])
          const written = yield* sql<{ position: number }>`SELECT position FROM made_tasks ORDER BY position`
          expect(written.map((r) => r.position)).toEqual([0, 2, 3])
          assert.strictEqual((yield* accounts.state("acct_a")).balanceMicros, 2 * usd)
        })))
    }

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
        expect(charge).toMatchObject({
          _tag: "PersistenceError",
          message: expect.stringMatching(/^billing: charge failed: /)
        })
      })))
  })
}
