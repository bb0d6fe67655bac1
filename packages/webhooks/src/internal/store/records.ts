/**
 * The records of the webhook storage: registrations, deliveries and the attempt log as Schemas (their rows in SQL,
 * snake-case columns), and the types the storage port's operations take and answer.
 */
import { Webhook } from "@mediagate/contract"
import type * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Schema from "effect/Schema"

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

/**
 * Who leases the deliveries a fan-out creates, for how long, and how many at most ({@link WebhookStore}
 * `fanOutLeased`).
 */
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

/** The webhook backlog ({@link WebhookStore} `backlog`). */
export interface Backlog {
  readonly pending: number
  readonly due: number
  readonly failedSince: number
}
