/**
 * The webhook storage port: registrations, deliveries, the attempt log and the dispatcher's outbox cursor, with its
 * memory implementation ({@link makeMemory}: one process, nothing survives a restart). The SQL implementation
 * (SQLite and PostgreSQL) is `SqlWebhookStore`. One conformance suite runs against all of them.
 *
 * - The webhook `secret` is stored **as given**: it is the HMAC key every delivery is signed with, so it cannot be
 *   hashed. It is a secret at rest: protect the database (and its backups) accordingly.
 * - Deliveries are claimed with a lease and a fencing token (`fence`, incremented by every claim), like the engine's
 *   tasks: a worker whose lease ran out can never record an attempt over a newer claim.
 * - {@link WebhookStore} `fanOut` creates the deliveries of a page of outbox entries **and** advances the durable
 *   outbox cursor in one transaction, as a compare-and-set on the cursor: a crash never loses or duplicates fan-out,
 *   and two dispatchers never both fan out the same page.
 * - Times are epoch ms. "now" is passed in by the caller, read from {@link WebhookStore} `now`: the database clock on
 *   SQL (or the Effect `Clock` with `time: "clock"`, for tests), the Effect `Clock` in memory.
 * - Idempotent registration: the shared window and rule of `IdempotencyWindow`.
 * - Each record is a Schema: its type here, its row (snake-case columns) in SQL.
 *
 * @since 0.1.0
 */
import { Errors, Webhook } from "@mediagate/contract"
import type { OutboxEntry } from "@mediagate/engine/TaskOutbox"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

// -----------------------------------------------------------------------------------------------------------------
// records
// -----------------------------------------------------------------------------------------------------------------

const { column } = SqlRows
const eventType = SqlRows.literal(...Webhook.eventTypes)

/** A stored webhook registration; in SQL, `events` is a JSON list of event types. */
export const WebhookRow = Schema.Struct({
  id: Schema.String,
  accountId: column("account_id", Schema.String),
  /** The environment whose task events it receives (the creating key's). */
  environment: SqlRows.literal("live", "test"),
  url: Schema.String,
  events: Schema.parseJson(Schema.Array(eventType)),
  description: Schema.NullOr(Schema.String),
  enabled: SqlRows.Flag,
  /** The signing secret (`whsec_…`), stored as given: an HMAC key, a secret at rest. */
  secret: Schema.String,
  createdAt: column("created_at", SqlRows.Number),
  deletedAt: column("deleted_at", Schema.NullOr(SqlRows.Number))
})
/** A stored webhook registration. */
export interface WebhookRow extends Schema.Schema.Type<typeof WebhookRow> {}

/** States of a delivery. */
export type DeliveryStatus = typeof Webhook.DeliveryStatus.Type

/** A stored delivery: one event to one target. */
export const DeliveryRow = Schema.Struct({
  id: Schema.String,
  /** The configured webhook, or null for a per-job (`webhookUrl`) delivery. */
  webhookId: column("webhook_id", Schema.NullOr(Schema.String)),
  accountId: column("account_id", Schema.String),
  eventId: column("event_id", Schema.String),
  eventType: column("event_type", eventType),
  /** The target URL. */
  url: Schema.String,
  /** The exact JSON body sent on every attempt. */
  payload: Schema.String,
  status: SqlRows.literal(...Webhook.DeliveryStatus.literals),
  /** Requests made so far, the first included. */
  attempts: SqlRows.Number,
  lastStatusCode: column("last_status_code", Schema.NullOr(SqlRows.Number)),
  lastError: column("last_error", Schema.NullOr(Schema.String)),
  nextAttemptAt: column("next_attempt_at", Schema.NullOr(SqlRows.Number)),
  leaseOwner: column("lease_owner", Schema.NullOr(Schema.String)),
  leaseExpiresAt: column("lease_expires_at", Schema.NullOr(SqlRows.Number)),
  fence: SqlRows.Number,
  createdAt: column("created_at", SqlRows.Number)
})
/** A stored delivery. */
export interface DeliveryRow extends Schema.Schema.Type<typeof DeliveryRow> {}

