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
import type { Errors } from "@mediagate/contract"
import type { OutboxEntry } from "@mediagate/engine/TaskOutbox"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import { makeMemory } from "./internal/memory/store.js"
import type {
  AttemptResult,
  AttemptRow,
  Backlog,
  ClaimedDelivery,
  CreateResult,
  DeliveryPage,
  DeliveryRow,
  DeliveryStatus,
  FannedOut,
  FanOutLease,
  IdempotencyClaim,
  NewDelivery,
  Settle,
  Settlement,
  WebhookRow
} from "./internal/store/records.js"

export {
  /**
   * Storage in memory; operations run one at a time (a semaphore plays the transaction). Clock: Effect `Clock`.
   *
   * @since 0.1.0
   * @category constructors
   */
  makeMemory
} from "./internal/memory/store.js"
export {
  /**
   * What one request achieved.
   *
   * @since 0.1.0
   * @category models
   */
  type AttemptResult,
  /**
   * One request of a delivery, as logged.
   *
   * @since 0.1.0
   * @category schemas
   */
  AttemptRow,
  /**
   * The webhook backlog ({@link WebhookStore} `backlog`).
   *
   * @since 0.1.0
   * @category models
   */
  type Backlog,
  /**
   * A claimed delivery, with its configured webhook as the claim found it (`webhook`: null for a per-job delivery,
   * whose `webhookId` is null, or when the webhook no longer exists): the attempt needs no read of its own.
   *
   * @since 0.1.0
   * @category models
   */
  type ClaimedDelivery,
  /**
   * The answer of a registration.
   *
   * @since 0.1.0
   * @category models
   */
  type CreateResult,
  /**
   * A page of deliveries, newest first.
   *
   * @since 0.1.0
   * @category models
   */
  type DeliveryPage,
  /**
   * A stored delivery: one event to one target.
   *
   * @since 0.1.0
   * @category schemas
   */
  DeliveryRow,
  /**
   * States of a delivery.
   *
   * @since 0.1.0
   * @category schemas
   */
  type DeliveryStatus,
  /**
   * Longest response excerpt kept in the attempt log.
   *
   * @since 0.1.0
   * @category constants
   */
  excerptBytes,
  /**
   * What a fan-out created: how many deliveries, and those leased to the caller.
   *
   * @since 0.1.0
   * @category models
   */
  type FannedOut,
  /**
   * Who leases the deliveries a fan-out creates, for how long, and how many at most ({@link WebhookStore}
   * `fanOutLeased`).
   *
   * @since 0.1.0
   * @category models
   */
  type FanOutLease,
  /**
   * An `Idempotency-Key` claim of a registration, judged by the shared rule (`IdempotencyWindow`).
   *
   * @since 0.1.0
   * @category models
   */
  type IdempotencyClaim,
  /**
   * A new delivery (due at once).
   *
   * @since 0.1.0
   * @category models
   */
  type NewDelivery,
  /**
   * One settle of a batch ({@link WebhookStore} `settleAll`).
   *
   * @since 0.1.0
   * @category models
   */
  type Settle,
  /**
   * Where a delivery goes after a claim.
   *
   * @since 0.1.0
   * @category models
   */
  type Settlement,
  /**
   * What an attempt needs of a delivery's configured webhook, read with its claim (`WebhookStore.claimDue`).
   *
   * @since 0.1.0
   * @category models
   */
  type Target,
  /**
   * A stored webhook registration; in SQL, `events` is a JSON list of event types.
   *
   * @since 0.1.0
   * @category schemas
   */
  WebhookRow
} from "./internal/store/records.js"
export {
  /**
   * The logged row of the `attempt`-th request of a delivery (both implementations).
   *
   * @since 0.1.0
   * @category utils
   */
  attemptRow,
  /**
   * Attempt rows by delivery id, each delivery's first attempt first.
   *
   * @since 0.1.0
   * @category utils
   */
  byDelivery,
  /**
   * The deliveries an outbox entry fans out to, given the account's webhooks: those of the task's environment, and the
   * task's own `webhookUrl`.
   *
   * @since 0.1.0
   * @category utils
   */
  deliveriesFor,
  /**
   * A new delivery id.
   *
   * @since 0.1.0
   * @category utils
   */
  deliveryId,
  /**
   * The rows a fan-out creates for `entries` given the accounts' `webhooks`, due at `now`; with a `lease`, the first
   * `lease.limit` of them leased (as a claim leases: fence 1), answered apart with their webhooks (both
   * implementations).
   *
   * @since 0.1.0
   * @category utils
   */
  fannedRows,
  /**
   * The row of a new delivery, due at `now` (both implementations).
   *
   * @since 0.1.0
   * @category utils
   */
  newRow,
  /**
   * The refusal of an `Idempotency-Key` reused with another request.
   *
   * @since 0.1.0
   * @category utils
   */
  reused,
  /**
   * A delivery after a settle: its attempt counted, moved on, its lease released (both implementations).
   *
   * @since 0.1.0
   * @category utils
   */
  settled,
  /**
   * Whether a webhook receives an event type.
   *
   * @since 0.1.0
   * @category utils
   */
  subscribes,
  /**
   * A new webhook id.
   *
   * @since 0.1.0
   * @category utils
   */
  webhookId
} from "./internal/store/rows.js"

/**
 * The storage port.
 *
 * @since 0.1.0
 * @category services
 */
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

/**
 * The memory storage as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<WebhookStore> = Layer.effect(WebhookStore, makeMemory)
