/**
 * vendor8 prices: per second of output by resolution, the same for the three 2.6 models.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

/** vendor8: per second of output by resolution. */
export const Vendor8Prices = Schema.Struct({
  perSecond: Pricing.perSecondBy(["720p", "1080p"])
}).annotations({ title: "Vendor8Prices" })

/** The vendor8 entries of the price table. */
export const fields = {
  "vendor8/2-6-text-to-video": Vendor8Prices,
  "vendor8/2-6-image-to-video": Vendor8Prices,
  "vendor8/2-6-video-to-video": Vendor8Prices
}

const perSecond = { perSecond: { "720p": 0.10, "1080p": 0.15 } }

/** The vendor8 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor8/2-6-text-to-video": perSecond,
  "vendor8/2-6-image-to-video": perSecond,
  "vendor8/2-6-video-to-video": perSecond
}

const isModel = (model: string): model is keyof typeof fields => Object.hasOwn(fields, model)

/** The price of a vendor8 request, in micro-dollars. */
export const price = (_endpoint: string, { input, model }: AnyGenerationRequest, table: typeof defaults): number => {
  if (!isModel(model)) return Pricing.unpriceable(model, "not a vendor8 model")
  const entry = table[model]
  return Pricing.perSecond(
    Pricing.pick(model, input, "resolution", entry.perSecond, "1080p"),
    Pricing.seconds(model, input, "duration", 5)
  )
}