/** One request of a delivery, as logged. */
export const AttemptRow = Schema.Struct({
  deliveryId: column("delivery_id", Schema.String),
  /** 1 for the first request. */
  attempt: SqlRows.Number,
  statusCode: column("status_code", Schema.NullOr(SqlRows.Number)),
  error: Schema.NullOr(Schema.String),
  durationMs: column("duration_ms", SqlRows.Number),
  /** The start of the response body (at most {@link excerptBytes} bytes). */
  responseExcerpt: column("response_excerpt", Schema.NullOr(Schema.String)),
  at: SqlRows.Number
})
/** One request of a delivery, as logged. */
export interface AttemptRow extends Schema.Schema.Type<typeof AttemptRow> {}

/** Longest response excerpt kept in the attempt log. */
export const excerptBytes = 1024

/** What one request achieved. */
export type AttemptResult = Omit<AttemptRow, "deliveryId" | "attempt">

/** Where a delivery goes after a claim. */
export type Settlement =
  | { readonly status: "pending"; readonly nextAttemptAt: number }
  | { readonly status: "succeeded" }
  | { readonly status: "failed"; readonly disableWebhook?: boolean; readonly reason?: string }

/** What an attempt needs of a delivery's configured webhook, read with its claim (`WebhookStore.claimDue`). */
export type Target = Pick<WebhookRow, "secret" | "enabled" | "deletedAt">

/**
 * A claimed delivery, with its configured webhook as the claim found it (`webhook`: null for a per-job delivery,
 * whose `webhookId` is null, or when the webhook no longer exists): the attempt needs no read of its own.
 */
export interface ClaimedDelivery extends DeliveryRow {
  readonly webhook: Target | null
}

/** Who leases the deliveries a fan-out creates, for how long, and how many at most ({@link WebhookStore} `fanOutLeased`). */
export interface FanOutLease {
  readonly owner: string
  readonly leaseMs: number
  readonly limit: number
}

/** What a fan-out created: how many deliveries, and those leased to the caller. */
export interface FannedOut {
  readonly created: number
  readonly leased: ReadonlyArray<ClaimedDelivery>
}

/** One settle of a batch ({@link WebhookStore} `settleAll`). */
export interface Settle {
  /**
   * The delivery as claimed: its id and fence, and the attempts and last answer the new values build on (the fence
   * guarantees that no one else changed them since the claim).
   */
  readonly delivery: DeliveryRow
  readonly attempt: AttemptResult | undefined
  readonly settlement: Settlement
}

/** A new delivery (due at once). */
export type NewDelivery = Pick<DeliveryRow, "webhookId" | "accountId" | "eventId" | "eventType" | "url" | "payload">

/** An `Idempotency-Key` claim of a registration, judged by the shared rule (`IdempotencyWindow`). */
export type IdempotencyClaim = IdempotencyWindow.Claim

/** The answer of a registration. */
export type CreateResult =
  | { readonly _tag: "Created"; readonly webhook: WebhookRow }
  | { readonly _tag: "Replayed"; readonly webhook: WebhookRow }

/** A page of deliveries, newest first. */
export interface DeliveryPage {
  readonly items: ReadonlyArray<DeliveryRow>
  readonly hasMore: boolean
  readonly total: number
}

