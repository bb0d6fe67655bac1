/**
 * SQL billing under the engine's SQL task storage, on one database: the storage charges inside the transaction
 * that stores the task and refunds inside the one that ends it.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import type { NewTask } from "@mediagate/engine/TaskRecord"
import { TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Ids from "@mediagate/persistence/Ids"
import * as WriteConnection from "@mediagate/persistence/WriteConnection"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import * as SqlBilling from "../src/SqlBilling.js"
import { pgClient, pgSchema, postgres, runPostgres, sqlite, sqliteFilename } from "./databases.js"

const now = Date.UTC(2025, 5, 1)

const newTask = (accountId: string, chargedMicros: number, n: number): NewTask =>
  Fixtures.newTask({ id: Ids.taskId(now + n), accountId, chargedMicros, createdAt: now })

/** Billing settings with auto top-up: 10 USD when a charge leaves less than 5 USD. */
const topUpAt5Usd = {
  ...defaultSettings,
  autoTopUpEnabled: true,
  autoTopUpThresholdMicros: 5_000_000,
  autoTopUpAmountMicros: 10_000_000
}

const accept = (task: NewTask) =>
  Effect.flatMap(TaskStorage, (storage) =>
    storage.accept({
      task,
      charge: {
        accountId: task.accountId,
        keyId: task.keyId,
        taskId: task.id,
        amountMicros: task.chargedMicros,
        description: `${task.model} ${task.operation}`
      },
      idempotency: undefined
    }))

/** A SQLite file with its write connection: the storage's batches of charged accepts run on it. */
const sqliteWithWriter = () =>
  Layer.unwrapScoped(
    Effect.map(sqliteFilename, (filename) =>
      Layer.provideMerge(WriteConnection.layer(filename), SqliteClient.layer({ filename })))
  )

const databases: ReadonlyArray<
  readonly [string, () => Layer.Layer<SqlClient.SqlClient | WriteConnection.WriteConnection, unknown>]
