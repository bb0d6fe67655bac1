/**
 * Billing's conformance cases for auto top-up: the request recorded with the `none` provider, credited at once by
 * the simulated one, and a failing provider that never fails the charge.
 */
import { assert, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { BillingAccounts } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import {
  acct,
  type Backend,
  brokenProvider,
  charge,
  consistent,
  key,
  open,
  runner,
  usd
} from "./BillingSuiteSupport.js"

/** Registers the cases of auto top-up for one backend. */
export const billingTopUpSuite = (backend: Backend) => {
  const run = runner(backend)

  it.effect("auto top-up with the `none` provider: the request is recorded, nothing is credited", () =>
    run(Effect.gen(function*() {
      const ledger = yield* BillingLedger
      yield* TestClock.setTime(Date.UTC(2025, 4, 1))
      yield* open(10 * usd, {
        autoTopUpEnabled: true,
        autoTopUpThresholdMicros: 5 * usd,
        autoTopUpAmountMicros: 20 * usd
      })
      yield* charge("task_1", 5 * usd)
      expect(yield* ledger.topUpRequests(acct), "exactly the threshold is not below it").toEqual([])
      yield* charge("task_2", 1 * usd)
      const current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 4 * usd)
      expect(yield* ledger.topUpRequests(acct)).toMatchObject([
        {
          accountId: acct,
          amountMicros: 20 * usd,
          provider: "none",
          status: "requested",
          createdAt: Date.UTC(2025, 4, 1)
        }
      ])
      // disabled: nothing requested
      yield* (yield* BillingAccounts).update(acct, { autoTopUpEnabled: false })
      yield* charge("task_3", 1 * usd)
      assert.strictEqual((yield* ledger.topUpRequests(acct)).length, 1)
    })))

  it.effect("auto top-up with the simulated provider credits at once", () =>
    run(
      Effect.gen(function*() {
        const ledger = yield* BillingLedger
        yield* open(10 * usd, {
          autoTopUpEnabled: true,
          autoTopUpThresholdMicros: 5 * usd,
          autoTopUpAmountMicros: 20 * usd
        })
        yield* open(10 * usd, {
          billingMode: "postpaid",
          autoTopUpEnabled: true,
          autoTopUpThresholdMicros: 5 * usd,
          autoTopUpAmountMicros: 20 * usd
        }, "acct_post")
        yield* charge("task_1", 6 * usd)
        const current = yield* consistent()
        assert.strictEqual(current.balanceMicros, 24 * usd)
        expect((yield* ledger.entries(acct)).map((e) => [e.kind, e.amountMicros])).toEqual([
          ["top_up", 10 * usd],
          ["charge", -6 * usd],
          ["top_up", 20 * usd]
        ])
        expect(yield* ledger.topUpRequests(acct)).toMatchObject([{
          provider: "simulated",
          status: "credited",
          amountMicros: 20 * usd
        }])
        // postpaid accounts are never topped up
        yield* charge("task_2", 8 * usd, key, "acct_post")
        assert.strictEqual((yield* consistent("acct_post")).balanceMicros, 2 * usd)
        expect(yield* ledger.topUpRequests("acct_post")).toEqual([])
      }),
      PaymentProvider.layerSimulated
    ))

  it.effect("a failing payment provider never fails the charge", () =>
    run(
      Effect.gen(function*() {
        yield* open(10 * usd, {
          autoTopUpEnabled: true,
          autoTopUpThresholdMicros: 5 * usd,
          autoTopUpAmountMicros: 20 * usd
        })
        yield* charge("task_1", 6 * usd)
        assert.strictEqual((yield* consistent()).balanceMicros, 4 * usd)
        expect(yield* (yield* BillingLedger).topUpRequests(acct)).toMatchObject([{
          provider: "broken",
          status: "failed"
        }])
      }),
      brokenProvider
    ))
}
