/**
 * vendor7: text-to-video (`vendor7-imagine/text-to-video`); durations are strings (`"6"`, `"10"`, `"15"`); billed
 * per second of output by resolution.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import { seconds, videoOf } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import { Vendor7TextToVideoRequest } from "./requests.js"

/**
 * vendor7: per second of output by resolution.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor7Prices = Schema.Struct({
  perSecond: Pricing.perSecondBy(["480p", "720p"])
}).annotations({ title: "Vendor7Prices" })

/**
 * vendor7.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor7 = Family.make({
  name: "vendor7",
  endpoints: [
    Family.endpoint("vendor7", "text-to-video", "video", "vendor7TextToVideo", {
      request: Vendor7TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [videoOf(input, { resolution: "720p", ratio: "16:9", seconds: 6 })],
      estimateSeconds: ({ input }) => 40 + 4 * seconds(input["duration"], 6)
    })
  ],
  prices: {
    fields: { "vendor7-imagine/text-to-video": Vendor7Prices },
    defaults: { "vendor7-imagine/text-to-video": { perSecond: { "480p": 0.05, "720p": 0.07 } } },
    price: (_endpoint, request, table) =>
      Pricing.bySecond(request, table["vendor7-imagine/text-to-video"].perSecond, "720p", 6)
  }
})
