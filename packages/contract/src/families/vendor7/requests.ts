/**
 * vendor7 request Schema: text-to-video (`vendor7-imagine/text-to-video`), billed per second of output.
 *
 * @since 0.1.0
 */
import { oneOf, optional, prompt } from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

/**
 * `POST /api/v1/vendor7/text-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor7TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor7TextToVideoRequest",
  description: "Text to a 6, 10 or 15 s video; billed per second of output",
  models: ["vendor7-imagine/text-to-video"],
  input: {
    prompt: prompt(10_000).annotations({ description: "What to generate" }),
    duration: optional(
      oneOf("6", "10", "15").annotations({ description: "Length of the video in seconds, as a string", default: "6" })
    ),
    resolution: optional(
      oneOf("480p", "720p").annotations({ description: "Output resolution (priced differently)", default: "720p" })
    ),
    aspect_ratio: optional(
      oneOf("16:9", "9:16", "1:1", "4:3", "3:4", "21:9").annotations({ description: "Aspect ratio", default: "16:9" })
    ),
    mode: optional(oneOf("normal", "fun", "spicy").annotations({ description: "Generation mode", default: "normal" }))
  },
  normalize: "annotated"
})
