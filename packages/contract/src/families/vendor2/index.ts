/**
 * vendor2: image-to-video and text-to-video (`vendor2-v3`, `vendor2-v2-6`). The family has no resolution field:
 * `std` renders 720p, `pro` 1080p.
 *
 * @since 0.1.0
 */
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { seconds, text, video, videoSize } from "../../Outputs.js"
import * as Prices from "./prices.js"
import { Vendor2ImageToVideoRequest, Vendor2TextToVideoRequest } from "./requests.js"

const outputs = ({ input }: AnyGenerationRequest) => [
  video(
    videoSize(input["mode"] === "pro" ? "1080p" : "720p", text(input["aspect_ratio"], "16:9")),
    seconds(input["duration"], 5)
  )
]

const estimateSeconds = ({ input }: AnyGenerationRequest) => 60 + 6 * seconds(input["duration"], 5)

/** vendor2. */
export const vendor2 = Family.make({
  name: "vendor2",
  endpoints: [
    Family.endpoint({
      family: "vendor2",
      operation: "image-to-video",
      name: "vendor2ImageToVideo",
      mediaType: "video",
      request: Vendor2ImageToVideoRequest,
      example: () => ({ image: Family.samples.image }),
      outputs,
      estimateSeconds,
      inputMedia: () => InputMedia.images(InputMedia.commonImage, "image", "image_tail")
    }),
    Family.endpoint({
      family: "vendor2",
      operation: "text-to-video",
      name: "vendor2TextToVideo",
      mediaType: "video",
      request: Vendor2TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs,
      estimateSeconds
    })
  ],
  prices: Prices
})
