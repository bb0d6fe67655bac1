/**
 * vendor3: text-to-video (`vendor3-3`, `vendor3-3_fast`), one 8-second 720p clip per request, billed per request.
 *
 * @since 0.1.0
 */
import * as Family from "../../Family.js"
import { text, video, videoSize } from "../../Outputs.js"
import * as Prices from "./prices.js"
import { Vendor3TextToVideoRequest } from "./requests.js"

/** vendor3. */
export const vendor3 = Family.make({
  name: "vendor3",
  endpoints: [
    Family.endpoint({
      family: "vendor3",
      operation: "text-to-video",
      name: "vendor3TextToVideo",
      mediaType: "video",
      request: Vendor3TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [video(videoSize("720p", text(input["aspect_ratio"], "16:9")), 8)],
      estimateSeconds: ({ model }) => model === "vendor3-3_fast" ? 45 : 90
    })
  ],
  prices: Prices
})
