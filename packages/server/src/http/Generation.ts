/**
 * Handlers of the 15 generation endpoints: permission check, then `TaskService.create` with the validated,
 * normalized request.
 *
 * @since 0.1.0
 */
import { Api, Catalog, type Generation, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"

/** The generation group. */
export const layer = Envelope.group(Api.MediagateApi, "generation", (handlers) =>
  Effect.gen(function*() {
    const tasks = yield* Services.TaskService
    const create = (key: Catalog.EndpointKey) => {
      const info = Catalog.endpoints[key]
      return (request: {
        readonly payload: Generation.AnyGenerationRequest
        readonly headers: { readonly "idempotency-key"?: string }
      }) =>
        Effect.gen(function*() {
          const principal = yield* Authorization.require(Authorization.createPermission(info.mediaType), info.family)
          return yield* tasks.create(principal, {
            endpoint: key,
            request: request.payload,
            idempotencyKey: request.headers["idempotency-key"]
          })
        }).pipe(Effect.withSpan(`Generation.${info.name}`))
    }
    return handlers
      .handle("vendor1MultimodalVideo", create("vendor1/multimodal-video"))
      .handle("vendor1ImageToVideo", create("vendor1/image-to-video"))
      .handle("vendor1TextToVideo", create("vendor1/text-to-video"))
      .handle("vendor2ImageToVideo", create("vendor2/image-to-video"))
      .handle("vendor2TextToVideo", create("vendor2/text-to-video"))
      .handle("vendor3TextToVideo", create("vendor3/text-to-video"))
      .handle("vendor4TextToImage", create("vendor4/text-to-image"))
      .handle("vendor4ImageToImage", create("vendor4/image-to-image"))
      .handle("vendor5ImageToVideo", create("vendor5/image-to-video"))
      .handle("vendor5TextToVideo", create("vendor5/text-to-video"))
      .handle("vendor6ImageToImage", create("vendor6/image-to-image"))
      .handle("vendor7TextToVideo", create("vendor7/text-to-video"))
      .handle("vendor8TextToVideo", create("vendor8/text-to-video"))
      .handle("vendor8ImageToVideo", create("vendor8/image-to-video"))
      .handle("vendor8VideoToVideo", create("vendor8/video-to-video"))
  }))
