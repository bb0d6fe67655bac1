/**
 * The contract's `AdminService` (decisions.md §5 admin API) on an {@link AccountStore} and billing's
 * `BillingAccounts`: accounts carry identity (name, creation time) here and money (balance, billing settings) in
 * billing; an account is answered in the contract's `Account` shape (USD numbers from micro-dollars).
 *
 * The operator views (docs/operations.md "Operator endpoints and CLI"): the account list (newest first, keyset
 * cursor, search by id or name prefix), an account's keys and their revocation (with descendants, as the
 * account-side revoke; this process's key cache forgets them at once, other processes within their cache TTL);
 * tasks, deliveries and the system status come from the engine's and the webhooks' ports (`Services.AdminTasks`,
 * `Services.AdminWebhooks`), which this service combines.
 *
 * @since 0.1.0
 */
import {
  BillingAccounts,
  type BillingSettings,
  type BillingState,
  defaultSettings
} from "@mediagate/billing/BillingAccounts"
import { toBalance } from "@mediagate/billing/Ledger"
import { type Account, type ApiKey, Envelope, Errors, Money, Services, Task, Tracing } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type AccountRow, AccountStore } from "./AccountStore.js"
import { checkNotPast, insertKey, KeyCache, KeyUsage, toRecord, unavailable } from "./KeyService.js"

const microsOrNull = (usd: number | null) => usd === null ? null : Money.toMicros(usd)

/**
 * An account as the admin API shows it: its identity and its billing state's balance.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toAccount = (row: AccountRow, state: BillingState): Account.Account => ({
  id: row.id,
  name: row.name,
  ...toBalance(state),
  creditLimit: Money.fromMicros(state.creditLimitMicros),
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
  if (body.creditLimit !== undefined) settings.creditLimitMicros = microsOrNull(body.creditLimit)
  return settings
}

/** Auto top-up needs an amount: refuses settings that enable it without one. */
const checkAutoTopUp = (settings: BillingSettings) =>
  settings.autoTopUpEnabled && settings.autoTopUpAmountMicros === null
    ? Effect.fail(new Errors.ValidationError({ message: "autoTopUpAmount: required when autoTopUpEnabled is true" }))
    : Effect.void

/**
 * Creates an account and opens its billing (with the opening credit) in one transaction.
 *
 * @since 0.1.0
 * @category utils
 */
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

/**
 * What the admin service is built on.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = AccountStore | BillingAccounts | Services.AdminTasks | Services.AdminWebhooks

/**
 * Builds the admin service. When this process authenticates keys too (`KeyService.layer` in context), revocations
 * drop the keys from its cache at once and key lists show the buffered `lastUsedAt` (flushed first).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Services.AdminService["Type"], never, Requirements> = Effect.gen(
  function*() {
    const store = yield* AccountStore
    const billing = yield* BillingAccounts
    const tasks = yield* Services.AdminTasks
    const webhooks = yield* Services.AdminWebhooks
    const keyCache = yield* Effect.serviceOption(KeyCache)
    const keyUsage = yield* Effect.serviceOption(KeyUsage)
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

    /** An account row with its billing state (every account has one: both are written in one transaction). */
    const withBalance = (row: AccountRow) =>
      Effect.map(
        billing.state(row.id).pipe(
          Effect.catchTag("AccountNotFound", () => Effect.dieMessage(`account ${row.id} has no billing`))
        ),
        (state) => toAccount(row, state)
      )

    const listAccounts: Services.AdminService["Type"]["listAccounts"] = (query) =>
      Effect.gen(function*() {
        const beforeId = yield* Envelope.decodeIdCursor("acct_", query.cursor)
        const page = yield* store.listAccounts({
          search: query.search,
          beforeId,
          limit: query.limit ?? Task.defaultPageSize
        })
        return Envelope.idPage(page, yield* Effect.forEach(page.items, withBalance, { concurrency: 8 }))
      }).pipe(unavailable, Tracing.span("Admin.listAccounts"))

    const listKeys: Services.AdminService["Type"]["listKeys"] = (accountId) =>
      Effect.gen(function*() {
        yield* findRow(accountId)
        // the uses this process buffered: written first, so that lastUsedAt is current
        if (Option.isSome(keyUsage)) yield* Effect.ignore(keyUsage.value.flush)
        const rows = yield* store.listKeys(accountId)
        return yield* Effect.forEach(
          rows,
          (row) => Effect.map(billing.keySpend(row.id), (spend) => toRecord(row, spend.spentMicros)),
          { concurrency: 8 }
        )
      }).pipe(unavailable, Tracing.span("Admin.listKeys"))

    const revokeKey: Services.AdminService["Type"]["revokeKey"] = (id) =>
      Effect.gen(function*() {
        const notFound = new Errors.ApiKeyNotFound({ message: `API key ${id} not found` })
        const found = yield* store.findKeyById(id)
        if (Option.isNone(found) || found.value.revokedAt !== null) return yield* notFound
        const now = yield* Clock.currentTimeMillis
        const revoked = yield* store.transaction(store.revokeKey(found.value.accountId, id, now))
        if (!revoked) return yield* notFound
        if (Option.isSome(keyCache)) yield* keyCache.value.invalidate(id)
        return { id, deleted: true as const }
      }).pipe(unavailable, Tracing.span("Admin.revokeKey"))

    const system: Services.AdminService["Type"]["system"] = Effect.map(
      Effect.all([tasks.status, webhooks.backlog], { concurrency: 2 }),
      ([engine, backlog]) => ({
        tasks: engine.tasks,
        webhooks: backlog,
        nodes: engine.nodes,
        checked_at: new Date(engine.checkedAt).toISOString()
      })
    ).pipe(Tracing.span("Admin.system"))

    return {
      createAccount: (body) => createAccount(body).pipe(Effect.provide(context), unavailable),
      getAccount,
      updateAccount,
      credit,
      createKey,
      listAccounts,
      listKeys,
      revokeKey,
      listTasks: tasks.list,
      getTask: tasks.get,
      listDeliveries: webhooks.deliveries,
      system
    }
  }
)

/**
 * The admin service as a layer. It needs the engine's and the webhooks' operator ports besides the accounts stores
 * and billing (`TaskAdmin.layer` of `@mediagate/engine`, `WebhookAdmin.layer` of `@mediagate/webhooks`), so it is
 * composed where those packages meet (`@mediagate/node`), not in `MemoryAccounts` or `SqlAccounts`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services.AdminService, never, Requirements> = Layer.effect(
  Services.AdminService,
  make
)
