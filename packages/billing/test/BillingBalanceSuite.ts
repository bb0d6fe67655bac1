/**
 * Billing's conformance cases for how far a balance may go: postpaid balances below zero down to the credit limit
 * (also under concurrent charges), the bound of 1e9 USD (also under concurrent credits), and a property over the
 * whole range, checked against a model in exact integers.
 */
import { assert, expect, it } from "@effect/vitest"
import { Money, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import { BillingAccounts } from "../src/BillingAccounts.js"
import { BillingLedger, maxBalanceMicros } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"
import {
  acct,
  type Backend,
  type BillingTest,
  charge,
  consistent,
  key,
  open,
  principal,
  refund,
  runner,
  Tx,
  usd
} from "./BillingSuiteSupport.js"

/** An amount anywhere in the range: 1 micro-dollar to 1e9 USD, its edges and small sums alike. */
const amount = FastCheck.oneof(
  FastCheck.bigInt({ min: 1n, max: BigInt(maxBalanceMicros) }).map(Number),
  FastCheck.integer({ min: 1, max: 10 * usd }),
  FastCheck.constantFrom(1, maxBalanceMicros, maxBalanceMicros - 1, 100 * usd)
)

/** One step of the property test. */
type Operation =
  | { readonly op: "credit"; readonly amount: number }
  | { readonly op: "charge"; readonly amount: number }
  | { readonly op: "refund"; readonly task: number; readonly amount: number }
  | { readonly op: "settings"; readonly postpaid: boolean; readonly creditLimit: number }

const operation: FastCheck.Arbitrary<Operation> = FastCheck.oneof(
  FastCheck.record({ op: FastCheck.constant("credit" as const), amount }),
  FastCheck.record({ op: FastCheck.constant("charge" as const), amount }),
  FastCheck.record({ op: FastCheck.constant("refund" as const), task: FastCheck.nat(11), amount }),
  FastCheck.record({
    op: FastCheck.constant("settings" as const),
    postpaid: FastCheck.boolean(),
    creditLimit: FastCheck.oneof(amount, FastCheck.constant(0))
  })
)

/** The exact decimal of micro-dollars, as the API's JSON must print it. */
const decimal = (micros: bigint): string => {
  const sign = micros < 0n ? "-" : ""
  const abs = micros < 0n ? -micros : micros
  const fraction = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "")
  return `${sign}${abs / 1_000_000n}${fraction === "" ? "" : `.${fraction}`}`
}

/**
 * Runs `ops` on a new account against a model in exact integers (BigInt): each operation succeeds or is refused as
 * the model says, and after each one the ledger sums to the balance, the balance is the model's and the balance
 * read and the ledger in USD print it exactly.
 */
const checkSequence = (accountId: string, ops: ReadonlyArray<Operation>) =>
  Effect.gen(function*() {
    const accounts = yield* BillingAccounts
    const balances = yield* Services.BillingService
    const ledger = yield* BillingLedger
    yield* open(0, {}, accountId)
    let balance = 0n
    let postpaid = false
    let creditLimit = 100n * 1_000_000n
    const charged = new Map<number, bigint>()
    const bound = BigInt(maxBalanceMicros)
    for (const [i, step] of ops.entries()) {
      const a = "amount" in step ? BigInt(step.amount) : 0n
      if (step.op === "credit") {
        const exit = yield* Effect.exit(accounts.credit(accountId, step.amount, undefined))
        const allowed = balance + a <= bound
        assert.strictEqual(Exit.isSuccess(exit), allowed, `credit ${step.amount} at ${balance}`)
        if (allowed) balance += a
      } else if (step.op === "charge") {
        const exit = yield* Effect.exit(charge(`task_${i}`, step.amount, key, accountId))
        const allowed = postpaid ? balance - a >= -creditLimit : balance >= a
        assert.strictEqual(Exit.isSuccess(exit), allowed, `charge ${step.amount} at ${balance}`)
        if (allowed) {
          balance -= a
          charged.set(i, a)
        }
      } else if (step.op === "refund") {
        const task = [...charged.keys()][step.task % Math.max(1, charged.size)]
        if (task === undefined) continue
        yield* refund(`task_${task}`, step.amount, key, accountId)
        const left = charged.get(task)!
        const given = a < left ? a : left
        charged.set(task, left - given)
        balance += given
      } else {
        yield* accounts.update(accountId, {
          billingMode: step.postpaid ? "postpaid" : "prepaid",
          creditLimitMicros: step.creditLimit
        })
        postpaid = step.postpaid
        creditLimit = BigInt(step.creditLimit)
      }
      const current = yield* consistent(accountId)
      assert.strictEqual(BigInt(current.balanceMicros), balance)
      const read = yield* balances.balance(principal(accountId))
      assert.strictEqual(JSON.stringify(read.balance), decimal(balance))
      assert.strictEqual(Money.toMicros(read.balance), current.balanceMicros)
      const entries = yield* ledger.entries(accountId)
      const usdSum = entries.reduce(
        (sum, entry) => sum + BigInt(Money.toMicros(Money.fromMicros(entry.amountMicros))),
        0n
      )
      assert.strictEqual(usdSum, balance, "the ledger in USD sums to the balance")
    }
  })

