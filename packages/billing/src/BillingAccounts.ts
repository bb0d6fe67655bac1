/**
 * The billing side of accounts and keys: what the accounts package (admin API, key management) asks of billing.
 * Billing owns money: balances, billing settings, key spend counters and the ledger. Accounts own identities:
 * names, keys, permissions.
 *
 * Every method runs on the caller's transaction when there is one (SQL implementations use the `SqlClient` in
 * context), so an account and its billing row are created together.
 *
 * @since 0.1.0
 */
import type { Account, Errors } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * Billing settings of an account (money in integer micro-dollars).
 *
 * @since 0.1.0
 * @category models
 */
export interface BillingSettings {
  readonly billingMode: Account.BillingMode
  /** Calendar-month (UTC) spend limit; null: none. */
  readonly monthlySpendLimitMicros: number | null
  readonly autoTopUpEnabled: boolean
  readonly autoTopUpThresholdMicros: number | null
  readonly autoTopUpAmountMicros: number | null
  /**
   * Postpaid: how far the balance may go below zero (a charge past it is refused); null: billing's configured
   * default (`MEDIAGATE_DEFAULT_CREDIT_LIMIT`).
   */
  readonly creditLimitMicros: number | null
}

/**
 * Default settings of a new account: prepaid, no limits, no auto top-up, the configured credit limit.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSettings: BillingSettings = {
  billingMode: "prepaid",
  monthlySpendLimitMicros: null,
  autoTopUpEnabled: false,
  autoTopUpThresholdMicros: null,
  autoTopUpAmountMicros: null,
  creditLimitMicros: null
}

/**
 * The billing state of an account.
 *
 * @since 0.1.0
 * @category models
 */
export interface BillingState extends BillingSettings {
  readonly accountId: string
  /** The credit limit in force: the account's own, or billing's configured default. */
  readonly creditLimitMicros: number
  readonly balanceMicros: number
  /** Net charges of the current calendar month (UTC). */
  readonly monthToDateMicros: number
}

/**
 * Key spend: its limit and what the key and its descendants have spent (net of refunds).
 *
 * @since 0.1.0
 * @category models
 */
export interface KeySpend {
  readonly keyId: string
  readonly spendLimitMicros: number | null
  readonly spentMicros: number
}

/**
 * The billing side of accounts and keys.
 *
 * @since 0.1.0
 * @category services
 */
export class BillingAccounts extends Context.Tag("@mediagate/billing/BillingAccounts")<BillingAccounts, {
  /** Opens billing for a new account, with an opening credit (a ledger entry) when `openingMicros` > 0. */
  readonly open: (
    accountId: string,
    settings: BillingSettings,
    openingMicros: number
  ) => Effect.Effect<BillingState, PersistenceError>
  /** The billing state of an account; `AccountNotFound` when billing was never opened for it. */
  readonly state: (accountId: string) => Effect.Effect<BillingState, Errors.AccountNotFound | PersistenceError>
  /** Changes billing settings (only the given ones). */
  readonly update: (
    accountId: string,
    settings: Partial<BillingSettings>
  ) => Effect.Effect<BillingState, Errors.AccountNotFound | PersistenceError>
  /**
   * Credits an account (a `top_up` ledger entry; `note` is kept with it). `ValidationError` when the balance would
   * pass the bound of balances (`Ledger.maxBalanceMicros`), checked under the account's lock.
   */
  readonly credit: (
    accountId: string,
    amountMicros: number,
    note: string | undefined
  ) => Effect.Effect<BillingState, Errors.AccountNotFound | Errors.ValidationError | PersistenceError>
  /**
   * Registers a key's spend limit (null: none) when the key is created, with its ancestors (root first; none or
   * empty: a root key). Every charge of the key then counts against its own limit and each ancestor's, and a refund
   * gives back to all of them.
   */
  readonly registerKey: (
    accountId: string,
    keyId: string,
    spendLimitMicros: number | null,
    ancestors?: ReadonlyArray<string>
  ) => Effect.Effect<void, PersistenceError>
  /**
   * A key's spend: its limit and what it and its descendants have spent, net of refunds (what it may still spend
   * decides the no-escalation rule of key creation).
   */
  readonly keySpend: (keyId: string) => Effect.Effect<KeySpend, PersistenceError>
}>() {}
