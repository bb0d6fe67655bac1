/**
 * vendor3 prices: a price per request (an 8-second clip).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

/** A price per request. */
export const PerRequestPrices = Schema.Struct({
  perRequest: Pricing.Price.annotations({ description: "USD per request" })
}).annotations({ title: "PerRequestPrices" })

/** The vendor3 entries of the price table. */
export const fields = { "vendor3-3": PerRequestPrices, "vendor3-3_fast": PerRequestPrices }

/** The vendor3 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor3-3": { perRequest: 3.20 },
  "vendor3-3_fast": { perRequest: 1.20 }
}

/** The price of a vendor3 request, in micro-dollars. */
export const price = (_endpoint: string, { model }: AnyGenerationRequest, table: Schema.Struct.Type<typeof fields>) =>
  model === "vendor3-3" || model === "vendor3-3_fast"
    ? Pricing.micros(table[model].perRequest)
    : Pricing.unpriceable(model, "not a vendor3 model")
