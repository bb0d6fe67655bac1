/**
 * The headers of a delivery's request: a configured webhook's, signed with its secret (the spec's and the Standard
 * Webhooks' signatures), and a per-job (`webhookUrl`) delivery's, unsigned, with the task id read from the payload.
 */
import { WebhookSignature } from "@mediagate/contract"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** Headers of a configured-webhook delivery: the spec's, signed with `sign`, plus Standard Webhooks headers. */
export const configuredHeaders = (
  secret: string,
  eventId: string,
  timestamp: number,
  body: string
): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "mediagate-webhooks/0.1",
  "x-webhook-id": eventId,
  "x-webhook-timestamp": String(timestamp),
  "x-webhook-signature": WebhookSignature.sign(secret, timestamp, body),
  "webhook-id": eventId,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": WebhookSignature.signStandard(secret, eventId, timestamp, body)
})

/** Headers of a per-job (`webhookUrl`) delivery: no signature. */
export const perJobHeaders = (
  eventType: string,
  jobId: string,
  eventId: string,
  timestamp: number
): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "mediagate-webhooks/0.1",
  "x-webhook-event": eventType,
  "x-job-id": jobId,
  "x-webhook-id": eventId,
  "x-webhook-timestamp": String(timestamp)
})

const decodeTaskId = Schema.decodeUnknownOption(
  Schema.parseJson(Schema.Struct({ data: Schema.Struct({ task: Schema.Struct({ id: Schema.String }) }) }))
)

/** The id of the task an event's payload is about (`data.task.id`), or empty when the payload has none. */
export const taskIdOf = (payload: string): string =>
  Option.match(decodeTaskId(payload), { onNone: () => "", onSome: (event) => event.data.task.id })
