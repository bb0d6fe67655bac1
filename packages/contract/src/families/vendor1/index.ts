/**
 * vendor1: multimodal-video (`vendor1-2`), image-to-video and text-to-video (1.5 Pro, 1.0 Pro, Pro Fast, Lite),
 * billed per second of output by resolution; `vendor1-2` has a cheaper tier with video references and also bills
 * the seconds of its reference videos, measured while the task runs. `vendor1-1-5-pro` has a tier with audio.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as InputMedia from "../../InputMedia.js"
import { lastFrame, seconds, videoOf } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import * as Requests from "./requests.js"

const resolutions = ["480p", "720p", "1080p"] as const
/**
 * A vendor1 resolution.
 *
 * @since 0.1.0
 * @category models
 */
export type Vendor1Resolution = typeof resolutions[number]
const isResolution = Schema.is(Schema.Literal(...resolutions))
const perSecond = Pricing.perSecondBy(resolutions)

/**
 * `vendor1-2`: per second by resolution, without and with a video reference.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor1MultimodalPrices = Schema.Struct({
  perSecond: perSecond.annotations({
    description: "USD per second of output without reference_video_urls, by resolution"
  }),
  videoReferencePerSecond: perSecond.annotations({
    description: "USD per second with reference_video_urls (output seconds at accept, reference seconds when " +
      "measured), by resolution"
  })
}).annotations({ title: "Vendor1MultimodalPrices" })

/**
 * `vendor1-1-5-pro`: per second by resolution, without and with audio (`generate_audio`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor1AudioPrices = Schema.Struct({
  perSecond: perSecond.annotations({ description: "USD per second with generate_audio false, by resolution" }),
  perSecondWithAudio: perSecond.annotations({ description: "USD per second with generate_audio true, by resolution" })
}).annotations({ title: "Vendor1AudioPrices" })

/**
 * The vendor1 1.0 series: per second by resolution.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor1Prices = Schema.Struct({ perSecond }).annotations({ title: "Vendor1Prices" })

const fields = {
  "vendor1-2": Vendor1MultimodalPrices,
  "vendor1-1-5-pro": Vendor1AudioPrices,
  ...Pricing.each(
    ["vendor1-1-0-pro", "vendor1-1-0-pro-fast", "vendor1-1-0-lite-i2v", "vendor1-1-0-lite-t2v"],
    Vendor1Prices
  )
}
type Table = Schema.Struct.Type<typeof fields>
const tier = (p480: number, p720: number, p1080: number) => ({ "480p": p480, "720p": p720, "1080p": p1080 })

/**
 * The vendor1 default prices, in USD.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: Table = {
  "vendor1-2": { perSecond: tier(0.095, 0.205, 0.51), videoReferencePerSecond: tier(0.0575, 0.125, 0.31) },
  "vendor1-1-5-pro": { perSecond: tier(0.012, 0.026, 0.058), perSecondWithAudio: tier(0.024, 0.052, 0.116) },
  "vendor1-1-0-pro": { perSecond: tier(0.024, 0.054, 0.122) },
  "vendor1-1-0-pro-fast": { perSecond: tier(0.010, 0.022, 0.049) },
  "vendor1-1-0-lite-i2v": { perSecond: tier(0.017, 0.039, 0.088) },
  "vendor1-1-0-lite-t2v": { perSecond: tier(0.017, 0.039, 0.088) }
}

const price = (endpoint: string, request: AnyGenerationRequest, table: Table): number => {
  const { input, model } = request
  switch (model) {
    case "vendor1-2": {
      const entry = table[model]
      const tier = Pricing.hasItems(input["reference_video_urls"]) ? entry.videoReferencePerSecond : entry.perSecond
      return Pricing.bySecond(request, tier, "720p", 5)
    }
    case "vendor1-1-5-pro": {
      const entry = table[model]
      const tier = Pricing.flag(input, "generate_audio", true) ? entry.perSecondWithAudio : entry.perSecond
      return Pricing.bySecond(request, tier, "720p", undefined)
    }
    case "vendor1-1-0-pro":
    case "vendor1-1-0-pro-fast":
    case "vendor1-1-0-lite-i2v":
    case "vendor1-1-0-lite-t2v": {
      const fallback = endpoint === "vendor1/text-to-video" && model !== "vendor1-1-0-lite-t2v" ? "1080p" : "720p"
      return Pricing.bySecond(request, table[model].perSecond, fallback, undefined)
    }
    default:
      return Pricing.unpriceable(model, "not a vendor1 model")
  }
}

/**
 * The price of the reference seconds of a `vendor1-2` request with `reference_video_urls` (measured when the task
 * runs, charged then as a separate ledger entry): the video-reference tier of `resolution` times `seconds` (the
 * total length of the reference videos). Seconds are taken to the millisecond (rounded half up) and the price is
 * rounded half up to a micro-dollar; a negative or non-finite length prices 0.
 *
 * @since 0.1.0
 * @category utils
 */
