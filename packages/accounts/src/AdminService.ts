/**
 * The contract's `AdminService` (decisions.md §5 admin API) on an {@link AccountStore} and billing's
 * `BillingAccounts`: accounts carry identity (name, creation time) here and money (balance, billing settings) in
 * billing; an account is answered in the contract's `Account` shape (USD numbers from micro-dollars).
 *
 * @since 0.1.0
 */
import { type BillingSettings, type BillingState, BillingAccounts, defaultSettings } from "@mediagate/billing/BillingAccounts"
import { toBalance } from "@mediagate/billing/Ledger"
import { type Account, type ApiKey, Errors, Money, Services } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AccountStore, type AccountRow } from "./AccountStore.js"
import { checkNotPast, insertKey, unavailable } from "./KeyService.js"

const microsOrNull = (usd: number | null) => usd === null ? null : Money.toMicros(usd)

/** An account as the admin API shows it: its identity and its billing state's balance. */
export const toAccount = (row: AccountRow, state: BillingState): Account.Account => ({
  id: row.id,
  name: row.name,
  ...toBalance(state),
  createdAt: new Date(row.createdAt).toISOString()
})

/** The billing settings a create or update body gives (only those present). */
const settingsOf = (body: Account.AccountUpdate): Partial<BillingSettings> => {
  const settings: { -readonly [K in keyof BillingSettings]?: BillingSettings[K] } = {}
  if (body.billingMode !== undefined) settings.billingMode = body.billingMode
  if (body.monthlySpendLimit !== undefined) settings.monthlySpendLimitMicros = microsOrNull(body.monthlySpendLimit)
  if (body.autoTopUpEnabled !== undefined) settings.autoTopUpEnabled = body.autoTopUpEnabled
  if (body.autoTopUpThreshold !== undefined) settings.autoTopUpThresholdMicros = microsOrNull(body.autoTopUpThreshold)
  if (body.autoTopUpAmount !== undefined) settings.autoTopUpAmountMicros = microsOrNull(body.autoTopUpAmount)
  return settings
}

/** Auto top-up needs an amount: refuses settings that enable it without one. */
const checkAutoTopUp = (settings: BillingSettings) =>
  settings.autoTopUpEnabled && settings.autoTopUpAmountMicros === null
    ? Effect.fail(new Errors.ValidationError({ message: "autoTopUpAmount: required when autoTopUpEnabled is true" }))
    : Effect.void

/** Creates an account and opens its billing (with the opening credit) in one transaction. */
export const createAccount = (body: Account.AccountCreate) =>
  Effect.gen(function*() {
    const store = yield* AccountStore
    const billing = yield* BillingAccounts
    const settings: BillingSettings = { ...defaultSettings, ...settingsOf(body) }
    yield* checkAutoTopUp(settings)
    const now = yield* Clock.currentTimeMillis
    const row: AccountRow = { id: `acct_${Ids.ulid(now)}`, name: body.name, createdAt: now }
    const state = yield* store.transaction(Effect.zipRight(
      store.insertAccount(row),
      billing.open(row.id, settings, Money.toMicros(body.balance ?? 0))
    ))
    return toAccount(row, state)
  })

/** Builds the admin service. */
export const make: Effect.Effect<Services.AdminService["Type"], never, AccountStore | BillingAccounts> = Effect.gen(
  function*() {
    const store = yield* AccountStore
    const billing = yield* BillingAccounts
    const context = yield* Effect.context<AccountStore | BillingAccounts>()

    const findRow = (id: string) =>
      Effect.flatMap(store.findAccount(id), (found) =>
        Option.isSome(found)
          ? Effect.succeed(found.value)
          : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })))

    const getAccount: Services.AdminService["Type"]["getAccount"] = (id) =>
      Effect.gen(function*() {
        const row = yield* findRow(id)
        return toAccount(row, yield* billing.state(id))
      }).pipe(unavailable)

    const updateAccount: Services.AdminService["Type"]["updateAccount"] = (id, body) =>
      Effect.gen(function*() {
        const row = yield* findRow(id)
        const current = yield* billing.state(id)
        const settings = settingsOf(body)
        yield* checkAutoTopUp({ ...current, ...settings })
        return yield* store.transaction(Effect.gen(function*() {
          if (body.name !== undefined) yield* store.renameAccount(id, body.name)
          const state = Object.keys(settings).length === 0 ? current : yield* billing.update(id, settings)
          return toAccount(body.name === undefined ? row : { ...row, name: body.name }, state)
        }))
      }).pipe(unavailable)

    const credit: Services.AdminService["Type"]["credit"] = (id, body) =>
      Effect.gen(function*() {
        const row = yield* findRow(id)
        const state = yield* billing.credit(id, Money.toMicros(body.amount), body.note)
        return toAccount(row, state)
      }).pipe(unavailable)

    const createKey: Services.AdminService["Type"]["createKey"] = (accountId, body: ApiKey.ApiKeyCreate) =>
      Effect.gen(function*() {
        yield* findRow(accountId)
        yield* checkNotPast(body.expiresAt, yield* Clock.currentTimeMillis)
        return yield* insertKey({
          accountId,
          name: body.name,
          environment: body.environment ?? "live",
          permissions: body.permissions ?? {},
          ipWhitelist: body.ipWhitelist ?? [],
          spendLimitMicros: microsOrNull(body.spendLimit ?? null),
          expiresAt: body.expiresAt?.getTime() ?? null,
          requestsPerMinute: body.rateLimit?.requestsPerMinute ?? null,
          maxInFlightTasks: body.rateLimit?.maxInFlightTasks ?? null
        })
      }).pipe(Effect.provide(context), unavailable)

    return {
      createAccount: (body) => createAccount(body).pipe(Effect.provide(context), unavailable),
      getAccount,
      updateAccount,
      credit,
      createKey
    }
  }
)

/** The admin service as a layer. */
export const layer: Layer.Layer<Services.AdminService, never, AccountStore | BillingAccounts> = Layer.effect(
  Services.AdminService,
  make
)
