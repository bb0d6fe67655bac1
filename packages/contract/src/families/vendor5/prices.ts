/**
 * vendor5 prices: per second of output by resolution, with the `off_peak` discount and the `is_rec` surcharge (in
 * credits).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

/** vendor5 Q3 models: per second by resolution, plus the `off_peak` discount and the `is_rec` surcharge. */
export const Vendor5Prices = Schema.Struct({
  perSecond: Pricing.perSecondBy(["540p", "720p", "1080p"]),
  offPeakFactor: Pricing.DiscountFactor.annotations({ description: "Factor applied to the generation price with off_peak" }),
  isRecCredits: Pricing.Credits.annotations({ description: "Credits added with is_rec" }),
  creditPrice: Pricing.Price.annotations({ description: "USD per credit" })
}).annotations({ title: "Vendor5Prices" })

/** The vendor5 entries of the price table. */
export const fields = { "vendor5q3-pro": Vendor5Prices, "vendor5q3-turbo": Vendor5Prices }

const tier = (p540: number, p720: number, p1080: number) => ({
  perSecond: { "540p": p540, "720p": p720, "1080p": p1080 },
  offPeakFactor: 0.5,
  isRecCredits: 10,
  creditPrice: 0.005
})

/** The vendor5 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor5q3-pro": tier(0.07, 0.10, 0.16),
  "vendor5q3-turbo": tier(0.04, 0.06, 0.08)
}

/** The price of a vendor5 request, in micro-dollars. */
export const price = (_endpoint: string, { input, model }: AnyGenerationRequest, table: typeof defaults): number => {
  if (model !== "vendor5q3-pro" && model !== "vendor5q3-turbo") return Pricing.unpriceable(model, "not a vendor5 model")
  const entry = table[model]
  const generation = Pricing.perSecond(
    Pricing.pick(model, input, "resolution", entry.perSecond, "720p"),
    Pricing.seconds(model, input, "duration", 5)
  )
  const discounted = Pricing.flag(input, "off_peak", false) ? Pricing.applyFactor(generation, entry.offPeakFactor) : generation
  const recommendation = Pricing.flag(input, "is_rec", false) ? entry.isRecCredits * Pricing.micros(entry.creditPrice) : 0
  return discounted + recommendation
}