/** The storage port. */
export class WebhookStore extends Context.Tag("@mediagate/webhooks/WebhookStore")<WebhookStore, {
  /** The storage clock in epoch ms. */
  readonly now: Effect.Effect<number, PersistenceError>
  /** Stores a registration; with an idempotency key already used for the same fingerprint, the original answer. */
  readonly createWebhook: (
    webhook: WebhookRow,
    idempotency: IdempotencyClaim | undefined
  ) => Effect.Effect<CreateResult, Errors.IdempotencyKeyReused | PersistenceError>
  /** The account's registrations (deleted ones excluded), oldest first. */
  readonly listWebhooks: (accountId: string) => Effect.Effect<ReadonlyArray<WebhookRow>, PersistenceError>
  /** A registration of an account (not deleted). */
  readonly getWebhook: (accountId: string, id: string) => Effect.Effect<Option.Option<WebhookRow>, PersistenceError>
  /** A registration by id alone, deleted ones included (the delivery worker). */
  readonly getWebhookById: (id: string) => Effect.Effect<Option.Option<WebhookRow>, PersistenceError>
  /** Deletes (softly) a registration of an account; answers whether it existed. */
  readonly removeWebhook: (accountId: string, id: string, now: number) => Effect.Effect<boolean, PersistenceError>
  /** Enables or disables a registration. */
  readonly setEnabled: (id: string, enabled: boolean) => Effect.Effect<void, PersistenceError>
  /**
   * Deliveries of a webhook, newest first, below `beforeId` (and in `status` when given). Operators leave out the
   * webhook (every target) or the account too (every account).
   */
  readonly listDeliveries: (
    accountId: string | undefined,
    webhookId: string | undefined,
    query: {
      readonly beforeId: string | undefined
      readonly limit: number
      readonly status?: DeliveryStatus | undefined
    }
  ) => Effect.Effect<DeliveryPage, PersistenceError>
  /** A delivery of a webhook of an account. */
  readonly getDelivery: (
    accountId: string,
    webhookId: string,
    id: string
  ) => Effect.Effect<Option.Option<DeliveryRow>, PersistenceError>
  /** Every delivery of an event (operators, tests), oldest first. */
  readonly deliveriesOfEvent: (eventId: string) => Effect.Effect<ReadonlyArray<DeliveryRow>, PersistenceError>
  /** Adds a delivery due at `now` (replay); re-enables its webhook in the same step when asked. */
  readonly addDelivery: (
    delivery: NewDelivery,
    now: number,
    options: { readonly enableWebhook: boolean }
  ) => Effect.Effect<DeliveryRow, PersistenceError>
  /** The dispatcher's outbox cursor (undefined before the first page). */
  readonly readCursor: Effect.Effect<string | undefined, PersistenceError>
  /**
   * In one transaction: moves the outbox cursor from `expected` to `next` (compare-and-set) and creates the
   * deliveries of `entries` — one per subscribed, enabled webhook of the entry's account, plus one per-job delivery
   * when the entry has a `webhookUrl`. Answers how many deliveries were created, or none (nothing written) when the
   * cursor was no longer at `expected`.
   */
  readonly fanOut: (
    expected: string | undefined,
    next: string,
    entries: ReadonlyArray<OutboxEntry>,
    now: number
  ) => Effect.Effect<Option.Option<number>, PersistenceError>
  /**
   * `fanOut`, and (with a `lease`) the first `lease.limit` of the deliveries it creates are leased to `lease.owner`
   * at once, as `claimDue` would lease them (fence 1), and answered with their webhooks: the dispatcher that fans
   * out sends them without a claim of its own (one round trip and one wake-up less per delivery).
   */
  readonly fanOutLeased: (
    expected: string | undefined,
    next: string,
    entries: ReadonlyArray<OutboxEntry>,
    now: number,
    lease?: FanOutLease
  ) => Effect.Effect<Option.Option<FannedOut>, PersistenceError>
  /**
   * Leases up to `limit` due pending deliveries (fence incremented), each with its configured webhook as it is now
   * (one statement on SQL).
   */
  readonly claimDue: (
    owner: string,
    limit: number,
    leaseMs: number,
    now: number
  ) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, PersistenceError>
  /**
   * Records an attempt (when given) and moves the delivery on, releasing the lease, if `fence` still holds; with
   * `disableWebhook` also disables its webhook, in the same transaction. Answers whether it was recorded.
   */
  readonly settle: (
    id: string,
    fence: number,
    attempt: AttemptResult | undefined,
    settlement: Settlement
  ) => Effect.Effect<boolean, PersistenceError>
  /**
   * `settle` of many claimed deliveries at once, each fenced on its own (one statement on PostgreSQL, one
   * transaction on SQLite); the new values are computed from the claimed rows, which are not read again. Answers,
   * in order, whether each was recorded. A delivery given twice: only its first settle can hold.
   */
  readonly settleAll: (settles: ReadonlyArray<Settle>) => Effect.Effect<ReadonlyArray<boolean>, PersistenceError>
  /** The attempt log of a delivery, first attempt first. */
  readonly attempts: (deliveryId: string) => Effect.Effect<ReadonlyArray<AttemptRow>, PersistenceError>
  /** The attempt logs of several deliveries in one read (a page of deliveries), grouped with {@link byDelivery}. */
  readonly attemptsOf: (
    deliveryIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<AttemptRow>, PersistenceError>
  /** When a pending delivery is next due (its lease counted), or none. */
  readonly nextDueAt: Effect.Effect<Option.Option<number>, PersistenceError>
  /** Releases every lease `owner` holds (graceful shutdown); answers how many. */
  readonly releaseAll: (owner: string) => Effect.Effect<number, PersistenceError>
  /**
   * Retention: deletes the settled (`succeeded`, `failed`) deliveries created before `before` (epoch ms) and their
   * attempt logs, in one transaction; pending deliveries stay. Answers how many deliveries.
   */
  readonly pruneDeliveries: (before: number) => Effect.Effect<number, PersistenceError>
  /** Retention: forgets registration idempotency records created before `before`; answers how many. */
  readonly pruneIdempotency: (before: number) => Effect.Effect<number, PersistenceError>
  /**
   * Operators: the pending deliveries, those of them due at `now`, and the deliveries that failed for good with a
   * last attempt at or after `failedSince` (epoch ms).
   */
  readonly backlog: (now: number, failedSince: number) => Effect.Effect<Backlog, PersistenceError>
}>() {}

/** The webhook backlog ({@link WebhookStore} `backlog`). */
export interface Backlog {
  readonly pending: number
  readonly due: number
  readonly failedSince: number
}

/** A new webhook id. */
export const webhookId = (now?: number): string => `wh_${Ids.ulid(now)}`
/** A new delivery id. */
export const deliveryId = (now?: number): string => `dlv_${Ids.ulid(now)}`

/** Whether a webhook receives an event type. */
export const subscribes = (webhook: WebhookRow, type: Webhook.EventType): boolean =>
  webhook.enabled && webhook.deletedAt === null && webhook.events.includes(type)

/**
 * The deliveries an outbox entry fans out to, given the account's webhooks: those of the task's environment, and
 * the task's own `webhookUrl`.
 */
export const deliveriesFor = (
  entry: OutboxEntry,
  webhooks: ReadonlyArray<WebhookRow>
): ReadonlyArray<NewDelivery> => {
  const payload = JSON.stringify(entry.event)
  const base = { accountId: entry.accountId, eventId: entry.event.id, eventType: entry.event.type, payload }
  const configured = webhooks
    .filter((webhook) =>
      webhook.accountId === entry.accountId && webhook.environment === entry.environment &&
      subscribes(webhook, entry.event.type)
    )
    .map((webhook): NewDelivery => ({ ...base, webhookId: webhook.id, url: webhook.url }))
  return entry.webhookUrl === null ? configured : [...configured, { ...base, webhookId: null, url: entry.webhookUrl }]
}

/** The row of a new delivery, due at `now` (both implementations). */
export const newRow = (delivery: NewDelivery, now: number): DeliveryRow => ({
  ...delivery,
  id: deliveryId(now),
  status: "pending",
  attempts: 0,
  lastStatusCode: null,
  lastError: null,
  nextAttemptAt: now,
  leaseOwner: null,
  leaseExpiresAt: null,
  fence: 0,
  createdAt: now
})

/**
 * The rows a fan-out creates for `entries` given the accounts' `webhooks`, due at `now`; with a `lease`, the first
 * `lease.limit` of them leased (as a claim leases: fence 1), answered apart with their webhooks (both
 * implementations).
 */
export const fannedRows = (
  entries: ReadonlyArray<OutboxEntry>,
  webhooks: ReadonlyArray<WebhookRow>,
  now: number,
  lease?: FanOutLease
): { readonly rows: ReadonlyArray<DeliveryRow>; readonly leased: ReadonlyArray<ClaimedDelivery> } => {
  const rows: Array<DeliveryRow> = []
  const leased: Array<ClaimedDelivery> = []
  const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]))
  for (const entry of entries) {
    for (const delivery of deliveriesFor(entry, webhooks)) {
      const row = newRow(delivery, now)
      if (lease === undefined || leased.length >= lease.limit) {
        rows.push(row)
        continue
      }
      const claimed = { ...row, fence: 1, leaseOwner: lease.owner, leaseExpiresAt: now + Math.floor(lease.leaseMs) }
      const webhook = delivery.webhookId === null ? undefined : byId.get(delivery.webhookId)
      rows.push(claimed)
      leased.push({
        ...claimed,
        webhook: webhook === undefined
          ? null
          : { secret: webhook.secret, enabled: webhook.enabled, deletedAt: webhook.deletedAt }
      })
    }
  }
  return { rows, leased }
}

