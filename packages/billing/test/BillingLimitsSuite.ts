/**
 * Billing's conformance cases for spend limits and the refunds that give spend back: a key's limit, the key tree
 * (a derived key's charges count against every ancestor), the monthly limit per UTC calendar month, refunds counted
 * in the month of their charge, and a task's refunds bounded by its charges.
 */
import { assert, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { BillingAccounts } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import { acct, type Backend, charge, consistent, key, open, refund, runner, state, usd } from "./BillingSuiteSupport.js"

/** Registers the cases of spend limits and refunds for one backend. */
export const billingLimitsSuite = (backend: Backend) => {
  const run = runner(backend)

  it.effect("a key's spend limit applies (prepaid and postpaid)", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      yield* open(100 * usd)
      yield* open(0, { billingMode: "postpaid" }, "acct_post")
      yield* accounts.registerKey(acct, key, 5 * usd)
      yield* accounts.registerKey("acct_post", "key_post", 1 * usd)
      yield* charge("task_1", 2 * usd)
      yield* charge("task_2", 3 * usd)
      const error = yield* Effect.flip(charge("task_3", 1))
      expect(error).toMatchObject({ _tag: "SpendLimitExceeded", code: "SPEND_LIMIT_EXCEEDED" })
      expect(error.message).toContain("API key spend limit")
      // another key of the account is not limited
      yield* charge("task_4", 10 * usd, "key_other")
      // a refund gives the key room again
      yield* refund("task_1", 2 * usd)
      yield* charge("task_5", 2 * usd)
      assert.strictEqual((yield* accounts.keySpend(key)).spentMicros, 5 * usd)
      yield* consistent()
      // postpaid too
      yield* charge("task_6", 1 * usd, "key_post", "acct_post")
      expect(yield* Effect.flip(charge("task_7", 1, "key_post", "acct_post"))).toMatchObject({
        _tag: "SpendLimitExceeded"
      })
      assert.strictEqual((yield* consistent("acct_post")).balanceMicros, -1 * usd)
    })))

  it.effect("key tree: a derived key's charges count against every ancestor's limit; refunds give back to all", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      yield* open(100 * usd)
      // the attack: a key limited to 1.20 made three children, each given 1.20 of its own
      yield* accounts.registerKey(acct, "key_p", 1_200_000)
      for (const child of ["key_c1", "key_c2", "key_c3"]) {
        yield* accounts.registerKey(acct, child, 1_200_000, ["key_p"])
      }
      yield* charge("task_1", 1_200_000, "key_c1")
      for (const child of ["key_c2", "key_c3"]) {
        const refused = yield* Effect.flip(charge(`task_${child}`, 1_200_000, child))
        expect(refused).toMatchObject({ _tag: "SpendLimitExceeded" })
        // the parent's limit refused it, with the parent's numbers
        assert.include(refused.message, "1.2")
      }
      assert.strictEqual((yield* accounts.keySpend("key_p")).spentMicros, 1_200_000)
      assert.strictEqual((yield* accounts.keySpend("key_c1")).spentMicros, 1_200_000)
      assert.strictEqual((yield* accounts.keySpend("key_c2")).spentMicros, 0)
      // the parent itself is out too
      expect(yield* Effect.flip(charge("task_p", 1, "key_p"))).toMatchObject({ _tag: "SpendLimitExceeded" })
      // a refund gives back to the key and every ancestor
      yield* refund("task_1", 800_000, "key_c1")
      assert.strictEqual((yield* accounts.keySpend("key_p")).spentMicros, 400_000)
      assert.strictEqual((yield* accounts.keySpend("key_c1")).spentMicros, 400_000)
      // a grandchild counts against its parent and its grandparent: the grandparent (0.80 left) refuses 0.90
      yield* accounts.registerKey(acct, "key_g", null, ["key_p", "key_c2"])
      expect(yield* Effect.flip(charge("task_g1", 900_000, "key_g"))).toMatchObject({ _tag: "SpendLimitExceeded" })
      yield* charge("task_g2", 500_000, "key_g")
      expect((yield* Effect.forEach(["key_p", "key_c2", "key_g"], accounts.keySpend)).map((k) => k.spentMicros))
        .toEqual([900_000, 500_000, 500_000])
      // an unlimited root with a derived key: the root's spend counts its subtree
      yield* accounts.registerKey(acct, "key_r", null)
      yield* accounts.registerKey(acct, "key_rc", null, ["key_r"])
      yield* charge("task_r", 2 * usd, "key_rc")
      yield* charge("task_r2", 1 * usd, "key_r")
      assert.strictEqual((yield* accounts.keySpend("key_r")).spentMicros, 3 * usd)
      assert.strictEqual((yield* accounts.keySpend("key_rc")).spentMicros, 2 * usd)
      const current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 100 * usd - 1_200_000 + 800_000 - 500_000 - 3 * usd)
    })))

  it.effect("the monthly spend limit applies per UTC calendar month", () =>
    run(Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2025, 0, 31, 23, 0))
      yield* open(100 * usd, { monthlySpendLimitMicros: 5 * usd })
      yield* charge("task_1", 4 * usd)
      const error = yield* Effect.flip(charge("task_2", 2 * usd))
      expect(error).toMatchObject({ _tag: "SpendLimitExceeded" })
      expect(error.message).toContain("monthly spend limit")
      yield* charge("task_3", 1 * usd)
      assert.strictEqual((yield* state()).monthToDateMicros, 5 * usd)
      // one hour later it is February (UTC): the spend starts again
      yield* TestClock.adjust("1 hour")
      assert.strictEqual((yield* state()).monthToDateMicros, 0)
      yield* charge("task_4", 5 * usd)
      expect(yield* Effect.flip(charge("task_5", 1))).toMatchObject({ _tag: "SpendLimitExceeded" })
      const current = yield* consistent()
      assert.strictEqual(current.monthToDateMicros, 5 * usd)
      assert.strictEqual(current.balanceMicros, 90 * usd)
      // postpaid accounts are limited as well
      yield* (yield* BillingAccounts).update(acct, { billingMode: "postpaid", monthlySpendLimitMicros: 6 * usd })
      yield* charge("task_6", 1 * usd)
      expect(yield* Effect.flip(charge("task_7", 1))).toMatchObject({ _tag: "SpendLimitExceeded" })
    })))

  it.effect("a refund gives back the spend of the month the task was charged in", () =>
    run(Effect.gen(function*() {
      const january = Date.UTC(2025, 0, 20)
      yield* TestClock.setTime(january)
      yield* open(100 * usd, { monthlySpendLimitMicros: 10 * usd })
      yield* charge("task_jan", 6 * usd)
      yield* TestClock.setTime(Date.UTC(2025, 1, 3))
      yield* charge("task_feb", 2 * usd)
      yield* refund("task_jan", 6 * usd)
      const current = yield* consistent()
      assert.strictEqual(current.monthToDateMicros, 2 * usd, "February's spend is untouched")
      assert.strictEqual(current.balanceMicros, 98 * usd)
      const entries = yield* (yield* BillingLedger).entries(acct)
      expect(entries.at(-1)).toMatchObject({
        kind: "refund",
        taskId: "task_jan",
        month: "2025-01",
        createdAt: Date.UTC(2025, 1, 3)
      })
      // January's spend went back to zero
      yield* TestClock.setTime(january)
      assert.strictEqual((yield* state()).monthToDateMicros, 0)
      yield* charge("task_jan_2", 10 * usd)
    })))

  it.effect("a task's refunds never exceed its charges", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      yield* open(10 * usd)
      yield* charge("task_1", 3 * usd)
      yield* charge("task_2", 1 * usd)
      yield* refund("task_1", 2 * usd)
      yield* refund("task_1", 2 * usd)
      yield* refund("task_1", 2 * usd)
      yield* refund("task_unknown", 2 * usd)
      const current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 9 * usd)
      assert.strictEqual(current.monthToDateMicros, 1 * usd)
      assert.strictEqual((yield* accounts.keySpend(key)).spentMicros, 1 * usd)
      const refunds = (yield* (yield* BillingLedger).entries(acct)).filter((e) => e.kind === "refund")
      expect(refunds.map((e) => e.amountMicros)).toEqual([2 * usd, 1 * usd])
      // a refund of another account's task gives nothing
      yield* open(0, {}, "acct_b")
      yield* refund("task_2", 1 * usd, key, "acct_b")
      assert.strictEqual((yield* consistent("acct_b")).balanceMicros, 0)
    })))
}
