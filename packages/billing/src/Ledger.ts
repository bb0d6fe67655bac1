/**
 * The read side of the ledger and what every billing implementation (memory, SQL) shares: the ledger's records (as
 * Schemas, which are also their SQL rows), the calendar month of a time, new entries, the auto top-up request, the
 * error messages of refused charges and the contract's `Balance` of a billing state.
 *
 * @since 0.1.0
 */
import { type Account, type Envelope, Errors, type Ledger, Money, Services, Task } from "@mediagate/contract"
import { Billing } from "@mediagate/engine/Billing"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { BillingAccounts, type BillingSettings, type BillingState, defaultSettings } from "./BillingAccounts.js"
import type { PaymentProvider, TopUpRequest } from "./PaymentProvider.js"

/**
 * Kinds of ledger entries.
 *
 * @since 0.1.0
 * @category constants
 */
export const ledgerKinds = ["charge", "refund", "top_up", "adjustment"] as const
/**
 * A kind of ledger entry.
 *
 * @since 0.1.0
 * @category models
 */
export type LedgerKind = typeof ledgerKinds[number]

const { column } = SqlRows

/**
 * A ledger entry before it is appended (and given its id).
 *
 * @since 0.1.0
 * @category schemas
 */
export const NewEntry = Schema.Struct({
  accountId: column("account_id", Schema.String),
  kind: SqlRows.literal(...ledgerKinds),
  amountMicros: column("amount_micros", SqlRows.Number),
  keyId: column("key_id", Schema.NullOr(Schema.String)),
  taskId: column("task_id", Schema.NullOr(Schema.String)),
  description: Schema.String,
  /**
   * The calendar month (UTC, `YYYY-MM`) the entry counts in: for a charge the month it was made, for a refund the
   * month of the charge it gives back, otherwise the month of `createdAt`.
   */
  month: Schema.String,
  /** Epoch ms (Effect `Clock`). */
  createdAt: column("created_at", SqlRows.Number)
})
/**
 * A ledger entry before it is appended.
 *
 * @since 0.1.0
 * @category schemas
 */
export interface NewEntry extends Schema.Schema.Type<typeof NewEntry> {}

/**
 * One entry of the append-only ledger (a row of `<prefix>billing_ledger` in SQL). `amountMicros` is signed: charges
 * are negative, refunds and top-ups positive, adjustments either. The sum of an account's entries is its balance.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LedgerEntry = Schema.Struct({
  /** Increasing in insertion order. */
  id: SqlRows.Number,
  ...NewEntry.fields
})
/**
 * One entry of the append-only ledger.
 *
 * @since 0.1.0
 * @category schemas
 */
export interface LedgerEntry extends Schema.Schema.Type<typeof LedgerEntry> {}

/**
 * Statuses of a recorded top-up request.
 *
 * @since 0.1.0
 * @category constants
 */
export const topUpStatuses = ["requested", "credited", "failed"] as const
/**
 * The status of a recorded top-up request.
 *
 * @since 0.1.0
 * @category models
 */
export type TopUpStatus = typeof topUpStatuses[number]

/**
 * A recorded auto top-up request (a row of `<prefix>billing_top_up_requests` in SQL).
 *
 * @since 0.1.0
 * @category schemas
 */
export const TopUpRecord = Schema.Struct({
  id: SqlRows.Number,
  accountId: column("account_id", Schema.String),
  amountMicros: column("amount_micros", SqlRows.Number),
  /** `PaymentProvider.name`. */
  provider: Schema.String,
  status: SqlRows.literal(...topUpStatuses),
  createdAt: column("created_at", SqlRows.Number)
})
/**
 * A recorded auto top-up request.
 *
 * @since 0.1.0
 * @category schemas
 */
export interface TopUpRecord extends Schema.Schema.Type<typeof TopUpRecord> {}

/**
 * Reading the ledger and the top-up request log (admin, tests, reconciliation).
 *
 * @since 0.1.0
 * @category services
 */