/** A delivery after a settle: its attempt counted, moved on, its lease released (both implementations). */
export const settled = (row: DeliveryRow, attempt: AttemptResult | undefined, settlement: Settlement): DeliveryRow => ({
  ...row,
  attempts: row.attempts + (attempt === undefined ? 0 : 1),
  lastStatusCode: attempt === undefined ? row.lastStatusCode : attempt.statusCode,
  lastError: attempt === undefined
    ? (settlement.status === "failed" ? settlement.reason ?? row.lastError : row.lastError)
    : attempt.error,
  status: settlement.status,
  nextAttemptAt: settlement.status === "pending" ? Math.floor(settlement.nextAttemptAt) : null,
  leaseOwner: null,
  leaseExpiresAt: null
})

/** Attempt rows by delivery id, each delivery's first attempt first. */
export const byDelivery = (rows: ReadonlyArray<AttemptRow>): ReadonlyMap<string, ReadonlyArray<AttemptRow>> => {
  const grouped = new Map<string, Array<AttemptRow>>()
  for (const row of rows) {
    const list = grouped.get(row.deliveryId)
    if (list === undefined) grouped.set(row.deliveryId, [row])
    else list.push(row)
  }
  for (const list of grouped.values()) list.sort((a, b) => a.attempt - b.attempt)
  return grouped
}

