/**
 * vendor2: image-to-video and text-to-video (`vendor2-v3`, `vendor2-v2-6`). The family has no resolution field:
 * `std` renders 720p, `pro` 1080p. `vendor2-v3` is billed per second by mode (a tier with sound), `vendor2-v2-6`
 * per video by mode and duration (sound multiplies).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as InputMedia from "../../InputMedia.js"
import { seconds, text, video, videoSize } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import { Vendor2ImageToVideoRequest, Vendor2TextToVideoRequest } from "./requests.js"

const byMode = (description: string) => Pricing.byKey(["std", "pro"], description)

/**
 * `vendor2-v3`: per second by mode, without and with sound.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor2V3Prices = Schema.Struct({
  perSecond: byMode("USD per second with sound \"off\", by mode"),
  perSecondWithSound: byMode("USD per second with sound \"on\", by mode")
}).annotations({ title: "Vendor2V3Prices" })

const byDuration = Pricing.byKey(["5", "10"], "USD per video, by duration in seconds")

/**
 * `vendor2-v2-6`: per video by mode and duration; `sound: "on"` multiplies.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor2V26Prices = Schema.Struct({
  perVideo: Schema.Struct({ std: byDuration, pro: byDuration }).annotations({
    description: "USD per video, by mode and duration"
  }),
  soundMultiplier: Pricing.Factor.annotations({ description: "Factor applied with sound \"on\"" })
}).annotations({ title: "Vendor2V26Prices" })

const outputs = ({ input }: AnyGenerationRequest) => [
  video(
    videoSize(input["mode"] === "pro" ? "1080p" : "720p", text(input["aspect_ratio"], "16:9")),
    seconds(input["duration"], 5)
  )
]

const estimateSeconds = ({ input }: AnyGenerationRequest) => 60 + 6 * seconds(input["duration"], 5)

/**
 * vendor2.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor2 = Family.make({
  name: "vendor2",
  endpoints: [
    Family.endpoint("vendor2", "image-to-video", "video", "vendor2ImageToVideo", {
      request: Vendor2ImageToVideoRequest,
      example: () => ({ image: Family.samples.image }),
      outputs,
      estimateSeconds,
      inputMedia: () => InputMedia.images(InputMedia.commonImage, "image", "image_tail")
    }),
    Family.endpoint("vendor2", "text-to-video", "video", "vendor2TextToVideo", {
      request: Vendor2TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt }),
      outputs,
      estimateSeconds
    })
  ],
  prices: {
    fields: { "vendor2-v3": Vendor2V3Prices, "vendor2-v2-6": Vendor2V26Prices },
    defaults: {
      "vendor2-v3": { perSecond: { std: 0.084, pro: 0.112 }, perSecondWithSound: { std: 0.126, pro: 0.168 } },
      "vendor2-v2-6": {
        perVideo: { std: { "5": 0.21, "10": 0.42 }, pro: { "5": 0.35, "10": 0.70 } },
        soundMultiplier: 2
      }
    },
    price: (_endpoint, { input, model }, table) => {
      switch (model) {
        case "vendor2-v3": {
          const entry = table[model]
          const tier = input["sound"] === "on" ? entry.perSecondWithSound : entry.perSecond
          return Pricing.bySecond({ input, model }, tier, "std", 5, "mode")
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
  }
})
