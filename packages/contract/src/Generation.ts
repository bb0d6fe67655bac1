/**
 * The request Schema of every generation endpoint, keyed like the catalog (`<family>/<operation>`).
 *
 * @since 0.1.0
 */
import type * as Schema from "effect/Schema"
import type { EndpointKey } from "./Catalog.js"
import type { GenerationBody, GenerationBodyEncoded } from "./GenerationRequest.js"
import * as Vendor1 from "./inputs/vendor1.js"
import * as Vendor2 from "./inputs/vendor2.js"
import * as Vendor3 from "./inputs/vendor3.js"
import * as Vendor4 from "./inputs/vendor4.js"
import * as Vendor5 from "./inputs/vendor5.js"
import * as Vendor6 from "./inputs/vendor6.js"
import * as Vendor7 from "./inputs/vendor7.js"
import * as Vendor8 from "./inputs/vendor8.js"

/** Request Schemas by endpoint key. */
export const requests = {
  "vendor1/multimodal-video": Vendor1.Vendor1MultimodalVideoRequest,
  "vendor1/image-to-video": Vendor1.Vendor1ImageToVideoRequest,
  "vendor1/text-to-video": Vendor1.Vendor1TextToVideoRequest,
  "vendor2/image-to-video": Vendor2.Vendor2ImageToVideoRequest,
  "vendor2/text-to-video": Vendor2.Vendor2TextToVideoRequest,
  "vendor3/text-to-video": Vendor3.Vendor3TextToVideoRequest,
  "vendor4/text-to-image": Vendor4.Vendor4TextToImageRequest,
  "vendor4/image-to-image": Vendor4.Vendor4ImageToImageRequest,
  "vendor5/image-to-video": Vendor5.Vendor5ImageToVideoRequest,
  "vendor5/text-to-video": Vendor5.Vendor5TextToVideoRequest,
  "vendor6/image-to-image": Vendor6.Vendor6ImageToImageRequest,
  "vendor7/text-to-video": Vendor7.Vendor7TextToVideoRequest,
  "vendor8/text-to-video": Vendor8.Vendor8TextToVideoRequest,
  "vendor8/image-to-video": Vendor8.Vendor8ImageToVideoRequest,
  "vendor8/video-to-video": Vendor8.Vendor8VideoToVideoRequest
} as const satisfies Record<EndpointKey, Schema.Schema.Any>

/** A validated, normalized generation request of any endpoint. */
export type AnyGenerationRequest = GenerationBody<string, Record<string, unknown>>

/** The request Schema of an endpoint, typed for code that handles every endpoint alike. */
export const requestSchema = (
  endpoint: EndpointKey
): Schema.Schema<AnyGenerationRequest, GenerationBodyEncoded<string, Record<string, unknown>>> =>
  requests[endpoint] as unknown as Schema.Schema<
    AnyGenerationRequest,
    GenerationBodyEncoded<string, Record<string, unknown>>
  >

/** A generation request together with the endpoint it was sent to (what the task service accepts). */
export interface GenerationCommand {
  readonly endpoint: EndpointKey
  readonly request: AnyGenerationRequest
  /** `Idempotency-Key` header, when sent. */
  readonly idempotencyKey: string | undefined
}
