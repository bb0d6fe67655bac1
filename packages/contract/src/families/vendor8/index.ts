/**
 * vendor8: text-to-video, image-to-video and video-to-video (2.6 models); 16:9, durations as strings.
 *
 * @since 0.1.0
 */
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { seconds, text, video, videoSize } from "../../Outputs.js"
import * as Prices from "./prices.js"
import * as Requests from "./requests.js"

const common = {
  family: "vendor8",
  mediaType: "video",
  outputs: ({ input }: AnyGenerationRequest) => [
    video(videoSize(text(input["resolution"], "1080p"), "16:9"), seconds(input["duration"], 5))
  ],
  estimateSeconds: ({ input }: AnyGenerationRequest) => 60 + 5 * seconds(input["duration"], 5)
} as const

/** vendor8. */
export const vendor8 = Family.make({
  name: "vendor8",
  endpoints: [
    Family.endpoint({
      ...common,
      operation: "text-to-video",
      name: "vendor8TextToVideo",
      request: Requests.Vendor8TextToVideoRequest,
      example: () => ({ prompt: Family.samples.prompt })
    }),
    Family.endpoint({
      ...common,
      operation: "image-to-video",
      name: "vendor8ImageToVideo",
      request: Requests.Vendor8ImageToVideoRequest,
      example: () => ({ prompt: "slow zoom in", image_urls: [Family.samples.image] }),
      inputMedia: () => InputMedia.images(InputMedia.commonImage, "image_urls")
    }),
    Family.endpoint({
      ...common,
      operation: "video-to-video",
      name: "vendor8VideoToVideo",
      request: Requests.Vendor8VideoToVideoRequest,
      example: () => ({ prompt: "as an oil painting", video_urls: [Family.samples.video] }),
      inputMedia: () => [InputMedia.video("video_urls")]
    })
  ],
  prices: Prices
})
