/**
 * vendor4 prices: one image per request, a price per image.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"
import { isVendor4Model } from "./requests.js"

/** A price per image. */
export const PerImagePrices = Schema.Struct({
  perImage: Pricing.Price.annotations({ description: "USD per image" })
}).annotations({ title: "PerImagePrices" })

/** The vendor4 entries of the price table. */
export const fields = {
  "vendor4-5-0-lite": PerImagePrices,
  "vendor4-4-5": PerImagePrices,
  "vendor4-4-0": PerImagePrices,
  "vendor4-3-0-t2i": PerImagePrices
}

/** The vendor4 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor4-5-0-lite": { perImage: 0.04 },
  "vendor4-4-5": { perImage: 0.04 },
  "vendor4-4-0": { perImage: 0.03 },
  "vendor4-3-0-t2i": { perImage: 0.03 }
}

/** The price of a vendor4 request, in micro-dollars. */
export const price = (_endpoint: string, { model }: AnyGenerationRequest, table: typeof defaults): number =>
  isVendor4Model(model) ? Pricing.micros(table[model].perImage) : Pricing.unpriceable(model, "not a vendor4 model")
