/**
 * Billing in memory: the engine's `Billing`, `BillingAccounts`, the contract's `BillingService` and
 * `BillingLedger`, with the semantics of `SqlBilling` (see there) and the same conformance suite. One semaphore
 * makes every operation atomic. There are no transactions: a charge made inside a caller's step that fails later
 * stays charged (use the SQL implementation when that matters).
 *
 * @since 0.1.0
 */
import type { Services } from "@mediagate/contract"
import type { Billing } from "@mediagate/engine/Billing"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type { BillingAccounts, BillingSettings, BillingState } from "./BillingAccounts.js"
import {
  balanceService,
  type BillingLedger,
  type BillingOptions,
  type BillingServices,
  creditLimitExceeded,
  creditOutOfRange,
  defaultCreditLimitMicros,
  entry,
  inRange,
  insufficientBalance,
  keyLimitExceeded,
  layerOf,
  type LedgerEntry,
  monthlyLimitExceeded,
  monthOf,
  type NewEntry,
  notFound,
  refundParts,
  requestTopUp,
  requireAmount,
  topUpDue,
  type TopUpRecord
} from "./Ledger.js"
import { PaymentProvider } from "./PaymentProvider.js"

interface AccountRow {
  settings: BillingSettings
  balanceMicros: number
}

interface KeyRow {
  spendLimitMicros: number | null
  /** What the key and its descendants spent. */
  spentMicros: number
  /** Root first. */
  ancestors: ReadonlyArray<string>
}