export class BillingLedger extends Context.Tag("@mediagate/billing/BillingLedger")<BillingLedger, {
  /** An account's ledger entries, oldest first. */
  readonly entries: (accountId: string) => Effect.Effect<ReadonlyArray<LedgerEntry>, PersistenceError>
  /** An account's auto top-up requests, oldest first. */
  readonly topUpRequests: (accountId: string) => Effect.Effect<ReadonlyArray<TopUpRecord>, PersistenceError>
  /**
   * A page of an account's ledger entries, newest first: at most `limit` entries (of `kind` when given) with an id
   * below `before` when given, and how many entries (of `kind`) the account has in all. One index range scan.
   */
  readonly page: (accountId: string, query: LedgerPageQuery) => Effect.Effect<LedgerPage, PersistenceError>
}>() {}

/**
 * What {@link BillingLedger}'s `page` reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface LedgerPageQuery {
  readonly kind?: LedgerKind | undefined
  readonly limit: number
  /** Only entries with an id below this one (the last id of the previous page). */
  readonly before?: number | undefined
}

/**
 * A page of ledger entries, newest first, with the number of entries matching the kind.
 *
 * @since 0.1.0
 * @category models
 */
export interface LedgerPage {
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly total: number
}

/**
 * Ledger cursors are opaque to clients: `ledger:<id>` of the page's last entry, base64url-encoded.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeLedgerCursor = (id: number): string => Encoding.encodeBase64Url(`ledger:${id}`)

/**
 * The id a ledger cursor holds, or `undefined` for anything that is not such a cursor.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeLedgerCursor = (cursor: string): number | undefined => {
  const decoded = Encoding.decodeBase64UrlString(cursor)
  if (Either.isLeft(decoded)) return undefined
  const match = /^ledger:([1-9][0-9]{0,14})$/.exec(decoded.right)
  return match === null ? undefined : Number(match[1])
}

/**
 * The API's form of a ledger entry (USD, ISO time).
 *
 * @since 0.1.0
 * @category encoding
 */
export const toApiEntry = (entry: LedgerEntry): Ledger.LedgerEntry => ({
  id: String(entry.id),
  kind: entry.kind,
  amount: Money.fromMicros(entry.amountMicros),
  task_id: entry.taskId,
  key_id: entry.keyId,
  description: entry.description,
  month: entry.month,
  created_at: new Date(entry.createdAt).toISOString()
})

/**
 * The calendar month (UTC) of an epoch-ms time, as `YYYY-MM`.
 *
 * @since 0.1.0
 * @category utils
 */
export const monthOf = (epochMs: number): string => {
  const date = new Date(epochMs)
  return `${date.getUTCFullYear().toString().padStart(4, "0")}-${(date.getUTCMonth() + 1).toString().padStart(2, "0")}`
}

/** The account, key and task a ledger entry is about. */
interface EntryOwner {
  readonly accountId: string
  readonly keyId?: string | null
  readonly taskId?: string | null
}

/**
 * A ledger entry made at `now` for an account (and key and task), counting in `month`.
 *
 * @since 0.1.0
 * @category utils
 */
export const entry = (
  kind: LedgerKind,
  { accountId, keyId = null, taskId = null }: EntryOwner,
  amountMicros: number,
  description: string,
  now: number,
  month = monthOf(now)
): NewEntry => ({ accountId, kind, amountMicros, keyId, taskId, description, month, createdAt: now })

/**
 * Asks the provider for an auto top-up and records the request by `record` with its status: `credited`,
 * `requested`, or `failed` (logged) when the provider fails.
 *
 * @since 0.1.0
 * @category utils
 */
