/** An in-memory `BillingAccounts` for the accounts tests, with a handle to set key spend and read what was registered. */
import { BillingAccounts, type BillingState } from "@mediagate/billing/BillingAccounts"
import { defaultCreditLimitMicros } from "@mediagate/billing/Ledger"
import { Errors } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Test handle of the fake. */
export class FakeBilling extends Context.Tag("test/FakeBilling")<FakeBilling, {
  readonly setSpent: (keyId: string, micros: number) => void
  readonly registered: Map<string, { readonly accountId: string; readonly spendLimitMicros: number | null }>
  readonly credits: Array<{ readonly accountId: string; readonly micros: number; readonly note: string | undefined }>
}>() {}

/** A fresh fake per layer build. */
export const layer: Layer.Layer<BillingAccounts | FakeBilling> = Layer.effectContext(Effect.sync(() => {
  const states = new Map<string, BillingState>()
  const spent = new Map<string, number>()
  const registered = new Map<string, { accountId: string; spendLimitMicros: number | null }>()
  const credits: Array<{ accountId: string; micros: number; note: string | undefined }> = []
  const find = (accountId: string) => {
    const state = states.get(accountId)
    return state === undefined
      ? Effect.fail(new Errors.AccountNotFound({ message: `account ${accountId} not found` }))
      : Effect.succeed(state)
  }
  const service: BillingAccounts["Type"] = {
    open: (accountId, settings, openingMicros) =>
      Effect.sync(() => {
        const state: BillingState = {
          ...settings,
          creditLimitMicros: settings.creditLimitMicros ?? defaultCreditLimitMicros,
          accountId,
          balanceMicros: openingMicros,
          monthToDateMicros: 0
        }
        states.set(accountId, state)
        if (openingMicros > 0) credits.push({ accountId, micros: openingMicros, note: "opening" })
        return state
      }),
    state: find,
    update: (accountId, settings) =>
      Effect.map(find(accountId), (state) => {
        const next = {
          ...state,
          ...settings,
          creditLimitMicros: settings.creditLimitMicros ?? (settings.creditLimitMicros === null
            ? defaultCreditLimitMicros
            : state.creditLimitMicros)
        }
        states.set(accountId, next)
        return next
      }),
    credit: (accountId, micros, note) =>
      Effect.map(find(accountId), (state) => {
        const next = { ...state, balanceMicros: state.balanceMicros + micros }
        states.set(accountId, next)
        credits.push({ accountId, micros, note })
        return next
      }),
    registerKey: (accountId, keyId, spendLimitMicros) =>
      Effect.sync(() => void registered.set(keyId, { accountId, spendLimitMicros })),
    keySpend: (keyId) =>
      Effect.sync(() => ({
        keyId,
        spendLimitMicros: registered.get(keyId)?.spendLimitMicros ?? null,
        spentMicros: spent.get(keyId) ?? 0
      }))
  }
  return Context.make(BillingAccounts, service).pipe(
    Context.add(FakeBilling, { setSpent: (keyId, micros) => void spent.set(keyId, micros), registered, credits })
  )
}))
