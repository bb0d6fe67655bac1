/**
 * vendor3 request Schemas: text-to-video (`vendor3-3`, `vendor3-3_fast`), billed per request for an 8-second clip.
 *
 * @since 0.1.0
 */
import { boolean, integer, oneOf, optional, prompt, text } from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

/**
 * `POST /api/v1/vendor3/text-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor3TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor3TextToVideoRequest",
  description: "Text to an 8-second video clip; billed per request",
  models: ["vendor3-3", "vendor3-3_fast"],
  input: {
    prompt: prompt(10_000).annotations({ description: "What to generate" }),
    aspect_ratio: optional(oneOf("16:9", "9:16", "Auto").annotations({ default: "16:9" })),
    seed: optional(integer(10_000, 99_999).annotations({ description: "Seed for reproducibility" })),
    enable_translation: optional(boolean.annotations({ description: "Upstream prompt translation before generation" })),
    watermark: optional(text(200).annotations({ description: "Watermark mode passed through to the upstream" }))
  },
  normalize: "annotated"
})
