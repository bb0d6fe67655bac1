/**
 * vendor2 prices: `vendor2-v3` per second by mode (a tier with sound), `vendor2-v2-6` per video by mode and
 * duration (sound multiplies).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

const byMode = (description: string) => Pricing.byKey(["std", "pro"], description)

/** `vendor2-v3`: per second by mode, without and with sound. */
export const Vendor2V3Prices = Schema.Struct({
  perSecond: byMode("USD per second with sound \"off\", by mode"),
  perSecondWithSound: byMode("USD per second with sound \"on\", by mode")
}).annotations({ title: "Vendor2V3Prices" })

const byDuration = Pricing.byKey(["5", "10"], "USD per video, by duration in seconds")

/** `vendor2-v2-6`: per video by mode and duration; `sound: "on"` multiplies. */
export const Vendor2V26Prices = Schema.Struct({
  perVideo: Schema.Struct({ std: byDuration, pro: byDuration }).annotations({
    description: "USD per video, by mode and duration"
  }),
  soundMultiplier: Pricing.Factor.annotations({ description: "Factor applied with sound \"on\"" })
}).annotations({ title: "Vendor2V26Prices" })

/** The vendor2 entries of the price table. */
export const fields = { "vendor2-v3": Vendor2V3Prices, "vendor2-v2-6": Vendor2V26Prices }

/** The vendor2 default prices, in USD. */
export const defaults: Schema.Struct.Type<typeof fields> = {
  "vendor2-v3": { perSecond: { std: 0.084, pro: 0.112 }, perSecondWithSound: { std: 0.126, pro: 0.168 } },
  "vendor2-v2-6": { perVideo: { std: { "5": 0.21, "10": 0.42 }, pro: { "5": 0.35, "10": 0.70 } }, soundMultiplier: 2 }
}

/** The price of a vendor2 request, in micro-dollars. */
export const price = (_endpoint: string, { input, model }: AnyGenerationRequest, table: typeof defaults): number => {
  switch (model) {
    case "vendor2-v3": {
      const entry = table[model]
      const tier = input["sound"] === "on" ? entry.perSecondWithSound : entry.perSecond
      return Pricing.perSecond(
        Pricing.pick(model, input, "mode", tier, "std"),
        Pricing.seconds(model, input, "duration", 5)
      )
    }
    case "vendor2-v2-6": {
      const entry = table[model]
      const byDuration = entry.perVideo[Pricing.keyOf(model, input, "mode", entry.perVideo, "std")]
      const video = Pricing.micros(Pricing.pick(model, input, "duration", byDuration, "5"))
      return input["sound"] === "on" ? Pricing.applyFactor(video, entry.soundMultiplier) : video
    }
    default:
      return Pricing.unpriceable(model, "not a vendor2 model")
  }
}
