/**
 * The conformance suite of billing: every implementation (memory, SQLite, PostgreSQL) must pass it. A backend is
 * a function from a payment provider layer to the billing services (plus {@link Tx}, the way to run an effect in
 * one transaction of the backend).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { assert, describe, expect, it } from "@effect/vitest"
import { type Errors, Money, Services } from "@mediagate/contract"
import type { Principal } from "@mediagate/contract/Security"
import { Billing } from "@mediagate/engine/Billing"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { BillingAccounts, type BillingSettings, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger, maxBalanceMicros } from "../src/Ledger.js"
import * as PaymentProvider from "../src/PaymentProvider.js"

/** Runs an effect in one transaction of the backend (memory: as it is). */
export class Tx extends Context.Tag("billing-test/Tx")<Tx, {
  readonly run: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}>() {}

/** The services a backend provides. */
export type BillingTest = Billing | BillingAccounts | Services.BillingService | BillingLedger | Tx

/** A backend under test. */
export interface Backend {
  /** Whether a failing transaction rolls back what billing wrote in it. */
  readonly transactional: boolean
  readonly layer: (provider: Layer.Layer<PaymentProvider.PaymentProvider>) => Layer.Layer<BillingTest, unknown>
}

const usd = 1_000_000
const acct = "acct_a"
const key = "key_a"

const charge = (taskId: string, amountMicros: number, keyId = key, accountId = acct) =>
  Effect.flatMap(
    Billing,
    (billing) => billing.charge({ accountId, keyId, taskId, amountMicros, description: `test ${taskId}` })
  )

const refund = (taskId: string, amountMicros: number, keyId = key, accountId = acct) =>
  Effect.flatMap(Billing, (billing) => billing.refund({ accountId, keyId, taskId, amountMicros, reason: "refund" }))

const open = (openingMicros: number, settings: Partial<BillingSettings> = {}, accountId = acct) =>
  Effect.flatMap(
    BillingAccounts,
    (accounts) => accounts.open(accountId, { ...defaultSettings, ...settings }, openingMicros)
  )

const state = (accountId = acct) => Effect.flatMap(BillingAccounts, (accounts) => accounts.state(accountId))

/** The state, after checking that the ledger sums to the balance and never went below zero where it must not. */
const consistent = (accountId = acct) =>
  Effect.gen(function*() {
    const entries = yield* (yield* BillingLedger).entries(accountId)
    const current = yield* state(accountId)
    const sum = entries.reduce((total, entry) => total + entry.amountMicros, 0)
    assert.strictEqual(sum, current.balanceMicros, "the ledger sums to the balance")
    return current
  })

const principal = (accountId = acct): Principal => Fixtures.principal({ accountId, keyId: key })

const brokenProvider = Layer.succeed(PaymentProvider.PaymentProvider, {
  name: "broken",
  requestTopUp: () => Effect.fail(new PaymentProvider.PaymentProviderError({ message: "payment network down" }))
})

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

/** Registers the suite for one backend. */
export const billingSuite = (name: string, backend: Backend) =>
  describe(`Billing conformance: ${name}`, () => {
    const run = <A, E>(
      body: Effect.Effect<A, E, BillingTest>,
      provider: Layer.Layer<PaymentProvider.PaymentProvider> = PaymentProvider.layerNone
    ) => body.pipe(Effect.provide(backend.layer(provider)), Effect.scoped)

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

    it.live("property: over the whole range, the ledger sums to the balance and USD answers are exact", () =>
      run(Effect.gen(function*() {
        const context = yield* Effect.context<BillingTest>()
        let accountNo = 0
        const property = FastCheck.asyncProperty(FastCheck.array(operation, { minLength: 1, maxLength: 12 }), (ops) =>
          Effect.runPromise(Effect.provide(checkSequence(`acct_p${++accountNo}`, ops), context)))
        yield* Effect.promise(() =>
          FastCheck.assert(property, { numRuns: 40 })
        )
      })), 120_000)

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
        expect((yield* Effect.forEach(["key_p", "key_c2", "key_g"], accounts.keySpend)).map((k) =>
          k.spentMicros
        ))
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
        const refunds = (yield* (yield* BillingLedger).entries(acct)).filter((e) =>
          e.kind === "refund"
        )
        expect(refunds.map((e) => e.amountMicros)).toEqual([2 * usd, 1 * usd])
        // a refund of another account's task gives nothing
        yield* open(0, {}, "acct_b")
        yield* refund("task_2", 1 * usd, key, "acct_b")
        assert.strictEqual((yield* consistent("acct_b")).balanceMicros, 0)
      })))

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

    it.live("concurrent charges never pass the key's spend limit nor the account's monthly limit", () =>
      run(Effect.gen(function*() {
        const tx = yield* Tx
        const accounts = yield* BillingAccounts
        yield* open(1000 * usd, { monthlySpendLimitMicros: 40 * usd })
        yield* accounts.registerKey(acct, key, 30 * usd)
        yield* accounts.registerKey(acct, "key_b", null)
        const exits = yield* Effect.forEach(
          Array.from({ length: 120 }, (_, i) =>
            i),
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
      })), 60_000)

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
          Array.from({ length: 150 }, (_, i) =>
            i),
          (i) =>
            Effect.exit(tx.run(charge(`task_${i}`, 1 * usd, spenders[i % spenders.length]))),
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
  })
