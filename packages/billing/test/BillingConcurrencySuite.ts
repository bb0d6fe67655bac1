/**
 * Billing's conformance cases for concurrent charges (never past the balance, a key's or a parent key's spend limit,
 * nor the monthly limit) and for charges in the caller's transaction (rolled back with it, where the backend has
 * transactions).
 */
import { assert, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { BillingAccounts } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
import { acct, type Backend, charge, consistent, key, open, runner, Tx, usd } from "./BillingSuiteSupport.js"

/** Registers the cases of concurrency and transactions for one backend. */
export const billingConcurrencySuite = (backend: Backend) => {
  const run = runner(backend)

  it.live("200 concurrent charges of 1 USD against 50 USD: exactly 50 succeed", () =>
    run(Effect.gen(function*() {
      const tx = yield* Tx
      yield* open(50 * usd)
      const exits = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => Effect.exit(tx.run(charge(`task_${i}`, 1 * usd))),
        { concurrency: "unbounded" }
      )
      const succeeded = exits.filter(Exit.isSuccess).length
      assert.strictEqual(succeeded, 50)
      for (const exit of exits) {
        if (Exit.isFailure(exit)) {
          expect(yield* Effect.flip(exit)).toMatchObject({ _tag: "InsufficientBalance" })
        }
      }
      const current = yield* consistent()
      assert.strictEqual(current.balanceMicros, 0)
      const entries = yield* (yield* BillingLedger).entries(acct)
      let running = 0
      for (const entry of entries) {
        running += entry.amountMicros
        assert.isAtLeast(running, 0, "the balance never went negative")
      }
      assert.strictEqual(entries.filter((e) => e.kind === "charge").length, 50)
      assert.strictEqual((yield* (yield* BillingAccounts).keySpend(key)).spentMicros, 50 * usd)
    })), 60_000)

  it.live(
    "concurrent charges never pass the key's spend limit nor the account's monthly limit",
    () =>
      run(Effect.gen(function*() {
        const tx = yield* Tx
        const accounts = yield* BillingAccounts
        yield* open(1000 * usd, { monthlySpendLimitMicros: 40 * usd })
        yield* accounts.registerKey(acct, key, 30 * usd)
        yield* accounts.registerKey(acct, "key_b", null)
        const exits = yield* Effect.forEach(
          Array.from({ length: 120 }, (_, i) => i),
          (i) => Effect.exit(tx.run(charge(`task_${i}`, 1 * usd, i % 2 === 0 ? key : "key_b"))),
          { concurrency: "unbounded" }
        )
        for (const exit of exits) {
          if (Exit.isFailure(exit)) expect(yield* Effect.flip(exit)).toMatchObject({ _tag: "SpendLimitExceeded" })
        }
        // the key stops at its 30 USD; both keys together at the month's 40 USD
        assert.strictEqual(exits.filter(Exit.isSuccess).length, 40)
        assert.isAtMost((yield* accounts.keySpend(key)).spentMicros, 30 * usd)
        const current = yield* consistent()
        assert.strictEqual(current.monthToDateMicros, 40 * usd)
        assert.strictEqual(current.balanceMicros, 960 * usd)
      })),
    60_000
  )

  it.live("concurrent charges of sibling keys never pass their parent's spend limit", () =>
    run(Effect.gen(function*() {
      const tx = yield* Tx
      const accounts = yield* BillingAccounts
      yield* open(1000 * usd)
      yield* accounts.registerKey(acct, "key_p", 30 * usd)
      const children = ["key_c1", "key_c2", "key_c3"]
      // each child's own limit is the parent's whole limit (as key creation allows when nothing is spent yet)
      for (const child of children) {
        yield* accounts.registerKey(acct, child, 30 * usd, ["key_p"])
      }
      yield* accounts.registerKey(acct, "key_g", null, ["key_p", "key_c1"])
      const spenders = [...children, "key_g", "key_p"]
      const exits = yield* Effect.forEach(
        Array.from({ length: 150 }, (_, i) => i),
        (i) => Effect.exit(tx.run(charge(`task_${i}`, 1 * usd, spenders[i % spenders.length]))),
        { concurrency: "unbounded" }
      )
      for (const exit of exits) {
        if (Exit.isFailure(exit)) expect(yield* Effect.flip(exit)).toMatchObject({ _tag: "SpendLimitExceeded" })
      }
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 30)
      assert.strictEqual((yield* accounts.keySpend("key_p")).spentMicros, 30 * usd)
      const entries = yield* (yield* BillingLedger).entries(acct)
      const byKey = (keyId: string) =>
        -entries.filter((e) => e.kind === "charge" && e.keyId === keyId).reduce((sum, e) => sum + e.amountMicros, 0)
      for (const child of ["key_c2", "key_c3", "key_g"]) {
        assert.strictEqual((yield* accounts.keySpend(child)).spentMicros, byKey(child))
      }
      // a child's spend counts its own descendants
      assert.strictEqual((yield* accounts.keySpend("key_c1")).spentMicros, byKey("key_c1") + byKey("key_g"))
      assert.strictEqual((yield* consistent()).balanceMicros, 970 * usd)
    })), 60_000)

  // only where there are transactions to roll back (SQL); memory has none
  if (backend.transactional) {
    it.effect("a charge rolls back with the caller's failing transaction", () =>
      run(Effect.gen(function*() {
        const tx = yield* Tx
        yield* open(10 * usd, {
          autoTopUpEnabled: true,
          autoTopUpThresholdMicros: 9 * usd,
          autoTopUpAmountMicros: 5 * usd
        })
        const failed = yield* Effect.exit(
          tx.run(Effect.zipRight(charge("task_1", 3 * usd), Effect.fail("boom" as const)))
        )
        assert.isTrue(Exit.isFailure(failed))
        const current = yield* consistent()
        assert.strictEqual(current.balanceMicros, 10 * usd)
        assert.strictEqual(current.monthToDateMicros, 0)
        assert.strictEqual((yield* (yield* BillingAccounts).keySpend(key)).spentMicros, 0)
        expect(yield* (yield* BillingLedger).topUpRequests(acct)).toEqual([])
        // a refused charge inside a transaction leaves the transaction usable
        const mixed = yield* tx.run(Effect.gen(function*() {
          yield* charge("task_2", 1 * usd)
          const refused = yield* Effect.flip(charge("task_3", 100 * usd))
          yield* charge("task_4", 1 * usd)
          return refused._tag
        }))
        assert.strictEqual(mixed, "InsufficientBalance")
        assert.strictEqual((yield* consistent()).balanceMicros, 8 * usd)
      })))
  }
}
