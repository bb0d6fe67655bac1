/**
 * What both webhook storages (memory and SQL) build the same way: new ids, the deliveries an outbox entry fans out
 * to, the rows of new, leased and settled deliveries, the attempt log's rows, and the refusal of a reused
 * `Idempotency-Key`.
 */
import { Errors, type Webhook } from "@mediagate/contract"
import type { OutboxEntry } from "@mediagate/engine/TaskOutbox"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import type {
  AttemptResult,
  AttemptRow,
  ClaimedDelivery,
  DeliveryRow,
  FanOutLease,
  NewDelivery,
  Settlement,
  WebhookRow
} from "./records.js"

/** A new webhook id. */
export const webhookId = (now?: number): string => `wh_${Ids.ulid(now)}`
/** A new delivery id. */
export const deliveryId = (now?: number): string => `dlv_${Ids.ulid(now)}`

/** Whether a webhook receives an event type. */
export const subscribes = (webhook: WebhookRow, type: Webhook.EventType): boolean =>
  webhook.enabled && webhook.deletedAt === null && webhook.events.includes(type)

/** The account's webhooks that receive an outbox entry: those of its task's environment subscribed to its type. */
const receiversOf = (entry: OutboxEntry, webhooks: ReadonlyArray<WebhookRow>): ReadonlyArray<WebhookRow> =>
  webhooks.filter((webhook) =>
    webhook.accountId === entry.accountId && webhook.environment === entry.environment &&
    subscribes(webhook, entry.eventType)
  )

/** Whether an entry goes anywhere: to a webhook or to its task's own `webhookUrl`. */
const isDelivered = (entry: OutboxEntry, receivers: ReadonlyArray<WebhookRow>) =>
  receivers.length > 0 || entry.webhookUrl !== null

/** The deliveries of an entry to its `receivers` and its task's own `webhookUrl`: its event read and written out. */
const deliveriesTo = (entry: OutboxEntry, receivers: ReadonlyArray<WebhookRow>) =>
  Effect.map(entry.event, (event) => {
    const payload = JSON.stringify(event)
    const base = { accountId: entry.accountId, eventId: event.id, eventType: event.type, payload }
    const configured = receivers.map((webhook): NewDelivery => ({ ...base, webhookId: webhook.id, url: webhook.url }))
    return entry.webhookUrl === null ? configured : [...configured, { ...base, webhookId: null, url: entry.webhookUrl }]
  })

/**
 * The deliveries an outbox entry fans out to, given the account's webhooks: those of the task's environment, and
 * the task's own `webhookUrl`. Most tasks have no receiver: their event is not decoded nor written out.
 */
export const deliveriesFor = (
  entry: OutboxEntry,
  webhooks: ReadonlyArray<WebhookRow>
): Effect.Effect<ReadonlyArray<NewDelivery>, PersistenceError> => {
  const receivers = receiversOf(entry, webhooks)
  return isDelivered(entry, receivers) ? deliveriesTo(entry, receivers) : Effect.succeed([])
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
 * implementations). Fails when the event of an entry with a receiver cannot be read.
 */
export const fannedRows = (
  entries: ReadonlyArray<OutboxEntry>,
  webhooks: ReadonlyArray<WebhookRow>,
  now: number,
  lease?: FanOutLease
): Effect.Effect<
  { readonly rows: ReadonlyArray<DeliveryRow>; readonly leased: ReadonlyArray<ClaimedDelivery> },
  PersistenceError
> =>
  Effect.map(
    // only the entries that go somewhere have their event read
    Effect.all(entries.flatMap((entry) => {
      const receivers = receiversOf(entry, webhooks)
      return isDelivered(entry, receivers) ? [deliveriesTo(entry, receivers)] : []
    })),
    (perEntry) => {
      const rows: Array<DeliveryRow> = []
      const leased: Array<ClaimedDelivery> = []
      const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]))
      for (const deliveries of perEntry) {
        for (const delivery of deliveries) {
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
  )

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