export const requestTopUp = <E, R>(
  provider: PaymentProvider["Type"],
  request: TopUpRequest,
  record: (status: TopUpStatus) => Effect.Effect<void, E, R>
): Effect.Effect<void, E, R> =>
  provider.requestTopUp(request).pipe(Effect.matchCauseEffect({
    onSuccess: (outcome) => record(outcome._tag === "Credited" ? "credited" : "requested"),
    onFailure: (cause) =>
      Effect.zipRight(Effect.logWarning("billing: auto top-up request failed", cause), record("failed"))
  }))

const usd = (micros: number): string => `${Money.fromMicros(micros)} USD`

/**
 * A prepaid charge above the balance (or an account without billing).
 *
 * @since 0.1.0
 * @category errors
 */
export const insufficientBalance = (amountMicros: number, balanceMicros: number | undefined) =>
  new Errors.InsufficientBalance({
    message: balanceMicros === undefined
      ? `Insufficient balance: the charge is ${usd(amountMicros)} and the account has no balance`
      : `Insufficient balance: the charge is ${usd(amountMicros)} and the balance is ${usd(balanceMicros)}`
  })

/**
 * A postpaid charge that would take the balance below `-creditLimit`.
 *
 * @since 0.1.0
 * @category errors
 */
export const creditLimitExceeded = (amountMicros: number, balanceMicros: number, creditLimitMicros: number) =>
  new Errors.InsufficientBalance({
    message: `Insufficient balance: the charge is ${usd(amountMicros)}, the balance is ${
      usd(balanceMicros)
    } and the account's credit limit is ${usd(creditLimitMicros)} (the balance may not go below ${
      usd(-creditLimitMicros)
    })`
  })

/**
 * The bound of balances, credits and limits: 1e9 USD (1e15 micro-dollars), where a micro-dollar amount, its USD
 * number and the sum of two of them stay exact in a JavaScript number (2^53 is about 9.007e15).
 *
 * @since 0.1.0
 * @category constants
 */
export const maxBalanceMicros = 1_000_000_000_000_000

/**
 * Whether a balance lies within the bound ({@link maxBalanceMicros}).
 *
 * @since 0.1.0
 * @category utils
 */
export const inRange = (balanceMicros: number): boolean => Math.abs(balanceMicros) <= maxBalanceMicros

/**
 * A credit refused because the balance would pass the bound.
 *
 * @since 0.1.0
 * @category errors
 */
export const creditOutOfRange = (amountMicros: number, balanceMicros: number) =>
  new Errors.ValidationError({
    message: `amount: a credit of ${usd(amountMicros)} would take the balance of ${usd(balanceMicros)} above ${
      usd(maxBalanceMicros)
    }, the most an account may hold`
  })

/**
 * The default credit limit of billing: 100 USD.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultCreditLimitMicros = 100_000_000

/**
 * The default credit limit of postpaid accounts from Effect `Config`: `MEDIAGATE_DEFAULT_CREDIT_LIMIT` in USD
 * (default 100; 0 to 1e9 with at most 6 decimals), in micro-dollars.
 *
 * @since 0.1.0
 * @category config
 */
export const defaultCreditLimitConfig: Config.Config<number> = Config.number("MEDIAGATE_DEFAULT_CREDIT_LIMIT").pipe(
  Config.validate({
    message: "must be an amount in USD from 0 to 1000000000 with at most 6 decimals",
    validation: (usd) => Schema.is(Money.Usd)(usd)
  }),
  Config.withDefault(Money.fromMicros(defaultCreditLimitMicros)),
  Config.map(Money.toMicros)
)

/**
 * Options every billing implementation takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface BillingOptions {
  /** The credit limit of postpaid accounts that set none (micro-dollars; default {@link defaultCreditLimitMicros}). */
  readonly defaultCreditLimitMicros?: number | undefined
}

/**
 * A charge above the key's remaining spend limit.
 *
 * @since 0.1.0
 * @category errors
 */
export const keyLimitExceeded = (amountMicros: number, limitMicros: number, spentMicros: number) =>
  new Errors.SpendLimitExceeded({
    message: `API key spend limit exceeded: the charge is ${usd(amountMicros)}, the key has spent ${
      usd(spentMicros)
    } of its ${usd(limitMicros)} limit`
  })

