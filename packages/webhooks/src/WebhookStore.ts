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

export { makeMemory } from "./internal/memory/store.js"
export {
  type AttemptResult,
  AttemptRow,
  type Backlog,
  type ClaimedDelivery,
  type CreateResult,
  type DeliveryPage,
  DeliveryRow,
  type DeliveryStatus,
  excerptBytes,
  type FannedOut,
  type FanOutLease,
  type IdempotencyClaim,
  type NewDelivery,
  type Settle,
  type Settlement,
  type Target,
  WebhookRow
} from "./internal/store/records.js"
export {
  attemptRow,
  byDelivery,
  deliveriesFor,
  deliveryId,
  fannedRows,
  newRow,
  reused,
  settled,
  subscribes,
  webhookId
} from "./internal/store/rows.js"

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

/** The memory storage as a layer. */
export const layerMemory: Layer.Layer<WebhookStore> = Layer.effect(WebhookStore, makeMemory)
