/**
 * vendor3: text-to-video (`vendor3-3`, `vendor3-3_fast`), one 8-second 720p clip per request, billed per request.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import { videoOf } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import { Vendor3TextToVideoRequest } from "./requests.js"

/**
 * A price per request.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PerRequestPrices = Schema.Struct({
  perRequest: Pricing.Price.annotations({ description: "USD per request" })
}).annotations({ title: "PerRequestPrices" })

/**
 * vendor3.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor3 = Family.make({
  name: "vendor3",
  endpoints: [
    Family.endpoint("vendor3", "text-to-video", "video", "vendor3TextToVideo", {
      request: Vendor3TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: ({ input }) => [videoOf(input, { resolution: "720p", ratio: "16:9", seconds: 8 })],
      estimateSeconds: ({ model }) => model === "vendor3-3_fast" ? 45 : 90
    })
  ],
  prices: {
    fields: { "vendor3-3": PerRequestPrices, "vendor3-3_fast": PerRequestPrices },
    defaults: { "vendor3-3": { perRequest: 3.20 }, "vendor3-3_fast": { perRequest: 1.20 } },
    price: (_endpoint, { model }, table) =>
      model === "vendor3-3" || model === "vendor3-3_fast"
        ? Pricing.micros(table[model].perRequest)
        : Pricing.unpriceable(model, "not a vendor3 model")
  }
})
