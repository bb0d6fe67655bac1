/**
 * Configured webhooks: register, list, delete, test, deliveries and replay (`/api/v1/webhooks`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Deleted, page, success } from "../Envelope.js"
import { DeliveryNotFound, IdempotencyKeyReused, RateLimited, ValidationError, WebhookNotFound } from "../Errors.js"
import {
  Delivery,
  DeliveryListQuery,
  DeliveryWithAttempts,
  WebhookCreate,
  WebhookCreated,
  WebhookRecord,
  WebhookTestResult
} from "../Webhook.js"
import { authenticated, IdempotencyHeaders, PathId } from "./Common.js"

/**
 * The webhook endpoints.
 *
 * @since 0.1.0
 * @category api
 */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/webhooks")
      .setPayload(WebhookCreate)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(success(WebhookCreated, "WebhookCreatedResponse"), { status: 201 })
      .addError(Schema.Union(ValidationError.wire, IdempotencyKeyReused.wire))
      .annotate(OpenApi.Summary, "Register a webhook; the signing secret is shown only in this response")
  )
  .add(
    HttpApiEndpoint.get("list", "/webhooks")
      .addSuccess(success(Schema.Array(WebhookRecord), "WebhookListResponse"))
      .annotate(OpenApi.Summary, "List the registered webhooks of the calling key's environment")
  )
  .add(
    HttpApiEndpoint.del("delete", "/webhooks/:id")
      .setPath(PathId)
      .addSuccess(success(Deleted, "WebhookDeletedResponse"))
      .addError(WebhookNotFound.wire)
      .annotate(OpenApi.Summary, "Delete a webhook")
  )
  .add(
    HttpApiEndpoint.post("test", "/webhooks/:id/test")
      .setPath(PathId)
      .addSuccess(success(WebhookTestResult, "WebhookTestResponse"))
      .addError(Schema.Union(WebhookNotFound.wire, RateLimited.wire))
      .annotate(OpenApi.Summary, "Send one signed test event synchronously and report the outcome")
  )
  .add(
    HttpApiEndpoint.post("enable", "/webhooks/:id/enable")
      .setPath(PathId)
      .addSuccess(success(WebhookRecord, "WebhookEnableResponse"))
      .addError(WebhookNotFound.wire)
      .annotate(OpenApi.Summary, "Enable a webhook that a 410 Gone disabled: later events are delivered (extension)")
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/webhooks/:id/deliveries")
      .setPath(PathId)
      .setUrlParams(DeliveryListQuery)
      .addSuccess(page(DeliveryWithAttempts, "DeliveryListResponse"))
      .addError(Schema.Union(WebhookNotFound.wire, ValidationError.wire))
      .annotate(OpenApi.Summary, "List the webhook's deliveries with their attempts, newest first (extension)")
  )
  .add(
    HttpApiEndpoint.post("replay", "/webhooks/:id/deliveries/:deliveryId/replay")
      .setPath(Schema.Struct({ id: Schema.String, deliveryId: Schema.String }))
      .addSuccess(success(Delivery, "DeliveryReplayResponse"))
      .addError(Schema.Union(WebhookNotFound.wire, DeliveryNotFound.wire, RateLimited.wire))
      .annotate(OpenApi.Summary, "Replay a delivery: a new attempt series with the same event (extension)")
  )
  .pipe(authenticated)
  .annotate(OpenApi.Title, "Webhooks")
  .annotate(OpenApi.Description, "Signed event deliveries: endpoints, test events, deliveries and replays")
{}
