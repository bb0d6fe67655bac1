/**
 * Webhooks: registration, records, deliveries, test results and the event envelope (spec "Events";
 * decisions.md §6).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Environment } from "./ApiKey.js"
import { list, Metadata, oneOf, optional, strictParse, text, WebhookUrl } from "./Fields.js"
import { MediaType, Provider, ResultItem, TaskError, TaskStatus } from "./Task.js"
import { Timestamp } from "./Timestamp.js"

/**
 * Event types: the spec's two plus the extensions `task.expired` and `task.cancelled`.
 *
 * @since 0.1.0
 * @category constants
 */
export const eventTypes = ["task.completed", "task.failed", "task.expired", "task.cancelled"] as const
/**
 * An event type.
 *
 * @since 0.1.0
 * @category schemas
 */
export type EventType = typeof eventTypes[number]
/**
 * An event type.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EventType = oneOf(...eventTypes).annotations({ identifier: "EventType" })

/**
 * Body of `POST /api/v1/webhooks`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookCreate = Schema.Struct({
  url: WebhookUrl,
  events: list(EventType, { min: 1, max: eventTypes.length, noun: "event types" }),
  description: optional(text(500)),
  environment: optional(Environment.annotations({
    description: "Extension: the environment whose task events the webhook receives; only the calling key's " +
      "(default)"
  }))
}).annotations({ identifier: "WebhookCreate", ...strictParse })
/**
 * Body of `POST /api/v1/webhooks`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type WebhookCreate = typeof WebhookCreate.Type

/**
 * A registered webhook (never its secret).
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookRecord = Schema.Struct({
  id: Schema.String.annotations({ description: "`wh_` + ULID" }),
  environment: Environment.annotations({
    description: "The environment whose task events it receives: the creating key's (a key sees only its own)"
  }),
  url: Schema.String,
  events: Schema.Array(EventType),
  description: Schema.NullOr(Schema.String),
  enabled: Schema.Boolean,
  disabledReason: Schema.NullOr(Schema.String).annotations({
    description: "Why a disabled webhook receives nothing (a `410 Gone` from its receiver); null while enabled. " +
      "`POST /webhooks/{id}/enable` (or a replay) enables it again"
  }),
  createdAt: Timestamp
}).annotations({ identifier: "WebhookRecord" })
/**
 * A registered webhook.
 *
 * @since 0.1.0
 * @category schemas
 */
export type WebhookRecord = typeof WebhookRecord.Type

/**
 * The answer of webhook creation: the record plus the signing secret, shown only once.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookCreated = Schema.Struct({
  ...WebhookRecord.fields,
  secret: Schema.String.annotations({ description: "`whsec_` + base64 of 32 random bytes; shown only here" })
}).annotations({ identifier: "WebhookCreated" })
/**
 * The answer of webhook creation.
 *
 * @since 0.1.0
 * @category schemas
 */
export type WebhookCreated = typeof WebhookCreated.Type

/**
 * States of a delivery.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DeliveryStatus = Schema.Literal("pending", "succeeded", "failed").annotations({
  identifier: "DeliveryStatus"
})

/**
 * One delivery of one event to one webhook.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Delivery = Schema.Struct({
  id: Schema.String.annotations({ description: "`dlv_` + ULID" }),
  event_id: Schema.String,
  event_type: EventType,
  status: DeliveryStatus,
  attempts: Schema.Number.annotations({ description: "Requests made so far, the first included" }),
  last_status_code: Schema.NullOr(Schema.Number),
  last_error: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotations({ identifier: "Delivery" })
/**
 * One delivery of one event to one webhook.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Delivery = typeof Delivery.Type

/**
 * One request of a delivery, as logged.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Number.annotations({ description: "1 for the first request" }),
  status_code: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Number,
  response_excerpt: Schema.NullOr(Schema.String).annotations({
    description: "The start of the answer (1 KiB at most)"
  }),
  at: Timestamp
}).annotations({ identifier: "DeliveryAttempt" })
/**
 * One request of a delivery, as logged.
 *
 * @since 0.1.0
 * @category schemas
 */
export type DeliveryAttempt = typeof DeliveryAttempt.Type

/**
 * An item of the delivery list: the delivery, the task its event is about and its attempt log (extensions; the
 * dashboard shows them).
 *
 * @since 0.1.0
 * @category schemas
 */
export const DeliveryWithAttempts = Schema.Struct({
  ...Delivery.fields,
  task_id: Schema.NullOr(Schema.String).annotations({
    description: "The task the event is about (extension; null for a body that names none)"
  }),
  attempt_log: Schema.Array(DeliveryAttempt).annotations({ description: "Every request made so far, oldest first" })
}).annotations({ identifier: "DeliveryWithAttempts" })
/**
 * An item of the delivery list.
 *
 * @since 0.1.0
 * @category schemas
 */
export type DeliveryWithAttempts = typeof DeliveryWithAttempts.Type

/**
 * Query of the delivery list.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DeliveryListQuery = Schema.Struct({
  cursor: optional(text(512, 1)),
  status: optional(
    oneOf(...DeliveryStatus.literals).annotations({ description: "Only the deliveries in this state (extension)" })
  )
}).annotations({ identifier: "DeliveryListQuery" })
/**
 * Query of the delivery list.
 *
 * @since 0.1.0
 * @category schemas
 */
export type DeliveryListQuery = typeof DeliveryListQuery.Type

/**
 * `data` of `POST /api/v1/webhooks/{id}/test`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookTestResult = Schema.Struct({
  delivered: Schema.Boolean,
  statusCode: Schema.NullOr(Schema.Number),
  durationMs: Schema.Number,
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WebhookTestResult" })
/**
 * `data` of the webhook test.
 *
 * @since 0.1.0
 * @category schemas
 */
export type WebhookTestResult = typeof WebhookTestResult.Type

/**
 * The task as carried by an event (`data.task`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const EventTask = Schema.Struct({
  id: Schema.String,
  type: MediaType,
  status: TaskStatus,
  provider: Provider,
  model: Schema.String,
  created_at: Timestamp,
  completed_at: Schema.NullOr(Timestamp),
  result: optional(Schema.Array(ResultItem)),
  error: optional(TaskError),
  metadata: optional(Metadata)
}).annotations({ identifier: "EventTask" })
/**
 * The task as carried by an event.
 *
 * @since 0.1.0
 * @category schemas
 */
export type EventTask = typeof EventTask.Type

/**
 * The body of every webhook delivery.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookEvent = Schema.Struct({
  id: Schema.String.annotations({ description: "`evt_` + ULID; also in `X-Webhook-ID`" }),
  type: EventType,
  created_at: Timestamp,
  data: Schema.Struct({ task: EventTask })
}).annotations({ identifier: "WebhookEvent" })
/**
 * The body of every webhook delivery.
 *
 * @since 0.1.0
 * @category schemas
 */
export type WebhookEvent = typeof WebhookEvent.Type
