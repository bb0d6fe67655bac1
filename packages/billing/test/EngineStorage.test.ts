/**
 * SQL billing under the engine's SQL task storage, on one database: the storage charges inside the transaction
 * that stores the task and refunds inside the one that ends it.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import type { NewTask } from "@mediagate/engine/TaskRecord"
import { TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Ids from "@mediagate/persistence/Ids"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import * as SqlBilling from "../src/SqlBilling.js"
import { postgres, runPostgres, sqlite } from "./databases.js"

const now = Date.UTC(2025, 5, 1)

const newTask = (accountId: string, chargedMicros: number, n: number): NewTask => ({
  id: Ids.taskId(now + n),
  accountId,
  keyId: "key_a",
  environment: "live",
  endpoint: "vendor3/text-to-video",
  provider: "vendor3",
  operation: "text-to-video",
  mediaType: "video",
  model: "vendor3-3",
  input: { prompt: "a cat" },
  metadata: {},
  webhookUrl: null,
  originalTaskId: null,
  chargedMicros,
  estimatedSeconds: 60,
  createdAt: now,
  deadlineAt: now + 3_600_000
})

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

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlBilling under SqlTaskStorage on ${name}`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, TaskStorage | BillingAccounts | BillingLedger>) => {
      const billing = Layer.provideMerge(SqlBilling.layer(), PaymentProvider.layerNone)
      const storage = SqlTaskStorage.layer({ time: "clock" })
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

    it.effect("200 concurrent accepts against a balance that covers 50: exactly 50 tasks, never overdrawn", () =>
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
      })), { timeout: 60_000 })

    it.effect("concurrent accepts of two accounts, one running out: a refusal stores nothing, the rest are charged", () =>
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
      })), { timeout: 60_000 })

    it.effect("completion, expiry and cancel racing on the same tasks refund each at most once", () =>
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
            Effect.either(storage.finish(task.id, task.fence, { _tag: "Failed", error: { code: "PROVIDER_ERROR", message: "x" } })),
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
      })), { timeout: 60_000 })
  })
}
