/**
 * The 15 generation endpoints (`POST /api/v1/<family>/<operation>`), one per catalog entry.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import type * as Schema from "effect/Schema"
import { endpoints, type EndpointInfo } from "../Catalog.js"
import { success } from "../Envelope.js"
import { IdempotencyKeyReused, InsufficientBalance, KeyPermissionDenied, ServiceUnavailable, SpendLimitExceeded, ValidationError } from "../Errors.js"
import { requests } from "../Generation.js"
import { Authentication } from "../Security.js"
import { CreationAck } from "../Task.js"
import { IdempotencyHeaders } from "./Common.js"

/** `{ success: true, data: <creation acknowledgement> }`. */
export const CreationResponse = success(CreationAck, "CreationResponse")

const generation = <const Info extends EndpointInfo, P extends Schema.Schema<any, any, never>>(info: Info, payload: P) =>
  HttpApiEndpoint.post(info.name as Info["name"], info.path as Info["path"])
    .setPayload(payload)
    .setHeaders(IdempotencyHeaders)
    .addSuccess(CreationResponse, { status: 201 })
    .addError(ValidationError.wire)
    .addError(InsufficientBalance.wire)
    .addError(SpendLimitExceeded.wire)
    .addError(IdempotencyKeyReused.wire)
    .annotate(OpenApi.Summary, `${info.family} ${info.operation} (${info.models.join(", ")})`)
    .annotate(
      OpenApi.Description,
      `Creates a ${info.mediaType} task. Answers at once with the task id in status \`pending\`; ` +
        `the result arrives through GET /api/v1/tasks/{id} or a webhook.`
    )

/** The generation endpoints. */
export class GenerationApi extends HttpApiGroup.make("generation")
  .add(generation(endpoints["vendor1/multimodal-video"], requests["vendor1/multimodal-video"]))
  .add(generation(endpoints["vendor1/image-to-video"], requests["vendor1/image-to-video"]))
  .add(generation(endpoints["vendor1/text-to-video"], requests["vendor1/text-to-video"]))
  .add(generation(endpoints["vendor2/image-to-video"], requests["vendor2/image-to-video"]))
  .add(generation(endpoints["vendor2/text-to-video"], requests["vendor2/text-to-video"]))
  .add(generation(endpoints["vendor3/text-to-video"], requests["vendor3/text-to-video"]))
  .add(generation(endpoints["vendor4/text-to-image"], requests["vendor4/text-to-image"]))
  .add(generation(endpoints["vendor4/image-to-image"], requests["vendor4/image-to-image"]))
  .add(generation(endpoints["vendor5/image-to-video"], requests["vendor5/image-to-video"]))
  .add(generation(endpoints["vendor5/text-to-video"], requests["vendor5/text-to-video"]))
  .add(generation(endpoints["vendor6/image-to-image"], requests["vendor6/image-to-image"]))
  .add(generation(endpoints["vendor7/text-to-video"], requests["vendor7/text-to-video"]))
  .add(generation(endpoints["vendor8/text-to-video"], requests["vendor8/text-to-video"]))
  .add(generation(endpoints["vendor8/image-to-video"], requests["vendor8/image-to-video"]))
  .add(generation(endpoints["vendor8/video-to-video"], requests["vendor8/video-to-video"]))
  .addError(KeyPermissionDenied.wire)
  .addError(ServiceUnavailable.wire)
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Generation")
  .annotate(OpenApi.Description, "Video and image generation requests, one endpoint per family and operation")
{}