/** The logged row of the `attempt`-th request of a delivery (both implementations). */
export const attemptRow = (deliveryId: string, attempt: number, result: AttemptResult): AttemptRow => ({
  deliveryId,
  attempt,
  statusCode: result.statusCode,
  error: result.error,
  durationMs: Math.round(result.durationMs),
  responseExcerpt: result.responseExcerpt,
  at: result.at
})

/** The refusal of an `Idempotency-Key` reused with another request. */
export const reused = (): Errors.IdempotencyKeyReused =>
  new Errors.IdempotencyKeyReused({ message: IdempotencyWindow.reusedMessage })

// -----------------------------------------------------------------------------------------------------------------
// memory
// -----------------------------------------------------------------------------------------------------------------

/** Storage in memory; operations run one at a time (a semaphore plays the transaction). Clock: Effect `Clock`. */
export const makeMemory: Effect.Effect<WebhookStore["Type"]> = Effect.gen(function*() {
  const webhooks = new Map<string, WebhookRow>()
  const deliveries = new Map<string, DeliveryRow>()
  const log: Array<AttemptRow> = []
  const idempotency = new Map<string, { fingerprint: string; webhookId: string; createdAt: number }>()
  let cursor: string | undefined = undefined
  const lock = yield* Effect.makeSemaphore(1)
  const tx = <A, E>(effect: Effect.Effect<A, E>) => lock.withPermits(1)(effect)
  const sync = <A>(f: () => A) => tx(Effect.sync(f))
  const live = (row: WebhookRow | undefined, accountId: string): Option.Option<WebhookRow> =>
    Option.filter(Option.fromNullable(row), (w) => w.accountId === accountId && w.deletedAt === null)
  const ofWebhook = (accountId: string | undefined, webhookId: string | undefined) =>
    [...deliveries.values()].filter((d) =>
      (accountId === undefined || d.accountId === accountId) && (webhookId === undefined || d.webhookId === webhookId)
    )

  const settleOne = (id: string, fence: number, attempt: AttemptResult | undefined, settlement: Settlement) => {
    const row = deliveries.get(id)
    if (row === undefined || row.fence !== fence || row.leaseOwner === null || row.status !== "pending") {
      return false
    }
    const next = settled(row, attempt, settlement)
    deliveries.set(id, next)
    if (attempt !== undefined) log.push(attemptRow(id, next.attempts, attempt))
    if (settlement.status === "failed" && settlement.disableWebhook === true && row.webhookId !== null) {
      const webhook = webhooks.get(row.webhookId)
      if (webhook !== undefined) webhooks.set(webhook.id, { ...webhook, enabled: false })
    }
    return true
  }

  const fanOutLeased = (
    expected: string | undefined,
    next: string,
    entries: ReadonlyArray<OutboxEntry>,
    now: number,
    lease?: FanOutLease
  ) =>
    sync((): Option.Option<FannedOut> => {
      if (cursor !== expected) return Option.none()
      cursor = next
      const { leased, rows } = fannedRows(entries, [...webhooks.values()], now, lease)
      for (const row of rows) deliveries.set(row.id, row)
      return Option.some({ created: rows.length, leased })
    })

  const attemptsOf = (deliveryIds: ReadonlyArray<string>) =>
    sync((): ReadonlyArray<AttemptRow> => {
      const wanted = new Set(deliveryIds)
      return log.filter((a) => wanted.has(a.deliveryId))
    })

  const service: WebhookStore["Type"] = {
    now: Clock.currentTimeMillis,
    createWebhook: (webhook, claim) =>
      tx(Effect.suspend((): Effect.Effect<CreateResult, Errors.IdempotencyKeyReused> => {
        if (claim !== undefined) {
          const slot = `${webhook.accountId}\u0000${claim.key}`
          const previous = idempotency.get(slot)
          const verdict = IdempotencyWindow.judge(previous, claim)
          if (verdict === "Reused") return Effect.fail(reused())
          const original = verdict === "Replay" && previous !== undefined ? webhooks.get(previous.webhookId) : undefined
          if (original !== undefined) return Effect.succeed({ _tag: "Replayed", webhook: original } as const)
          idempotency.set(slot, { fingerprint: claim.fingerprint, webhookId: webhook.id, createdAt: webhook.createdAt })
        }
        webhooks.set(webhook.id, webhook)
        return Effect.succeed({ _tag: "Created", webhook } as const)
      })),
    listWebhooks: (accountId) =>
      sync(() =>
        [...webhooks.values()]
          .filter((w) => w.accountId === accountId && w.deletedAt === null)
          .sort((a, b) => (a.id < b.id ? -1 : 1))
      ),
    getWebhook: (accountId, id) => sync(() => live(webhooks.get(id), accountId)),
    getWebhookById: (id) => sync(() => Option.fromNullable(webhooks.get(id))),
    removeWebhook: (accountId, id, now) =>
      sync(() => {
        const row = live(webhooks.get(id), accountId)
        if (Option.isNone(row)) return false
        webhooks.set(id, { ...row.value, enabled: false, deletedAt: now })
        return true
      }),
    setEnabled: (id, enabled) =>
      sync(() => {
        const row = webhooks.get(id)
        if (row !== undefined) webhooks.set(id, { ...row, enabled })
      }),
    listDeliveries: (accountId, webhookId, query) =>
      sync(() => {
        const all = ofWebhook(accountId, webhookId)
          .filter((d) => query.status === undefined || d.status === query.status)
          .sort((a, b) => (a.id < b.id ? 1 : -1))
        return MemoryStore.page(all, query.beforeId, Math.max(0, Math.floor(query.limit)))
      }),
    getDelivery: (accountId, webhookId, id) =>
      sync(() =>
        Option.filter(
          Option.fromNullable(deliveries.get(id)),
          (d) => d.accountId === accountId && d.webhookId === webhookId
        )
      ),
    deliveriesOfEvent: (eventId) =>
      sync(() => [...deliveries.values()].filter((d) => d.eventId === eventId).sort((a, b) => (a.id < b.id ? -1 : 1))),
    addDelivery: (delivery, now, options) =>
      sync(() => {
        const row = newRow(delivery, now)
        deliveries.set(row.id, row)
        if (options.enableWebhook && delivery.webhookId !== null) {
          const webhook = webhooks.get(delivery.webhookId)
          if (webhook !== undefined && webhook.deletedAt === null) {
            webhooks.set(webhook.id, { ...webhook, enabled: true })
          }
        }
        return row
      }),
    readCursor: sync(() => cursor),
    fanOut: (expected, next, entries, now) =>
      Effect.map(fanOutLeased(expected, next, entries, now), Option.map((fanned) => fanned.created)),
    fanOutLeased,
    claimDue: (owner, limit, leaseMs, now) =>
      sync(() => {
        const due = [...deliveries.values()]
          .filter((d) =>
            d.status === "pending" && d.nextAttemptAt !== null && d.nextAttemptAt <= now &&
            (d.leaseExpiresAt === null || d.leaseExpiresAt <= now)
          )
          .sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || (a.id < b.id ? -1 : 1))
          .slice(0, Math.max(0, Math.floor(limit)))
        return due.map((d): ClaimedDelivery => {
          const claimed = { ...d, fence: d.fence + 1, leaseOwner: owner, leaseExpiresAt: now + leaseMs }
          deliveries.set(d.id, claimed)
          const webhook = d.webhookId === null ? undefined : webhooks.get(d.webhookId)
          return {
            ...claimed,
            webhook: webhook === undefined
              ? null
              : { secret: webhook.secret, enabled: webhook.enabled, deletedAt: webhook.deletedAt }
          }
        })
      }),
    settle: (id, fence, attempt, settlement) => sync(() => settleOne(id, fence, attempt, settlement)),
    settleAll: (settles) =>
      sync(() =>
        settles.map(({ attempt, delivery, settlement }) => settleOne(delivery.id, delivery.fence, attempt, settlement))
      ),
    attempts: (deliveryId) => attemptsOf([deliveryId]),
    attemptsOf,
    nextDueAt: sync(() => {
      const times = [...deliveries.values()]
        .filter((d) => d.status === "pending" && d.nextAttemptAt !== null)
        .map((d) => Math.max(d.nextAttemptAt!, d.leaseExpiresAt ?? 0))
      return times.length === 0 ? Option.none() : Option.some(Math.min(...times))
    }),
    releaseAll: (owner) =>
      sync(() =>
        MemoryStore.updateWhere(
          deliveries,
          (d) => d.leaseOwner === owner && d.status === "pending",
          (d) => ({ ...d, leaseOwner: null, leaseExpiresAt: null })
        )
      ),
    pruneDeliveries: (before) =>
      sync(() => {
        const ids = new Set(
          [...deliveries.values()].filter((d) => d.status !== "pending" && d.createdAt < before).map((d) => d.id)
        )
        for (const id of ids) deliveries.delete(id)
        const kept = log.filter((attempt) => !ids.has(attempt.deliveryId))
        log.splice(0, log.length, ...kept)
        return ids.size
      }),
    pruneIdempotency: (before) =>
      sync(() => MemoryStore.deleteWhere(idempotency, (record) => record.createdAt < before)),
    backlog: (now, failedSince) =>
      sync(() => {
        const lastAttempt = new Map<string, number>()
        for (const attempt of log) {
          lastAttempt.set(attempt.deliveryId, Math.max(attempt.at, lastAttempt.get(attempt.deliveryId) ?? attempt.at))
        }
        let pending = 0
        let due = 0
        let failed = 0
        for (const d of deliveries.values()) {
          if (d.status === "pending") {
            pending++
            if (d.nextAttemptAt !== null && d.nextAttemptAt <= now) due++
          } else if (d.status === "failed" && (lastAttempt.get(d.id) ?? -Infinity) >= failedSince) {
            failed++
          }
        }
        return { pending, due, failedSince: failed }
      })
  }
  return service
})

/** The memory storage as a layer. */
export const layerMemory: Layer.Layer<WebhookStore> = Layer.effect(WebhookStore, makeMemory)
