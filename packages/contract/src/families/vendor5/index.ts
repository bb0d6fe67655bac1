/**
 * vendor5: image-to-video and text-to-video (`vendor5q3-pro`, `vendor5q3-turbo`).
 *
 * @since 0.1.0
 */
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { seconds, text, video, videoSize } from "../../Outputs.js"
import * as Prices from "./prices.js"
import * as Requests from "./requests.js"

const outputs = ({ input }: AnyGenerationRequest) => [
  video(videoSize(text(input["resolution"], "720p"), text(input["aspect_ratio"], "16:9")), seconds(input["duration"], 5))
]

const estimateSeconds = ({ input, model }: AnyGenerationRequest) =>
  (model === "vendor5q3-turbo" ? 30 : 60) + 4 * seconds(input["duration"], 5)

/** vendor5. */
export const vendor5 = Family.make({
  name: "vendor5",
  endpoints: [
    Family.endpoint({
      family: "vendor5",
      operation: "image-to-video",
      name: "vendor5ImageToVideo",
      mediaType: "video",
      request: Requests.Vendor5ImageToVideoRequest,
      example: () => ({ images: [Family.samples.image] }),
      outputs,
      estimateSeconds,
      inputMedia: () => InputMedia.images(Requests.vendor5ImageRules, "images")
    }),
    Family.endpoint({
      family: "vendor5",
      operation: "text-to-video",
      name: "vendor5TextToVideo",
      mediaType: "video",
      request: Requests.Vendor5TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs,
      estimateSeconds
    })
  ],
  prices: Prices
})
