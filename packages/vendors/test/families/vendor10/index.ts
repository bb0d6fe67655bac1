/**
 * vendor10: a family that exists only in the tests, built like the shipped ones (a folder with `requests.ts`,
 * `prices.ts` and this module) to show that a registry with one more line serves it end to end.
 */
import { Family, Outputs } from "@mediagate/contract"
import * as Prices from "./prices.js"
import { Vendor10TextToVideoRequest } from "./requests.js"

/** vendor10. */
export const vendor10 = Family.make({
  name: "vendor10",
  endpoints: [
    Family.endpoint({
      family: "vendor10",
      operation: "text-to-video",
      name: "vendor10TextToVideo",
      mediaType: "video",
      request: Vendor10TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [
        Outputs.video(Outputs.videoSize(Outputs.text(input["resolution"], "480p"), "16:9"), Outputs.seconds(input["duration"], 4))
      ],
      estimateSeconds: ({ input }) => 10 + Outputs.seconds(input["duration"], 4)
    })
  ],
  prices: Prices
})