/** Registers the cases of the balance's limits for one backend. */
export const billingBalanceSuite = (backend: Backend) => {
  const run = runner(backend)

  it.effect("postpaid: the balance may go negative", () =>
    run(Effect.gen(function*() {
      yield* open(1 * usd, { billingMode: "postpaid" })
      yield* charge("task_1", 3 * usd)
      yield* charge("task_2", 2 * usd)
      const current = yield* consistent()
      assert.strictEqual(current.balanceMicros, -4 * usd)
      yield* refund("task_2", 2 * usd)
      assert.strictEqual((yield* consistent()).balanceMicros, -2 * usd)
      // back to prepaid: nothing more can be charged until the debt is paid
      yield* (yield* BillingAccounts).update(acct, { billingMode: "prepaid" })
      expect(yield* Effect.flip(charge("task_3", 1))).toMatchObject({ _tag: "InsufficientBalance" })
    })))

  it.effect("postpaid: the credit limit (default 100 USD) bounds how far the balance goes below zero", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      const opened = yield* open(0, { billingMode: "postpaid" })
      assert.strictEqual(opened.creditLimitMicros, 100 * usd)
      yield* charge("task_1", 60 * usd)
      yield* charge("task_2", 40 * usd)
      assert.strictEqual((yield* consistent()).balanceMicros, -100 * usd)
      const refused = yield* Effect.flip(charge("task_3", 1))
      expect(refused).toMatchObject({ _tag: "InsufficientBalance" })
      expect(refused.message).toBe(
        "Insufficient balance: the charge is 0.000001 USD, the balance is -100 USD and the account's credit " +
          "limit is 100 USD (the balance may not go below -100 USD)"
      )
      // a refusal wrote nothing
      const after = yield* consistent()
      expect([after.balanceMicros, after.monthToDateMicros]).toEqual([-100 * usd, 100 * usd])
      assert.strictEqual((yield* accounts.keySpend(key)).spentMicros, 100 * usd)
      // the account's own limit, then back to the default
      const raised = yield* accounts.update(acct, { creditLimitMicros: 150 * usd })
      assert.strictEqual(raised.creditLimitMicros, 150 * usd)
      yield* charge("task_4", 50 * usd)
      expect(yield* Effect.flip(charge("task_5", 1))).toMatchObject({ _tag: "InsufficientBalance" })
      assert.strictEqual((yield* accounts.update(acct, { creditLimitMicros: null })).creditLimitMicros, 100 * usd)
      expect(yield* Effect.flip(charge("task_6", 1))).toMatchObject({ _tag: "InsufficientBalance" })
      // a refund gives room again; a limit of 0 keeps a postpaid balance at or above zero
      yield* refund("task_1", 60 * usd)
      yield* charge("task_7", 10 * usd)
      assert.strictEqual((yield* consistent()).balanceMicros, -100 * usd)
      yield* accounts.credit(acct, 101 * usd, undefined)
      yield* accounts.update(acct, { creditLimitMicros: 0 })
      yield* charge("task_8", 1 * usd)
      expect((yield* Effect.flip(charge("task_9", 1))).message).toContain("credit limit is 0 USD")
      assert.strictEqual((yield* consistent()).balanceMicros, 0)
      // prepaid accounts ignore it
      yield* open(5 * usd, { creditLimitMicros: 1000 * usd }, "acct_pre")
      expect(yield* Effect.flip(charge("task_10", 6 * usd, key, "acct_pre"))).toMatchObject({
        _tag: "InsufficientBalance",
        message: "Insufficient balance: the charge is 6 USD and the balance is 5 USD"
      })
    })))

  it.live("concurrent postpaid charges never pass the credit limit", () =>
    run(Effect.gen(function*() {
      const tx = yield* Tx
      yield* open(0, { billingMode: "postpaid", creditLimitMicros: 30 * usd })
      const exits = yield* Effect.forEach(
        Array.from({ length: 90 }, (_, i) => i),
        (i) => Effect.exit(tx.run(charge(`task_${i}`, 1 * usd))),
        { concurrency: "unbounded" }
      )
      for (const exit of exits) {
        if (Exit.isFailure(exit)) expect(yield* Effect.flip(exit)).toMatchObject({ _tag: "InsufficientBalance" })
      }
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 30)
      assert.strictEqual((yield* consistent()).balanceMicros, -30 * usd)
    })), 60_000)

  it.effect("balances stay within 1e9 USD: a credit past it is a validation error, an auto top-up is not asked", () =>
    run(
      Effect.gen(function*() {
        const accounts = yield* BillingAccounts
        yield* open(maxBalanceMicros - 2)
        assert.strictEqual((yield* accounts.credit(acct, 2, undefined)).balanceMicros, maxBalanceMicros)
        const refused = yield* Effect.flip(accounts.credit(acct, 1, "one more"))
        expect(refused).toMatchObject({ _tag: "ValidationError" })
        expect(refused.message).toBe(
          "amount: a credit of 0.000001 USD would take the balance of 1000000000 USD above 1000000000 USD, " +
            "the most an account may hold"
        )
        assert.strictEqual((yield* consistent()).balanceMicros, maxBalanceMicros)
        // a balance the API reads exactly, to the micro-dollar
        yield* charge("task_1", 1)
        assert.strictEqual((yield* (yield* Services.BillingService).balance(principal())).balance, 999_999_999.999999)
        // an auto top-up that would pass the bound is not asked for
        yield* accounts.update(acct, {
          autoTopUpEnabled: true,
          autoTopUpThresholdMicros: maxBalanceMicros,
          autoTopUpAmountMicros: 1 * usd
        })
        yield* charge("task_2", 1)
        expect(yield* (yield* BillingLedger).topUpRequests(acct)).toEqual([])
        assert.strictEqual((yield* consistent()).balanceMicros, maxBalanceMicros - 2)
      }),
      PaymentProvider.layerSimulated
    ))

  it.live("concurrent credits never pass the bound", () =>
    run(Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      yield* open(maxBalanceMicros - 10 * usd)
      const exits = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        () => Effect.exit(accounts.credit(acct, 1 * usd, undefined)),
        { concurrency: "unbounded" }
      )
      for (const exit of exits) {
        if (Exit.isFailure(exit)) expect(yield* Effect.flip(exit)).toMatchObject({ _tag: "ValidationError" })
      }
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 10)
      assert.strictEqual((yield* consistent()).balanceMicros, maxBalanceMicros)
    })), 60_000)

  it.live(
    "property: over the whole range, the ledger sums to the balance and USD answers are exact",
    () =>
      run(Effect.gen(function*() {
        const context = yield* Effect.context<BillingTest>()
        let accountNo = 0
        const property = FastCheck.asyncProperty(
          FastCheck.array(operation, { minLength: 1, maxLength: 12 }),
          (ops) => Effect.runPromise(Effect.provide(checkSequence(`acct_p${++accountNo}`, ops), context))
        )
        yield* Effect.promise(() => FastCheck.assert(property, { numRuns: 40 }))
      })),
    120_000
  )
}