/**
 * Builds billing in memory with `options` (the default credit limit of postpaid accounts); the `PaymentProvider`
 * in context serves auto top-up.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWith = (
  options: BillingOptions = {}
): Effect.Effect<BillingServices, never, PaymentProvider> =>
  Effect.gen(function*() {
    const provider = yield* PaymentProvider
    const defaultCreditLimit = options.defaultCreditLimitMicros ?? defaultCreditLimitMicros
    const lock = yield* Effect.makeSemaphore(1)
    const atomic = lock.withPermits(1)

    const accounts = new Map<string, AccountRow>()
    const keys = new Map<string, KeyRow>()
    /** `${accountId} ${month}` → net charges. */
    const months = new Map<string, number>()
    const ledger: Array<LedgerEntry> = []
    const topUps: Array<TopUpRecord> = []

    const monthKey = (accountId: string, month: string) => `${accountId} ${month}`

    /** The spend rows of a key and its ancestors (those that exist). */
    const chainOf = (keyId: string): ReadonlyArray<KeyRow> => {
      const own = keys.get(keyId)
      if (own === undefined) return []
      const chain = [own]
      for (const id of own.ancestors) {
        const row = keys.get(id)
        if (row !== undefined) chain.push(row)
      }
      return chain
    }

    const append = (entry: NewEntry): void => {
      ledger.push({ ...entry, id: ledger.length + 1 })
    }

    const stateOf = (accountId: string, row: AccountRow, now: number): BillingState => ({
      ...row.settings,
      creditLimitMicros: row.settings.creditLimitMicros ?? defaultCreditLimit,
      accountId,
      balanceMicros: row.balanceMicros,
      monthToDateMicros: months.get(monthKey(accountId, monthOf(now))) ?? 0
    })

    const credit = (accountId: string, row: AccountRow, amountMicros: number, description: string, now: number) => {
      row.balanceMicros += amountMicros
      append(entry("top_up", { accountId }, amountMicros, description, now))
    }

    const autoTopUp = (accountId: string, row: AccountRow, now: number) =>
      Effect.suspend(() => {
        const amountMicros = topUpDue(row.settings, row.balanceMicros)
        if (amountMicros === undefined) return Effect.void
        return requestTopUp(provider, { accountId, amountMicros }, (status) =>
          Effect.sync(() => {
            topUps.push({
              id: topUps.length + 1,
              accountId,
              amountMicros,
              provider: provider.name,
              status,
              createdAt: now
            })
            if (status === "credited") credit(accountId, row, amountMicros, `auto top-up (${provider.name})`, now)
          }))
      })

    const billing: Billing["Type"] = {
      charge: (charge) =>
        Effect.gen(function*() {
          yield* requireAmount("a charge", charge.amountMicros)
          if (charge.amountMicros === 0) return
          const now = yield* Clock.currentTimeMillis
          const month = monthOf(now)
          const row = accounts.get(charge.accountId)
          if (row === undefined) return yield* insufficientBalance(charge.amountMicros, undefined)
          if (row.settings.billingMode === "prepaid" && row.balanceMicros < charge.amountMicros) {
            return yield* insufficientBalance(charge.amountMicros, row.balanceMicros)
          }
          const creditLimit = row.settings.creditLimitMicros ?? defaultCreditLimit
          if (row.settings.billingMode === "postpaid" && row.balanceMicros - charge.amountMicros < -creditLimit) {
            return yield* creditLimitExceeded(charge.amountMicros, row.balanceMicros, creditLimit)
          }
          // the key's limit and every ancestor's: the one with the least left refuses
          const chain = chainOf(charge.keyId)
          const over = chain
            .filter((k) => k.spendLimitMicros !== null && k.spentMicros + charge.amountMicros > k.spendLimitMicros)
            .sort((a, b) => (a.spendLimitMicros! - a.spentMicros) - (b.spendLimitMicros! - b.spentMicros))[0]
          if (over !== undefined) {
            return yield* keyLimitExceeded(charge.amountMicros, over.spendLimitMicros!, over.spentMicros)
          }
          const monthSpent = months.get(monthKey(charge.accountId, month)) ?? 0
          const monthlyLimit = row.settings.monthlySpendLimitMicros
          if (monthlyLimit !== null && monthSpent + charge.amountMicros > monthlyLimit) {
            return yield* monthlyLimitExceeded(charge.amountMicros, monthlyLimit, monthSpent)
          }
          append(entry("charge", charge, -charge.amountMicros, charge.description, now))
          row.balanceMicros -= charge.amountMicros
          if (chain.length === 0) {
            keys.set(charge.keyId, { spendLimitMicros: null, spentMicros: charge.amountMicros, ancestors: [] })
          }
          for (const k of chain) k.spentMicros += charge.amountMicros
          months.set(monthKey(charge.accountId, month), monthSpent + charge.amountMicros)
          yield* autoTopUp(charge.accountId, row, now)
        }).pipe(atomic),

      refund: (refund) =>
        Effect.gen(function*() {
          yield* requireAmount("a refund", refund.amountMicros)
          const row = accounts.get(refund.accountId)
          if (row === undefined || refund.amountMicros === 0) return
          const now = yield* Clock.currentTimeMillis
          // what is left to refund of the task's charges, by the month they were made in
          const open = new Map<string, number>()
          for (const entry of ledger) {
            if (entry.accountId !== refund.accountId || entry.taskId !== refund.taskId) continue
            if (entry.kind === "charge" || entry.kind === "refund") {
              open.set(entry.month, (open.get(entry.month) ?? 0) - entry.amountMicros)
            }
          }
          let total = 0
          const parts = refundParts(
            refund.amountMicros,
            Array.from(open, ([month, remaining]) => ({ month, remaining }))
          )
          for (const { amountMicros: part, month } of parts) {
            append(entry("refund", refund, part, refund.reason, now, month))
            const key = monthKey(refund.accountId, month)
            months.set(key, Math.max(0, (months.get(key) ?? 0) - part))
            total += part
          }
          if (total === 0) return
          row.balanceMicros += total
          for (const k of chainOf(refund.keyId)) k.spentMicros = Math.max(0, k.spentMicros - total)
        }).pipe(atomic)
    }

    const withAccount = <A>(accountId: string, f: (row: AccountRow, now: number) => A) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const row = accounts.get(accountId)
        return row === undefined ? Effect.fail(notFound(accountId)) : Effect.sync(() => f(row, now))
      })

    const billingAccounts: BillingAccounts["Type"] = {
      open: (accountId, settings, openingMicros) =>
        Effect.gen(function*() {
          yield* requireAmount("an opening credit", openingMicros)
          if (accounts.has(accountId)) {
            return yield* new PersistenceError({ message: `billing: account ${accountId} is already open` })
          }
          const now = yield* Clock.currentTimeMillis
          const row: AccountRow = { settings: { ...settings }, balanceMicros: 0 }
          accounts.set(accountId, row)
          if (openingMicros > 0) credit(accountId, row, openingMicros, "opening credit", now)
          return stateOf(accountId, row, now)
        }).pipe(atomic),
      state: (accountId) => withAccount(accountId, (row, now) => stateOf(accountId, row, now)).pipe(atomic),
      update: (accountId, settings) =>
        withAccount(accountId, (row, now) => {
          row.settings = { ...row.settings, ...settings }
          return stateOf(accountId, row, now)
        }).pipe(atomic),
      credit: (accountId, amountMicros, note) =>
        Effect.zipRight(
          requireAmount("a credit", amountMicros),
          Effect.flatMap(
            withAccount(accountId, (row, now) => {
              if (!inRange(row.balanceMicros + amountMicros)) {
                return Effect.fail(creditOutOfRange(amountMicros, row.balanceMicros))
              }
              if (amountMicros > 0) credit(accountId, row, amountMicros, note ?? "credit", now)
              return Effect.succeed(stateOf(accountId, row, now))
            }),
            (result) => result
          )
        ).pipe(atomic),
      registerKey: (_accountId, keyId, spendLimitMicros, ancestors = []) =>
        Effect.sync(() => {
          keys.set(keyId, { spentMicros: 0, ...keys.get(keyId), spendLimitMicros, ancestors: [...ancestors] })
        }).pipe(atomic),
      keySpend: (keyId) =>
        Effect.sync(() => {
          const row = keys.get(keyId)
          return {
            keyId,
            spendLimitMicros: row?.spendLimitMicros ?? null,
            spentMicros: row?.spentMicros ?? 0
          }
        }).pipe(atomic)
    }

    const ledgerService: BillingLedger["Type"] = {
      entries: (accountId) => Effect.sync(() => ledger.filter((entry) => entry.accountId === accountId)).pipe(atomic),
      topUpRequests: (accountId) => Effect.sync(() => topUps.filter((r) => r.accountId === accountId)).pipe(atomic),
      page: (accountId, { before, kind, limit }) =>
        Effect.sync(() => {
          const matching = ledger.filter((entry) =>
            entry.accountId === accountId && (kind === undefined || entry.kind === kind)
          )
          const entries: Array<LedgerEntry> = []
          for (let i = matching.length - 1; i >= 0 && entries.length < limit; i--) {
            const entry = matching[i]!
            if (before === undefined || entry.id < before) entries.push(entry)
          }
          return { entries, total: matching.length }
        }).pipe(atomic)
    }

    return {
      billing,
      accounts: billingAccounts,
      balances: balanceService(billingAccounts.state, ledgerService.page),
      ledger: ledgerService
    }
  })

/**
 * Builds billing in memory with the default credit limit (100 USD).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<BillingServices, never, PaymentProvider> = makeWith()

/**
 * Billing in memory with `options`: `Billing`, `BillingAccounts`, the contract's `BillingService` and
 * `BillingLedger`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: BillingOptions = {}): Layer.Layer<
  Billing | BillingAccounts | Services.BillingService | BillingLedger,
  never,
  PaymentProvider
> => layerOf(makeWith(options))

/**
 * Billing in memory with the default credit limit (100 USD).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  Billing | BillingAccounts | Services.BillingService | BillingLedger,
  never,
  PaymentProvider
> = layerWith()
