/**
 * vendor7 prices: per second of output by resolution.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

/** vendor7: per second of output by resolution. */
export const Vendor7Prices = Schema.Struct({
  perSecond: Pricing.perSecondBy(["480p", "720p"])
}).annotations({ title: "Vendor7Prices" })

/** The vendor7 entries of the price table. */
export const fields = { "vendor7-imagine/text-to-video": Vendor7Prices }

/** The vendor7 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor7-imagine/text-to-video": { perSecond: { "480p": 0.05, "720p": 0.07 } }
}

/** The price of a vendor7 request, in micro-dollars. */
export const price = (_endpoint: string, { input, model }: AnyGenerationRequest, table: typeof defaults): number =>
  Pricing.perSecond(
    Pricing.pick(model, input, "resolution", table["vendor7-imagine/text-to-video"].perSecond, "720p"),
    Pricing.seconds(model, input, "duration", 6)
  )
