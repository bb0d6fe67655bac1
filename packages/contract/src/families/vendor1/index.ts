/**
 * vendor1: multimodal-video (`vendor1-2`), image-to-video and text-to-video (1.5 Pro, 1.0 Pro, Pro Fast, Lite).
 * `vendor1-2` also bills the seconds of its reference videos, measured while the task runs.
 *
 * @since 0.1.0
 */
import type { AnyGenerationRequest } from "../../Generation.js"
import * as Family from "../../Family.js"
import * as InputMedia from "../../InputMedia.js"
import { lastFrame, seconds, text, video, videoSize } from "../../Outputs.js"
import * as Prices from "./prices.js"
import * as Requests from "./requests.js"

const { image, prompt } = Family.samples

/** A video, plus its last frame when asked. */
const outputs = (ratioField: string) => ({ input }: AnyGenerationRequest) => {
  const out = video(
    videoSize(text(input["resolution"], "720p"), text(input[ratioField], "16:9")),
    seconds(input["duration"], 5)
  )
  return input["return_last_frame"] === true ? [out, lastFrame(out)] : [out]
}

const estimate = (base: number) => ({ input }: AnyGenerationRequest) => base + 4 * seconds(input["duration"], 5)

/** vendor1. */
export const vendor1 = Family.make({
  name: "vendor1",
  endpoints: [
    Family.endpoint({
      family: "vendor1",
      operation: "multimodal-video",
      name: "vendor1MultimodalVideo",
      mediaType: "video",
      request: Requests.Vendor1MultimodalVideoRequest,
      example: () => ({ prompt }),
      outputs: outputs("aspect_ratio"),
      estimateSeconds: estimate(90),
      inputMedia: () => [
        ...InputMedia.images(InputMedia.commonImage, "first_frame_url", "last_frame_url", "reference_image_urls"),
        InputMedia.video("reference_video_urls"),
        InputMedia.audio("reference_audio_urls", 15 * 1024 * 1024, ["mpeg", "wav", "aac", "mp4", "ogg"])
      ]
    }),
    Family.endpoint({
      family: "vendor1",
      operation: "image-to-video",
      name: "vendor1ImageToVideo",
      mediaType: "video",
      request: Requests.Vendor1ImageToVideoRequest,
      example: (model) => ({ image, duration: model === "vendor1-1-5-pro" ? 5 : 4 }),
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
    Family.endpoint({
      family: "vendor1",
      operation: "text-to-video",
      name: "vendor1TextToVideo",
      mediaType: "video",
      request: Requests.Vendor1TextToVideoRequest,
      example: () => ({ prompt, duration: 5 }),
      outputs: outputs("ratio"),
      estimateSeconds: estimate(60)
    })
  ],
  prices: Prices,
  charges: (endpoint, { input, model }, measured, table) => {
    const seconds = measured.videoSeconds["reference_video_urls"] ?? 0
    const resolution = input["resolution"]
    return endpoint === "vendor1/multimodal-video" && seconds > 0
      ? [{
        amountMicros: Prices.referenceSecondsPrice(Prices.isResolution(resolution) ? resolution : "720p", seconds, table),
        description: `${model} reference video seconds (${seconds.toFixed(3)} s)`
      }]
      : []
  }
})
