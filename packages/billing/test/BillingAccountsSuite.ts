/**
 * Billing's conformance cases for accounts and keys: an account opened, credited, updated and read, and the keys'
 * spend rows registered and read.
 */
import { assert, expect, it } from "@effect/vitest"
import type { Errors } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import { acct, type Backend, charge, consistent, key, open, runner, usd } from "./BillingSuiteSupport.js"

/** Registers the cases of accounts and keys for one backend. */
export const billingAccountsSuite = (backend: Backend) => {
  const run = runner(backend)

  it.effect("opens, credits, updates and reads an account", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      const opened = yield* open(10 * usd, { monthlySpendLimitMicros: 100 * usd })
      expect(opened).toEqual({
        ...defaultSettings,
        creditLimitMicros: 100 * usd,
        monthlySpendLimitMicros: 100 * usd,
        accountId: acct,
        balanceMicros: 10 * usd,
        monthToDateMicros: 0
      })
      const credited = yield* accounts.credit(acct, 2_500_000, "wire transfer")
      assert.strictEqual(credited.balanceMicros, 12_500_000)
      const updated = yield* accounts.update(acct, {
        billingMode: "postpaid",
        autoTopUpEnabled: true,
        autoTopUpThresholdMicros: 1 * usd,
        autoTopUpAmountMicros: 5 * usd
      })
      expect(updated).toMatchObject({
        billingMode: "postpaid",
        monthlySpendLimitMicros: 100 * usd,
        autoTopUpEnabled: true,
        autoTopUpThresholdMicros: 1 * usd,
        autoTopUpAmountMicros: 5 * usd,
        balanceMicros: 12_500_000
      })
      const cleared = yield* accounts.update(acct, { monthlySpendLimitMicros: null })
      assert.isNull(cleared.monthlySpendLimitMicros)
      expect(yield* accounts.update(acct, {})).toEqual(cleared)
      expect(yield* consistent()).toEqual(cleared)
      const entries = yield* (yield* BillingLedger).entries(acct)
      expect(entries.map((e) => [e.kind, e.amountMicros, e.description])).toEqual([
        ["top_up", 10 * usd, "opening credit"],
        ["top_up", 2_500_000, "wire transfer"]
      ])
      expect(entries[0]).toMatchObject({ accountId: acct, keyId: null, taskId: null, month: "1970-01", createdAt: 0 })
      // an account without an opening credit has no ledger entry
      const empty = yield* open(0, {}, "acct_empty")
      assert.strictEqual(empty.balanceMicros, 0)
      expect(yield* (yield* BillingLedger).entries("acct_empty")).toEqual([])
      // unknown accounts
      for (
        const attempt of [
          accounts.state("acct_none"),
          accounts.update("acct_none", { billingMode: "prepaid" }),
          accounts.credit("acct_none", 1, undefined)
        ]
      ) {
        const error: Errors.AccountNotFound | unknown = yield* Effect.flip(attempt)
        expect(error).toMatchObject({ _tag: "AccountNotFound" })
      }
      // opening twice is a storage failure
      expect(yield* Effect.flip(open(0))).toMatchObject({ _tag: "PersistenceError" })
    })))

  it.effect("registers keys and reads their spend", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      yield* open(10 * usd)
      expect(yield* accounts.keySpend("key_unknown")).toEqual({
        keyId: "key_unknown",
        spendLimitMicros: null,
        spentMicros: 0
      })
      yield* accounts.registerKey(acct, key, 5 * usd)
      expect(yield* accounts.keySpend(key)).toEqual({ keyId: key, spendLimitMicros: 5 * usd, spentMicros: 0 })
      yield* charge("task_1", 2 * usd)
      yield* accounts.registerKey(acct, key, null)
      expect(yield* accounts.keySpend(key)).toEqual({ keyId: key, spendLimitMicros: null, spentMicros: 2 * usd })
      // a key never registered is counted from its first charge
      yield* charge("task_2", 1 * usd, "key_b")
      expect(yield* accounts.keySpend("key_b")).toEqual({
        keyId: "key_b",
        spendLimitMicros: null,
        spentMicros: 1 * usd
      })
    })))
}
