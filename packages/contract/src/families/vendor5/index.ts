/**
 * vendor5: image-to-video and text-to-video (`vendor5q3-pro`, `vendor5q3-turbo`), billed per second of output by
 * resolution, with the `off_peak` discount and the `is_rec` surcharge (in credits).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as InputMedia from "../../InputMedia.js"
import { seconds, videoOf } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import * as Requests from "./requests.js"

/**
 * vendor5 Q3 models: per second by resolution, plus the `off_peak` discount and the `is_rec` surcharge.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor5Prices = Schema.Struct({
  perSecond: Pricing.perSecondBy(["540p", "720p", "1080p"]),
  offPeakFactor: Pricing.DiscountFactor.annotations({
    description: "Factor applied to the generation price with off_peak"
  }),
  isRecCredits: Pricing.Credits.annotations({ description: "Credits added with is_rec" }),
  creditPrice: Pricing.Price.annotations({ description: "USD per credit" })
}).annotations({ title: "Vendor5Prices" })

const tier = (p540: number, p720: number, p1080: number) => ({
  perSecond: { "540p": p540, "720p": p720, "1080p": p1080 },
  offPeakFactor: 0.5,
  isRecCredits: 10,
  creditPrice: 0.005
})

const outputs = ({ input }: AnyGenerationRequest) => [videoOf(input, { resolution: "720p", ratio: "16:9", seconds: 5 })]

const estimateSeconds = ({ input, model }: AnyGenerationRequest) =>
  (model === "vendor5q3-turbo" ? 30 : 60) + 4 * seconds(input["duration"], 5)

/**
 * vendor5.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor5 = Family.make({
  name: "vendor5",
  endpoints: [
    Family.endpoint("vendor5", "image-to-video", "video", "vendor5ImageToVideo", {
      request: Requests.Vendor5ImageToVideoRequest,
      example: () => ({ images: [Family.samples.image] }),
      outputs,
      estimateSeconds,
      inputMedia: () => InputMedia.images(Requests.vendor5ImageRules, "images")
    }),
    Family.endpoint("vendor5", "text-to-video", "video", "vendor5TextToVideo", {
      request: Requests.Vendor5TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs,
      estimateSeconds
    })
  ],
  prices: {
    fields: { "vendor5q3-pro": Vendor5Prices, "vendor5q3-turbo": Vendor5Prices },
    defaults: { "vendor5q3-pro": tier(0.07, 0.10, 0.16), "vendor5q3-turbo": tier(0.04, 0.06, 0.08) },
    price: (_endpoint, request, table) => {
      const { input, model } = request
      if (model !== "vendor5q3-pro" && model !== "vendor5q3-turbo") {
        return Pricing.unpriceable(model, "not a vendor5 model")
      }
      const entry = table[model]
      const generation = Pricing.bySecond(request, entry.perSecond, "720p", 5)
      const discounted = Pricing.flag(input, "off_peak", false)
        ? Pricing.applyFactor(generation, entry.offPeakFactor)
        : generation
      const recommendation = Pricing.flag(input, "is_rec", false)
        ? entry.isRecCredits * Pricing.micros(entry.creditPrice)
        : 0
      return discounted + recommendation
    }
  }
})
