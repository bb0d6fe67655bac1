/**
 * vendor1 prices: per second of output by resolution; `vendor1-2` has a cheaper tier with video references (and
 * bills the reference seconds measured while the task runs), `vendor1-1-5-pro` a tier with audio.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Pricing from "../../Pricing.js"

const resolutions = ["480p", "720p", "1080p"] as const

/** A vendor1 resolution. */
export type Vendor1Resolution = typeof resolutions[number]

/** True for a vendor1 resolution. */
export const isResolution = Schema.is(Schema.Literal(...resolutions))

const perSecond = Pricing.perSecondBy(resolutions)

/** `vendor1-2`: per second by resolution, without and with a video reference. */
export const Vendor1MultimodalPrices = Schema.Struct({
  perSecond: perSecond.annotations({
    description: "USD per second of output without reference_video_urls, by resolution"
  }),
  videoReferencePerSecond: perSecond.annotations({
    description: "USD per second with reference_video_urls (output seconds at accept, reference seconds when " +
      "measured), by resolution"
  })
}).annotations({ title: "Vendor1MultimodalPrices" })

/** `vendor1-1-5-pro`: per second by resolution, without and with audio (`generate_audio`). */
export const Vendor1AudioPrices = Schema.Struct({
  perSecond: perSecond.annotations({ description: "USD per second with generate_audio false, by resolution" }),
  perSecondWithAudio: perSecond.annotations({ description: "USD per second with generate_audio true, by resolution" })
}).annotations({ title: "Vendor1AudioPrices" })

/** The vendor1 1.0 series: per second by resolution. */
export const Vendor1Prices = Schema.Struct({ perSecond }).annotations({ title: "Vendor1Prices" })

/** The vendor1 entries of the price table. */
export const fields = {
  "vendor1-2": Vendor1MultimodalPrices,
  "vendor1-1-5-pro": Vendor1AudioPrices,
  "vendor1-1-0-pro": Vendor1Prices,
  "vendor1-1-0-pro-fast": Vendor1Prices,
  "vendor1-1-0-lite-i2v": Vendor1Prices,
  "vendor1-1-0-lite-t2v": Vendor1Prices
}

/** The vendor1 entries of a price table. */
export type Table = Schema.Struct.Type<typeof fields>

const tier = (p480: number, p720: number, p1080: number) => ({ "480p": p480, "720p": p720, "1080p": p1080 })

/** The vendor1 default prices, in USD. */
export const defaults: Table = {
  "vendor1-2": { perSecond: tier(0.095, 0.205, 0.51), videoReferencePerSecond: tier(0.0575, 0.125, 0.31) },
  "vendor1-1-5-pro": { perSecond: tier(0.012, 0.026, 0.058), perSecondWithAudio: tier(0.024, 0.052, 0.116) },
  "vendor1-1-0-pro": { perSecond: tier(0.024, 0.054, 0.122) },
  "vendor1-1-0-pro-fast": { perSecond: tier(0.010, 0.022, 0.049) },
  "vendor1-1-0-lite-i2v": { perSecond: tier(0.017, 0.039, 0.088) },
  "vendor1-1-0-lite-t2v": { perSecond: tier(0.017, 0.039, 0.088) }
}

/** The price of a vendor1 request, in micro-dollars. */
export const price = (endpoint: string, { input, model }: AnyGenerationRequest, table: Table): number => {
  const bySecond = (prices: Readonly<Record<Vendor1Resolution, number>>, fallback: Vendor1Resolution, seconds?: number) =>
    Pricing.perSecond(
      Pricing.pick(model, input, "resolution", prices, fallback),
      Pricing.seconds(model, input, "duration", seconds)
    )
  switch (model) {
    case "vendor1-2": {
      const entry = table[model]
      return bySecond(
        Pricing.hasItems(input["reference_video_urls"]) ? entry.videoReferencePerSecond : entry.perSecond,
        "720p",
        5
      )
    }
    case "vendor1-1-5-pro": {
      const entry = table[model]
      return bySecond(Pricing.flag(input, "generate_audio", true) ? entry.perSecondWithAudio : entry.perSecond, "720p")
    }
    case "vendor1-1-0-pro":
    case "vendor1-1-0-pro-fast":
    case "vendor1-1-0-lite-i2v":
    case "vendor1-1-0-lite-t2v":
      return bySecond(
        table[model].perSecond,
        endpoint === "vendor1/text-to-video" && model !== "vendor1-1-0-lite-t2v" ? "1080p" : "720p"
      )
    default:
      return Pricing.unpriceable(model, "not a vendor1 model")
  }
}

/**
 * The price of the reference seconds of a `vendor1-2` request with `reference_video_urls` (measured when the task
 * runs, charged then as a separate ledger entry): the video-reference tier of `resolution` times `seconds` (the
 * total length of the reference videos). Seconds are taken to the millisecond (rounded half up) and the price is
 * rounded half up to a micro-dollar; a negative or non-finite length prices 0.
 */
export const referenceSecondsPrice = (
  resolution: Vendor1Resolution,
  seconds: number,
  table: Table = defaults
): number => {
  const milliseconds = Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : 0
  return Pricing.mulDivHalfUp(Pricing.micros(table["vendor1-2"].videoReferencePerSecond[resolution]), milliseconds, 1000)
}
