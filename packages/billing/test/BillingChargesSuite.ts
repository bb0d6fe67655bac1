/**
 * Billing's conformance cases for charges and the reads of their results: the ledger entries, balance, key spend
 * and month spend a charge and a refund write, the ledger's pages, the balance in USD, and the charges refused for
 * want of a balance or of an account.
 */
import { assert, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import type { Principal } from "@mediagate/contract/Security"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { BillingAccounts } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import {
  acct,
  type Backend,
  charge,
  consistent,
  key,
  open,
  principal,
  refund,
  runner,
  usd
} from "./BillingSuiteSupport.js"

/** Registers the cases of charges and their reads for one backend. */
export const billingChargesSuite = (backend: Backend) => {
  const run = runner(backend)

  it.effect("charges and refunds: ledger entries, balance, key spend and month spend", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      yield* open(10 * usd)
      yield* TestClock.setTime(Date.UTC(2025, 2, 15, 12))
      yield* charge("task_1", 3_200_000)
      yield* charge("task_2", 1_250_000)
      // a second charge of the same task (extra charges of a step)
      yield* charge("task_1", 500_000)
      let current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 10 * usd - 4_950_000)
      assert.strictEqual(current.monthToDateMicros, 4_950_000)
      assert.strictEqual((yield* accounts.keySpend(key)).spentMicros, 4_950_000)
      yield* refund("task_1", 3_700_000)
      current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 10 * usd - 1_250_000)
      assert.strictEqual(current.monthToDateMicros, 1_250_000)
      assert.strictEqual((yield* accounts.keySpend(key)).spentMicros, 1_250_000)
      const entries = yield* (yield* BillingLedger).entries(acct)
      expect(entries.map((e) => [e.kind, e.amountMicros, e.taskId])).toEqual([
        ["top_up", 10 * usd, null],
        ["charge", -3_200_000, "task_1"],
        ["charge", -1_250_000, "task_2"],
        ["charge", -500_000, "task_1"],
        ["refund", 3_700_000, "task_1"]
      ])
      expect(entries[1]).toMatchObject({
        accountId: acct,
        keyId: key,
        description: "test task_1",
        month: "2025-03",
        createdAt: Date.UTC(2025, 2, 15, 12)
      })
      expect(entries[4]).toMatchObject({ keyId: key, description: "refund", month: "2025-03" })
      assert.isTrue(entries.every((e, i) => i === 0 || e.id > entries[i - 1]!.id))
      // a zero charge or refund writes nothing
      yield* charge("task_3", 0)
      yield* refund("task_2", 0)
      assert.strictEqual((yield* (yield* BillingLedger).entries(acct)).length, 5)
    })))

  it.effect("ledger read: newest first, kind filter, keyset pages, other accounts unseen, bad cursors refused", () =>
    run(Effect.gen(function*() {
      const service = yield* Services.BillingService
      yield* open(10 * usd)
      yield* open(5 * usd, {}, "acct_b")
      yield* TestClock.setTime(Date.UTC(2025, 2, 15, 12))
      yield* charge("task_1", 1_500_000)
      yield* charge("task_2", 250_000)
      yield* charge("task_b", 1_000_000, "key_b", "acct_b")
      yield* refund("task_1", 1_500_000)
      yield* (yield* BillingAccounts).credit(acct, 2 * usd, "wire transfer")
      const first = yield* service.ledger(principal(), { limit: 2 })
      expect(first.data.map((e) => [e.kind, e.amount, e.task_id])).toEqual([
        ["top_up", 2, null],
        ["refund", 1.5, "task_1"]
      ])
      expect(first.pagination).toMatchObject({ hasMore: true, total: 5 })
      expect(first.data[1]).toMatchObject({ key_id: key, month: "2025-03", created_at: "2025-03-15T12:00:00.000Z" })
      const second = yield* service.ledger(principal(), { limit: 2, cursor: first.pagination.cursor! })
      expect(second.data.map((e) => [e.kind, e.amount])).toEqual([["charge", -0.25], ["charge", -1.5]])
      const third = yield* service.ledger(principal(), { limit: 2, cursor: second.pagination.cursor! })
      expect(third.data.map((e) => [e.kind, e.amount])).toEqual([["top_up", 10]])
      expect(third.pagination).toEqual({ cursor: null, hasMore: false, total: 5 })
      const charges = yield* service.ledger(principal(), { kind: "charge" })
      expect(charges.data.map((e) => e.task_id)).toEqual(["task_2", "task_1"])
      expect(charges.pagination).toEqual({ cursor: null, hasMore: false, total: 2 })
      const other = yield* service.ledger(principal("acct_b"), {})
      expect(other.data.map((e) => [e.kind, e.task_id])).toEqual([["charge", "task_b"], ["top_up", null]])
      const none = yield* service.ledger(principal("acct_none"), {})
      expect(none).toEqual({ data: [], pagination: { cursor: null, hasMore: false, total: 0 } })
      for (const cursor of ["x", "bGVkZ2VyOjA", Buffer.from("task_01").toString("base64url")]) {
        const refused = yield* Effect.flip(service.ledger(principal(), { cursor }))
        expect(refused).toMatchObject({ _tag: "ValidationError", message: "cursor: is not a cursor of this list" })
      }
      // test and live apart: every entry is live money, a test key's ledger is empty (any kind, any page); the
      // balance is the account's one balance, read alike by both
      const test: Principal = { ...principal(), environment: "test" }
      for (const query of [{}, { kind: "charge" as const }, { kind: "top_up" as const, limit: 1 }]) {
        expect(yield* service.ledger(test, query)).toEqual({
          data: [],
          pagination: { cursor: null, hasMore: false, total: 0 }
        })
      }
      expect(yield* service.ledger(test, { cursor: first.pagination.cursor! })).toMatchObject({ data: [] })
      expect(yield* service.balance(test)).toEqual(yield* service.balance(principal()))
    })))

  it.effect("balance read in USD", () =>
    run(Effect.gen(function*() {
      const service = yield* Services.BillingService
      yield* open(12_345_678, {
        monthlySpendLimitMicros: 50 * usd,
        autoTopUpEnabled: true,
        autoTopUpThresholdMicros: 1_500_000,
        autoTopUpAmountMicros: 20 * usd
      })
      yield* charge("task_1", 345_678)
      expect(yield* service.balance(principal())).toEqual({
        balance: 12,
        billingMode: "prepaid",
        monthlySpendLimit: 50,
        autoTopUpEnabled: true,
        autoTopUpThreshold: 1.5,
        autoTopUpAmount: 20,
        currency: "USD",
        monthToDateSpend: 0.345678
      })
      // an account billing was never opened for reads as empty
      expect(yield* service.balance(principal("acct_none"))).toEqual({
        balance: 0,
        billingMode: "prepaid",
        monthlySpendLimit: null,
        autoTopUpEnabled: false,
        autoTopUpThreshold: null,
        autoTopUpAmount: null,
        currency: "USD",
        monthToDateSpend: 0
      })
    })))

  it.effect("prepaid: a charge above the balance is refused and writes nothing", () =>
    run(Effect.gen(function*() {
      yield* open(3 * usd)
      yield* charge("task_1", 2 * usd)
      const error = yield* Effect.flip(charge("task_2", 1_500_000))
      expect(error).toMatchObject({ _tag: "InsufficientBalance", code: "INSUFFICIENT_BALANCE" })
      expect(error.message).toContain("1.5 USD")
      expect(error.message).toContain("1 USD")
      const current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 1 * usd)
      assert.strictEqual(current.monthToDateMicros, 2 * usd)
      assert.strictEqual((yield* (yield* BillingAccounts).keySpend(key)).spentMicros, 2 * usd)
      // exactly the balance is allowed
      yield* charge("task_3", 1 * usd)
      assert.strictEqual((yield* consistent()).balanceMicros, 0)
    })))

  it.effect("a charge for an account without billing is refused as insufficient balance", () =>
    run(Effect.gen(function*() {
      const error = yield* Effect.flip(charge("task_1", 1, key, "acct_none"))
      expect(error).toMatchObject({ _tag: "InsufficientBalance" })
      expect(yield* (yield* BillingLedger).entries("acct_none")).toEqual([])
      // and a refund for it does nothing
      yield* refund("task_1", 1, key, "acct_none")
    })))
}