/**
 * A charge above the account's remaining monthly spend limit.
 *
 * @since 0.1.0
 * @category errors
 */
export const monthlyLimitExceeded = (amountMicros: number, limitMicros: number, spentMicros: number) =>
  new Errors.SpendLimitExceeded({
    message: `Account monthly spend limit exceeded: the charge is ${usd(amountMicros)}, the account has spent ${
      usd(spentMicros)
    } of its ${usd(limitMicros)} limit this month`
  })

/**
 * How a refund of `amountMicros` splits over the months the task was charged in: `open` is what is left to refund
 * per month (its charges net of earlier refunds); the newest month is refunded first, and never beyond what is
 * left in it. The parts sum to at most `amountMicros`.
 *
 * @since 0.1.0
 * @category utils
 */
export const refundParts = (
  amountMicros: number,
  open: ReadonlyArray<{ readonly month: string; readonly remaining: number }>
): Array<{ readonly month: string; readonly amountMicros: number }> => {
  const parts: Array<{ readonly month: string; readonly amountMicros: number }> = []
  let left = amountMicros
  for (const { month, remaining } of [...open].sort((a, b) => a.month < b.month ? 1 : a.month > b.month ? -1 : 0)) {
    const part = Math.min(left, remaining)
    if (part <= 0) continue
    parts.push({ month, amountMicros: part })
    left -= part
  }
  return parts
}

/**
 * An amount of money the implementation takes: a non-negative safe integer (anything else is a caller bug).
 *
 * @since 0.1.0
 * @category guards
 */
export const isAmount = (micros: number): boolean => Number.isSafeInteger(micros) && micros >= 0

/**
 * Dies (a caller bug) unless `micros` is an amount ({@link isAmount}); `what` names it.
 *
 * @since 0.1.0
 * @category utils
 */
export const requireAmount = (what: string, micros: number): Effect.Effect<void> =>
  isAmount(micros)
    ? Effect.void
    : Effect.dieMessage(`billing: ${what} must be a non-negative integer of micro-dollars, got ${micros}`)

/**
 * The refusal of an account that billing was never opened for.
 *
 * @since 0.1.0
 * @category errors
 */
export const notFound = (accountId: string) =>
  new Errors.AccountNotFound({ message: `No billing account ${accountId}` })

/**
 * The contract's `Balance` (USD) of a billing state.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toBalance = (state: BillingState): Account.Balance => ({
  balance: Money.fromMicros(state.balanceMicros),
  billingMode: state.billingMode,
  monthlySpendLimit: state.monthlySpendLimitMicros === null ? null : Money.fromMicros(state.monthlySpendLimitMicros),
  autoTopUpEnabled: state.autoTopUpEnabled,
  autoTopUpThreshold: state.autoTopUpThresholdMicros === null ? null : Money.fromMicros(state.autoTopUpThresholdMicros),
  autoTopUpAmount: state.autoTopUpAmountMicros === null ? null : Money.fromMicros(state.autoTopUpAmountMicros),
  currency: "USD",
  monthToDateSpend: Money.fromMicros(state.monthToDateMicros)
})

/**
 * Whether a charge that left `balanceMicros` asks for an auto top-up, and of how much. A top-up that would take the
 * balance past the bound ({@link maxBalanceMicros}) is not asked for (evaluated under the account's lock).
 *
 * @since 0.1.0
 * @category utils
 */
export const topUpDue = (
  state: Omit<BillingSettings, "monthlySpendLimitMicros" | "creditLimitMicros">,
  balanceMicros: number
): number | undefined =>
  state.billingMode === "prepaid" && state.autoTopUpEnabled && state.autoTopUpThresholdMicros !== null &&
    state.autoTopUpAmountMicros !== null && state.autoTopUpAmountMicros > 0 &&
    balanceMicros < state.autoTopUpThresholdMicros && inRange(balanceMicros + state.autoTopUpAmountMicros)
    ? state.autoTopUpAmountMicros
    : undefined

