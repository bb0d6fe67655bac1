/**
 * What the suites of billing's conformance suite share: a backend and the services it provides, the runner of a
 * case on a fresh backend, and the fixtures and steps the cases use (an account, its key, charges, refunds, the
 * consistency check of the ledger against the balance).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { assert } from "@effect/vitest"
import type { Services } from "@mediagate/contract"
import type { Principal } from "@mediagate/contract/Security"
import { Billing } from "@mediagate/engine/Billing"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BillingAccounts, type BillingSettings, defaultSettings } from "../src/BillingAccounts.js"
import { BillingLedger } from "../src/Ledger.js"
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

/** Runs a case on a fresh instance of the backend, with the payment provider given (default: none). */
export const runner = (backend: Backend) =>
<A, E>(
  body: Effect.Effect<A, E, BillingTest>,
  provider: Layer.Layer<PaymentProvider.PaymentProvider> = PaymentProvider.layerNone
) => body.pipe(Effect.provide(backend.layer(provider)), Effect.scoped)

export const usd = 1_000_000
export const acct = "acct_a"
export const key = "key_a"

export const charge = (taskId: string, amountMicros: number, keyId = key, accountId = acct) =>
  Effect.flatMap(
    Billing,
    (billing) => billing.charge({ accountId, keyId, taskId, amountMicros, description: `test ${taskId}` })
  )

export const refund = (taskId: string, amountMicros: number, keyId = key, accountId = acct) =>
  Effect.flatMap(Billing, (billing) => billing.refund({ accountId, keyId, taskId, amountMicros, reason: "refund" }))

export const open = (openingMicros: number, settings: Partial<BillingSettings> = {}, accountId = acct) =>
  Effect.flatMap(
    BillingAccounts,
    (accounts) => accounts.open(accountId, { ...defaultSettings, ...settings }, openingMicros)
  )

export const state = (accountId = acct) => Effect.flatMap(BillingAccounts, (accounts) => accounts.state(accountId))

/** The state, after checking that the ledger sums to the balance and never went below zero where it must not. */
export const consistent = (accountId = acct) =>
  Effect.gen(function*() {
    const entries = yield* (yield* BillingLedger).entries(accountId)
    const current = yield* state(accountId)
    const sum = entries.reduce((total, entry) => total + entry.amountMicros, 0)
    assert.strictEqual(sum, current.balanceMicros, "the ledger sums to the balance")
    return current
  })

export const principal = (accountId = acct): Principal => Fixtures.principal({ accountId, keyId: key })

export const brokenProvider = Layer.succeed(PaymentProvider.PaymentProvider, {
  name: "broken",
  requestTopUp: () => Effect.fail(new PaymentProvider.PaymentProviderError({ message: "payment network down" }))
})
