/**
 * vendor7: text-to-video (`vendor7-imagine/text-to-video`); durations are strings (`"6"`, `"10"`, `"15"`).
 *
 * @since 0.1.0
 */
import * as Family from "../../Family.js"
import { seconds, text, video, videoSize } from "../../Outputs.js"
import * as Prices from "./prices.js"
import { Vendor7TextToVideoRequest } from "./requests.js"

/** vendor7. */
export const vendor7 = Family.make({
  name: "vendor7",
  endpoints: [
    Family.endpoint({
      family: "vendor7",
      operation: "text-to-video",
      name: "vendor7TextToVideo",
      mediaType: "video",
      request: Vendor7TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [
        video(
          videoSize(text(input["resolution"], "720p"), text(input["aspect_ratio"], "16:9")),
          seconds(input["duration"], 6)
        )
      ],
      estimateSeconds: ({ input }) => 40 + 4 * seconds(input["duration"], 6)
    })
  ],
  prices: Prices
})