/** The state an account without billing reads as. */
const unopened = (accountId: string): BillingState => ({
  ...defaultSettings,
  creditLimitMicros: 0,
  accountId,
  balanceMicros: 0,
  monthToDateMicros: 0
})

/**
 * The contract's `BillingService` over `BillingAccounts.state`. An account billing was never opened for reads as a
 * new prepaid account with a zero balance (it cannot be charged: see `SqlBilling`); storage failures are
 * `ServiceUnavailable`. Environments: the balance is the account's one balance (spec "Balance"), read alike by
 * live and test keys; the ledger is live money only, so a test key's ledger is empty.
 *
 * @since 0.1.0
 * @category constructors
 */
export const balanceService = (
  state: (accountId: string) => Effect.Effect<BillingState, Errors.AccountNotFound | PersistenceError>,
  ledger: BillingLedger["Type"]["page"]
): Services.BillingService["Type"] => ({
  balance: (principal) =>
    state(principal.accountId).pipe(
      Effect.catchTag("AccountNotFound", () => Effect.succeed(unopened(principal.accountId))),
      Effect.catchTag("PersistenceError", unavailable("balance read")),
      Effect.map(toBalance)
    ),
  ledger: (principal, query) => {
    const before = query.cursor === undefined ? undefined : decodeLedgerCursor(query.cursor)
    if (query.cursor !== undefined && before === undefined) {
      return Effect.fail(new Errors.ValidationError({ message: "cursor: is not a cursor of this list" }))
    }
    // every entry is live money (test tasks are never charged, and top-ups and credits are the live balance's):
    // a test key's ledger is empty, as Stripe's test mode sees none of the live money
    if (principal.environment === "test") {
      return Effect.succeed({ data: [], pagination: { cursor: null, hasMore: false, total: 0 } })
    }
    const limit = query.limit ?? Task.defaultPageSize
    return ledger(principal.accountId, { kind: query.kind, limit: limit + 1, before }).pipe(
      Effect.catchTag("PersistenceError", unavailable("ledger read")),
      Effect.map(({ entries, total }): Envelope.Page<Ledger.LedgerEntry> => {
        const hasMore = entries.length > limit
        const shown = hasMore ? entries.slice(0, limit) : entries
        return {
          data: shown.map(toApiEntry),
          pagination: { cursor: hasMore ? encodeLedgerCursor(shown[shown.length - 1]!.id) : null, hasMore, total }
        }
      })
    )
  }
})

/** A storage failure of a read, as the client sees it (logged). */
const unavailable = (what: string) => (e: PersistenceError) =>
  Effect.fail(new Errors.ServiceUnavailable({ message: "Billing is unavailable, try again later" })).pipe(
    Effect.tap(() => Effect.logWarning(`billing: ${what} failed`, e))
  )

/**
 * The services every billing implementation provides.
 *
 * @since 0.1.0
 * @category models
 */
export interface BillingServices {
  /** The engine's port (charge and refund). */
  readonly billing: Billing["Type"]
  /** The accounts package's port. */
  readonly accounts: BillingAccounts["Type"]
  /** The contract's balance read. */
  readonly balances: Services.BillingService["Type"]
  readonly ledger: BillingLedger["Type"]
}

/**
 * The layer of a built {@link BillingServices}.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerOf = <E, R>(
  make: Effect.Effect<BillingServices, E, R>
): Layer.Layer<Billing | BillingAccounts | Services.BillingService | BillingLedger, E, R> =>
  Layer.effectContext(Effect.map(make, (services) =>
    Context.make(Billing, services.billing).pipe(
      Context.add(BillingAccounts, services.accounts),
      Context.add(Services.BillingService, services.balances),
      Context.add(BillingLedger, services.ledger)
    )))
