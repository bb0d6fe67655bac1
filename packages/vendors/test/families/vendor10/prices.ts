/**
 * vendor10 (test-only) prices: per second of output by resolution.
 */
import { type Generation, Pricing } from "@mediagate/contract"
import * as Schema from "effect/Schema"

/** Per second of output by resolution. */
export const Vendor10Prices = Schema.Struct({ perSecond: Pricing.perSecondBy(["480p", "720p"]) })

/** The vendor10 entries of the price table. */
export const fields = { "vendor10-a": Vendor10Prices, "vendor10-b": Vendor10Prices }

/** The vendor10 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor10-a": { perSecond: { "480p": 0.01, "720p": 0.02 } },
  "vendor10-b": { perSecond: { "480p": 0.03, "720p": 0.05 } }
}

const isModel = (model: string): model is keyof typeof fields => Object.hasOwn(fields, model)

/** The price of a vendor10 request, in micro-dollars. */
export const price = (_endpoint: string, { input, model }: Generation.AnyGenerationRequest, table: typeof defaults) =>
  isModel(model)
    ? Pricing.perSecond(
      Pricing.pick(model, input, "resolution", table[model].perSecond, "480p"),
      Pricing.seconds(model, input, "duration", 4)
    )
    : Pricing.unpriceable(model, "not a vendor10 model")
