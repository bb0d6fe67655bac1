/**
 * vendor8: text-to-video, image-to-video and video-to-video (2.6 models); 16:9, durations as strings; billed per
 * second of output by resolution, the same for the three models.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Family from "../../Family.js"
import type { AnyGenerationRequest } from "../../Generation.js"
import * as InputMedia from "../../InputMedia.js"
import { seconds, videoOf } from "../../Outputs.js"
import * as Pricing from "../../Pricing.js"
import * as Requests from "./requests.js"

/**
 * vendor8: per second of output by resolution.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor8Prices = Schema.Struct({
  perSecond: Pricing.perSecondBy(["720p", "1080p"])
}).annotations({ title: "Vendor8Prices" })

const models = ["vendor8/2-6-text-to-video", "vendor8/2-6-image-to-video", "vendor8/2-6-video-to-video"] as const
const fields = Pricing.each(models, Vendor8Prices)
const isModel = (model: string): model is keyof typeof fields => Object.hasOwn(fields, model)

const common = {
  outputs: ({ input }: AnyGenerationRequest) => [videoOf(input, { resolution: "1080p", ratio: "16:9", seconds: 5 })],
  estimateSeconds: ({ input }: AnyGenerationRequest) => 60 + 5 * seconds(input["duration"], 5)
}

/**
 * vendor8.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor8 = Family.make({
  name: "vendor8",
  endpoints: [
    Family.endpoint("vendor8", "text-to-video", "video", "vendor8TextToVideo", {
      ...common,
      request: Requests.Vendor8TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt })
    }),
    Family.endpoint("vendor8", "image-to-video", "video", "vendor8ImageToVideo", {
      ...common,
      request: Requests.Vendor8ImageToVideoRequest,
      example: () => ({ prompt: "slow zoom in", image_urls: [Family.samples.image] }),
      inputMedia: () => InputMedia.images(InputMedia.commonImage, "image_urls")
    }),
    Family.endpoint("vendor8", "video-to-video", "video", "vendor8VideoToVideo", {
      ...common,
      request: Requests.Vendor8VideoToVideoRequest,
      example: () => ({ prompt: "as an oil painting", video_urls: [Family.samples.video] }),
      inputMedia: () => [InputMedia.video("video_urls")]
    })
  ],
  prices: {
    fields,
    defaults: Pricing.each(models, { perSecond: { "720p": 0.10, "1080p": 0.15 } }),
    price: (_endpoint, request, table) =>
      isModel(request.model)
        ? Pricing.bySecond(request, table[request.model].perSecond, "1080p", 5)
        : Pricing.unpriceable(request.model, "not a vendor8 model")
  }
})