export const referenceSecondsPrice = (resolution: Vendor1Resolution, seconds: number, table: Table = defaults) => {
  const milliseconds = Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : 0
  return Pricing.mulDivHalfUp(
    Pricing.micros(table["vendor1-2"].videoReferencePerSecond[resolution]),
    milliseconds,
    1000
  )
}

/** A video, plus its last frame when asked. */
const outputs = (ratioField: string) => ({ input }: AnyGenerationRequest) => {
  const out = videoOf(input, { resolution: "720p", ratio: "16:9", seconds: 5 }, ratioField)
  return input["return_last_frame"] === true ? [out, lastFrame(out)] : [out]
}

const estimate = (base: number) => ({ input }: AnyGenerationRequest) => base + 4 * seconds(input["duration"], 5)

/**
 * vendor1.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor1 = Family.make({
  name: "vendor1",
  endpoints: [
    Family.endpoint("vendor1", "multimodal-video", "video", "vendor1MultimodalVideo", {
      request: Requests.Vendor1MultimodalVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs: outputs("aspect_ratio"),
      estimateSeconds: estimate(90),
      inputMedia: () => [
        ...InputMedia.images(InputMedia.commonImage, "first_frame_url", "last_frame_url", "reference_image_urls"),
        InputMedia.video("reference_video_urls"),
        InputMedia.audio("reference_audio_urls", 15 * 1024 * 1024, ["mpeg", "wav", "aac", "mp4", "ogg"])
      ]
    }),
    Family.endpoint("vendor1", "image-to-video", "video", "vendor1ImageToVideo", {
      request: Requests.Vendor1ImageToVideoRequest,
      example: (model) => ({ image: Family.samples.image, duration: model === "vendor1-1-5-pro" ? 5 : 4 }),
      outputs: outputs("ratio"),
      estimateSeconds: estimate(60),
      inputMedia: (model) =>
        InputMedia.images(
          model === "vendor1-1-5-pro"
            ? Requests.imageRules
            : { ...Requests.imageRules, formats: Requests.commonFormats },
          "image",
          "last_image",
          "reference_images"
        )
    }),
    Family.endpoint("vendor1", "text-to-video", "video", "vendor1TextToVideo", {
      request: Requests.Vendor1TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt, duration: 5 }),
      outputs: outputs("ratio"),
      estimateSeconds: estimate(60)
    })
  ],
  prices: { fields, defaults, price },
  charges: (endpoint, { input, model }, measured, table) => {
    const seconds = measured.videoSeconds["reference_video_urls"] ?? 0
    const resolution = input["resolution"]
    return endpoint === "vendor1/multimodal-video" && seconds > 0
      ? [{
        amountMicros: referenceSecondsPrice(isResolution(resolution) ? resolution : "720p", seconds, table),
        description: `${model} reference video seconds (${seconds.toFixed(3)} s)`
      }]
      : []
  }
})
