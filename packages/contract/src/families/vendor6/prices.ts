/**
 * vendor6 prices: per image by resolution (search is free).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

/** `vendor6-2`: per image by resolution (search is free). */
export const Vendor6Prices = Schema.Struct({
  perImage: Pricing.byKey(["1K", "2K", "4K"], "USD per image, by resolution")
}).annotations({ title: "Vendor6Prices" })

/** The vendor6 entries of the price table. */
export const fields = { "vendor6-2": Vendor6Prices }

/** The vendor6 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = { "vendor6-2": { perImage: { "1K": 0.08, "2K": 0.12, "4K": 0.16 } } }

/** The price of a vendor6 request, in micro-dollars. */
export const price = (_endpoint: string, { input, model }: AnyGenerationRequest, table: typeof defaults): number =>
  Pricing.micros(Pricing.pick(model, input, "resolution", table["vendor6-2"].perImage, "1K"))
