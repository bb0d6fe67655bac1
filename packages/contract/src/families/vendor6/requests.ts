/**
 * vendor6 request Schema: image-to-image (`vendor6-2`), billed per image by resolution.
 *
 * @since 0.1.0
 */
import { boolean, list, oneOf, optional, prompt, PublicUrl } from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

/**
 * `POST /api/v1/vendor6/image-to-image`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor6ImageToImageRequest = GenerationRequest.make({
  identifier: "Vendor6ImageToImageRequest",
  description: "Prompt and up to 14 reference images to one image; billed per image by resolution",
  models: ["vendor6-2"],
  input: {
    prompt: prompt(10_000).annotations({ description: "What to generate" }),
    image_input: optional(
      list(PublicUrl, { min: 0, max: 14, noun: "URLs" }).annotations({
        description: "Up to 14 public reference image URLs (may be empty)"
      })
    ),
    aspect_ratio: optional(
      oneOf("auto", "1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9", "1:4", "4:1", "1:8", "8:1")
        .annotations({ description: "Aspect ratio of the output", default: "auto" })
    ),
    resolution: optional(
      oneOf("1K", "2K", "4K").annotations({ description: "Output resolution (priced differently)", default: "1K" })
    ),
    output_format: optional(oneOf("jpg", "png").annotations({ description: "Output file format", default: "jpg" })),
    vendor6_search: optional(
      boolean.annotations({ description: "Real-time search enhancement; free of charge", default: false })
    )
  },
  normalize: "annotated"
})
