/**
 * First start (decisions.md §9): on a database without any account, create one with a live and a test key and
 * answer them, so the example server can print them once. Otherwise answer nothing. Several processes starting at
 * once on one PostgreSQL database serialize on an advisory lock, so exactly one of them creates the account.
 *
 * @since 0.1.0
 */
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import type { Account, ApiKey, Errors } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AccountStore } from "./AccountStore.js"
import { createAccount } from "./AdminService.js"
import { insertKey, unavailable } from "./KeyService.js"

/**
 * What a first start created.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bootstrapped {
  readonly account: Account.Account
  /** The full keys: shown once, never stored. */
  readonly live: ApiKey.ApiKeyCreated
  readonly test: ApiKey.ApiKeyCreated
}

/**
 * Options of the first account.
 *
 * @since 0.1.0
 * @category models
 */
export interface BootstrapOptions {
  readonly accountName?: string
}

/**
 * Creates the first account and its two keys when there is no account yet.
 *
 * @since 0.1.0
 * @category utils
 */
export const bootstrap = (
  options: BootstrapOptions = {}
): Effect.Effect<
  Option.Option<Bootstrapped>,
  Errors.ServiceUnavailable | Errors.ValidationError,
  AccountStore | BillingAccounts
> =>
  Effect.gen(function*() {
    const store = yield* AccountStore
    return yield* store.transaction(Effect.gen(function*() {
      yield* store.lockBootstrap
      if (yield* store.hasAccounts) return Option.none()
      const account = yield* createAccount({ name: options.accountName ?? "Default account" })
      const base = { accountId: account.id, permissions: {}, ipWhitelist: [], spendLimitMicros: null, expiresAt: null }
      const live = yield* insertKey({ ...base, name: "Default live key", environment: "live" })
      const test = yield* insertKey({ ...base, name: "Default test key", environment: "test" })
      return Option.some({ account, live, test })
    }))
  }).pipe(unavailable)