> = [
  ["sqlite", () => Layer.merge(sqlite(), WriteConnection.layerNone)],
  ["a sqlite file, charged accepts on its write connection", sqliteWithWriter],
  ...(runPostgres ? [["postgres", () => Layer.merge(postgres(), WriteConnection.layerNone)] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlBilling under SqlTaskStorage on ${name}`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, TaskStorage | BillingAccounts | BillingLedger>) => {
      const billing = Layer.provideMerge(SqlBilling.layer(), PaymentProvider.layerNone)
      const storage = Layer.unwrapEffect(
        Effect.map(WriteConnection.WriteConnection, (writer) => SqlTaskStorage.layer({ time: "clock", writer }))
      )
      return Effect.zipRight(TestClock.setTime(now), body).pipe(
        Effect.provide(Layer.provideMerge(storage, billing).pipe(Layer.provide(database()))),
        Effect.scoped
      )
    }

    it.effect("a refused charge stores no task; an accepted one is charged and refunded on cancel", () =>
      run(Effect.gen(function*() {
        const storage = yield* TaskStorage
        const accounts = yield* BillingAccounts
        const ledger = yield* BillingLedger
        yield* accounts.open("acct_a", defaultSettings, 5_000_000)
        const poor = newTask("acct_a", 6_000_000, 1)
        expect(yield* Effect.flip(accept(poor))).toMatchObject({ _tag: "InsufficientBalance" })
        assert.isTrue(Option.isNone(yield* storage.getById(poor.id)))
        const unopened = newTask("acct_none", 1_000_000, 2)
        expect(yield* Effect.flip(accept(unopened))).toMatchObject({ _tag: "InsufficientBalance" })
        assert.isTrue(Option.isNone(yield* storage.getById(unopened.id)))

        const task = newTask("acct_a", 3_200_000, 3)
        const created = yield* accept(task)
        assert.strictEqual(created._tag, "Created")
        assert.strictEqual((yield* accounts.state("acct_a")).balanceMicros, 1_800_000)
        const cancelled = yield* storage.cancel("acct_a", task.id)
        assert.strictEqual(cancelled._tag, "Cancelled")
        const state = yield* accounts.state("acct_a")
        assert.strictEqual(state.balanceMicros, 5_000_000)
        assert.strictEqual(state.monthToDateMicros, 0)
        expect((yield* ledger.entries("acct_a")).map((e) => [e.kind, e.amountMicros, e.taskId])).toEqual([
          ["top_up", 5_000_000, null],
          ["charge", -3_200_000, task.id],
          ["refund", 3_200_000, task.id]
        ])
      })))

    it.effect(
      "200 concurrent accepts against a balance that covers 50: exactly 50 tasks, never overdrawn",
      () =>
        run(Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accounts = yield* BillingAccounts
          const ledger = yield* BillingLedger
          yield* accounts.open("acct_c", defaultSettings, 50_000_000)
          const results = yield* Effect.forEach(
            Array.from({ length: 200 }, (_, i) => newTask("acct_c", 1_000_000, 100 + i)),
            (task) => Effect.either(accept(task)),
            { concurrency: "unbounded" }
          )
          const accepted = results.filter((r) => r._tag === "Right")
          const refused = results.filter((r) => r._tag === "Left")
          expect(accepted).toHaveLength(50)
          expect(refused.every((r) => r._tag === "Left" && r.left._tag === "InsufficientBalance")).toBe(true)
          expect((yield* storage.list("acct_c", { limit: 1 })).total).toBe(50)
          const state = yield* accounts.state("acct_c")
          expect(state.balanceMicros).toBe(0)
          const entries = yield* ledger.entries("acct_c")
          expect(entries.reduce((sum, e) => sum + e.amountMicros, 0)).toBe(state.balanceMicros)
          // the running balance never went below zero
          let running = 0
          for (const entry of entries) {
            running += entry.amountMicros
            expect(running).toBeGreaterThanOrEqual(0)
          }
        })),
      { timeout: 60_000 }
    )

    it.effect(
      "concurrent accepts of two accounts, one running out: a refusal stores nothing, the rest are charged",
      () =>
        run(Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accounts = yield* BillingAccounts
          const ledger = yield* BillingLedger
          yield* accounts.open("acct_x", defaultSettings, 3_000_000)
          yield* accounts.open("acct_y", defaultSettings, 100_000_000)
          // interleaved, so that the accepts batched together mix both accounts and refusals sit between successes
          const tasks = Array.from({ length: 40 }, (_, i) => ({
            ...newTask(i % 2 === 0 ? "acct_x" : "acct_y", 1_000_000, 300 + i),
            keyId: i % 2 === 0 ? "key_x" : "key_y"
          }))
          const results = yield* Effect.forEach(tasks, (task) => Effect.either(accept(task)), {
            concurrency: "unbounded"
          })
          const stored = yield* Effect.forEach(tasks, (task) => storage.getById(task.id))
          results.forEach((result, i) => expect(Option.isSome(stored[i]!)).toBe(result._tag === "Right"))
          const acceptedOf = (accountId: string) =>
            results.filter((r, i) => r._tag === "Right" && tasks[i]!.accountId === accountId).length
          expect(acceptedOf("acct_x")).toBe(3)
          expect(acceptedOf("acct_y")).toBe(20)
          const refusals = results.flatMap((r) => r._tag === "Left" ? [r.left._tag] : [])
          expect(new Set(refusals)).toEqual(new Set(["InsufficientBalance"]))
          for (const [accountId, opening] of [["acct_x", 3_000_000], ["acct_y", 100_000_000]] as const) {
            const entries = yield* ledger.entries(accountId)
            const charges = entries.filter((e) => e.kind === "charge")
            expect(charges).toHaveLength(acceptedOf(accountId))
            expect((yield* accounts.state(accountId)).balanceMicros).toBe(opening - 1_000_000 * charges.length)
            expect((yield* storage.list(accountId, { limit: 1 })).total).toBe(charges.length)
          }
        })),
      { timeout: 60_000 }
    )

    it.effect(
      "completion, expiry and cancel racing on the same tasks refund each at most once",
      () =>
        run(Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accounts = yield* BillingAccounts
          const ledger = yield* BillingLedger
          yield* accounts.open("acct_r", defaultSettings, 100_000_000)
          const tasks = Array.from({ length: 20 }, (_, i) => newTask("acct_r", 1_000_000, 500 + i))
          yield* Effect.forEach(tasks, accept, { discard: true })
          const claimed = yield* storage.claim("w1", 20, 60_000)
          expect(claimed).toHaveLength(20)
          yield* Effect.forEach(claimed, (task) =>
            Effect.all([
              Effect.either(
                storage.finish(task.id, task.fence, { _tag: "Failed", error: { code: "PROVIDER_ERROR", message: "x" } })
              ),
              Effect.either(storage.finish(task.id, task.fence, { _tag: "Expired" })),
              Effect.either(storage.cancel("acct_r", task.id)),
              Effect.either(storage.finish(task.id, task.fence, { _tag: "Succeeded", result: [] }))
            ], { concurrency: "unbounded" }), { concurrency: "unbounded", discard: true })
          const entries = yield* ledger.entries("acct_r")
          for (const task of tasks) {
            const refunds = entries.filter((e) => e.kind === "refund" && e.taskId === task.id)
            const final = Option.getOrThrow(yield* storage.getById(task.id))
            expect(["failed", "expired", "cancelled", "succeeded"]).toContain(final.status)
            expect(refunds.length).toBe(final.status === "succeeded" ? 0 : 1)
          }
          const state = yield* accounts.state("acct_r")
          expect(entries.reduce((sum, e) => sum + e.amountMicros, 0)).toBe(state.balanceMicros)
        })),
      { timeout: 60_000 }
    )
  })
}

describe("SqlTaskStorage's charged accepts on a SQLite file's write connection", () => {
  it.live("run there, one transaction per batch; a charge after which an auto top-up is due goes through the client", () => {
    const transactions = { count: 0 }
    const counted = Layer.unwrapScoped(Effect.map(sqliteFilename, (filename) => {
      const writer = Layer.effect(
        WriteConnection.WriteConnection,
        Effect.map(
          WriteConnection.WriteConnection,
          (inner): WriteConnection.Writer | undefined =>
            inner === undefined ? undefined : {
              transaction: (body) =>
                Effect.zipRight(
                  Effect.sync(() => {
                    transactions.count++
                  }),
                  inner.transaction(body)
                )
            }
        )
      ).pipe(Layer.provide(WriteConnection.layer(filename)))
      return Layer.provideMerge(writer, SqliteClient.layer({ filename }))
    }))
    const storage = Layer.unwrapEffect(
      Effect.map(WriteConnection.WriteConnection, (writer) => SqlTaskStorage.layer({ time: "clock", writer }))
    )
    const billing = Layer.provideMerge(SqlBilling.layer(), PaymentProvider.layerSimulated)
    return Effect.gen(function*() {
      const storage = yield* TaskStorage
      const accounts = yield* BillingAccounts
      const ledger = yield* BillingLedger
      yield* accounts.open("acct_w", defaultSettings, 100_000_000)
      yield* accounts.open("acct_t", topUpAt5Usd, 8_000_000)
      const tasks = Array.from({ length: 20 }, (_, i) => newTask("acct_w", 1_000_000, 500 + i))
      const results = yield* Effect.forEach(tasks, (task) => Effect.either(accept(task)), { concurrency: "unbounded" })
      expect(results.every((r) => r._tag === "Right")).toBe(true)
      expect(transactions.count).toBeGreaterThan(0)
      expect(transactions.count).toBeLessThanOrEqual(20)
      expect((yield* accounts.state("acct_w")).balanceMicros).toBe(80_000_000)
      expect((yield* accounts.keySpend("key_a")).spentMicros).toBe(20_000_000)
      expect((yield* ledger.entries("acct_w")).filter((e) => e.kind === "charge")).toHaveLength(20)
      // 8 - 4 = 4 USD, under the 5 USD threshold: the charge is made with the top-up, through the client
      const topped = newTask("acct_t", 4_000_000, 600)
      yield* accept(topped)
      assert.isTrue(Option.isSome(yield* storage.getById(topped.id)))
      const state = yield* accounts.state("acct_t")
      expect(state.balanceMicros).toBe(14_000_000)
      expect((yield* ledger.entries("acct_t")).map((e) => [e.kind, e.amountMicros])).toEqual(
        expect.arrayContaining([["charge", -4_000_000], ["top_up", 10_000_000]])
      )
      // a refusal on the write connection stores nothing
      const refused = newTask("acct_t", 50_000_000, 601)
      expect(yield* Effect.flip(accept(refused))).toMatchObject({ _tag: "InsufficientBalance" })
      assert.isTrue(Option.isNone(yield* storage.getById(refused.id)))
      expect((yield* accounts.state("acct_t")).balanceMicros).toBe(14_000_000)
    }).pipe(
      Effect.provide(Layer.provideMerge(storage, billing).pipe(Layer.provideMerge(counted))),
      Effect.scoped
    )
  })
})

/** A storage with SQL billing on a client of its own on `schema` (one process of several on one database). */
const pgInstance = (
  schema: string,
  provider: Layer.Layer<PaymentProvider.PaymentProvider> = PaymentProvider.layerNone
) =>
  Layer.build(
    Layer.provideMerge(SqlTaskStorage.layer({ time: "clock" }), Layer.provideMerge(SqlBilling.layer(), provider)).pipe(
      Layer.provide(pgClient(schema))
    )
  )

/** Runs `body` on one such instance, on a fresh schema. */
const onPg =
  (provider?: Layer.Layer<PaymentProvider.PaymentProvider>) =>
  <A, E>(body: Effect.Effect<A, E, TaskStorage | BillingAccounts | BillingLedger>) =>
    Effect.flatMap(pgSchema, (schema) => pgInstance(schema, provider)).pipe(
      Effect.flatMap((context) => Effect.provide(body, context))
    )

describe.skipIf(!runPostgres)("SqlTaskStorage's charged accepts on PostgreSQL (one statement per batch)", () => {
  it.scopedLive(
    "a charge an auto top-up may follow is made on its own, with its top-up; the rest in batches",
    () =>
      Effect.gen(function*() {
        const accounts = yield* BillingAccounts
        const ledger = yield* BillingLedger
        yield* accounts.open("acct_t", topUpAt5Usd, 8_000_000)
        const tasks = Array.from({ length: 12 }, (_, i) => newTask("acct_t", 1_000_000, 700 + i))
        const results = yield* Effect.forEach(tasks, (task) => Effect.either(accept(task)), {
          concurrency: "unbounded"
        })
        expect(results.every((r) => r._tag === "Right")).toBe(true)
        // 8 - 4 = 4 USD is under the threshold: that charge is made with the 10 USD top-up, once; 8 - 12 + 10 = 6
        expect((yield* accounts.state("acct_t")).balanceMicros).toBe(6_000_000)
        const entries = yield* ledger.entries("acct_t")
        expect(entries.filter((e) => e.kind === "charge")).toHaveLength(12)
        expect(entries.filter((e) => e.kind === "top_up").map((e) => e.amountMicros)).toEqual([8_000_000, 10_000_000])
        expect((yield* ledger.topUpRequests("acct_t")).map((r) => r.status)).toEqual(["credited"])
        expect((yield* (yield* TaskStorage).list("acct_t", { limit: 1 })).total).toBe(12)
      }).pipe(onPg(PaymentProvider.layerSimulated)),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a batch whose statement fails (a duplicate task id) runs each accept alone: one charge per task",
    () =>
      Effect.gen(function*() {
        const accounts = yield* BillingAccounts
        const ledger = yield* BillingLedger
        yield* accounts.open("acct_d", defaultSettings, 100_000_000)
        const tasks = Array.from({ length: 10 }, (_, i) => newTask("acct_d", 1_000_000, 800 + i))
        // the same task accepted twice, at once
        const results = yield* Effect.forEach([...tasks, tasks[3]!], (task) => Effect.either(accept(task)), {
          concurrency: "unbounded"
        })
        expect(results.filter((r) => r._tag === "Right")).toHaveLength(10)
        expect(results.filter((r) => r._tag === "Left").map((r) => r._tag === "Left" && r.left._tag)).toEqual([
          "PersistenceError"
        ])
        expect((yield* accounts.state("acct_d")).balanceMicros).toBe(90_000_000)
        expect((yield* ledger.entries("acct_d")).filter((e) => e.kind === "charge")).toHaveLength(10)
        expect((yield* (yield* TaskStorage).list("acct_d", { limit: 1 })).total).toBe(10)
      }).pipe(onPg()),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a charged accept in one instance wakes the workers of another (pg_notify in the batch's statement)",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const one = yield* pgInstance(schema)
        const other = yield* pgInstance(schema)
        yield* Effect.provide(
          BillingAccounts.pipe(Effect.flatMap((accounts) => accounts.open("acct_n", defaultSettings, 100_000_000))),
          one
        )
        const woke = yield* Context.get(other, TaskStorage).wakeups.pipe(Stream.take(1), Stream.runDrain, Effect.fork)
        // LISTEN starts asynchronously: accept until the wakeup arrives
        let n = 0
        const accepting = Effect.forever(
          Effect.suspend(() => accept(newTask("acct_n", 1_000_000, 900 + n++))).pipe(
            Effect.provide(one),
            Effect.zipRight(Effect.sleep("150 millis"))
          )
        )
        yield* Fiber.join(woke).pipe(
          Effect.race(accepting),
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "no wakeup" })
        )
        expect(n).toBeGreaterThan(0)
      }),
    { timeout: 20_000 }
  )
})
