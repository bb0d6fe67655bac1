/**
 * vendor8 request Schemas: text-to-video, image-to-video and video-to-video (the 2.6 models), billed per second of
 * output by resolution.
 *
 * @since 0.1.0
 */
import { list, oneOf, optional, prompt, PublicUrl } from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

const resolution = optional(
  oneOf("720p", "1080p").annotations({ description: "Output resolution (priced differently)", default: "1080p" })
)

/** `duration`: one of `seconds`, as a string; default 5. */
const duration = <const L extends readonly ["5", ...Array<string>]>(...seconds: L) =>
  optional(oneOf(...seconds).annotations({ description: "Length of the video in seconds, as a string", default: "5" }))

/**
 * `POST /api/v1/vendor8/text-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor8TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor8TextToVideoRequest",
  description: "Text to a 5, 10 or 15 s video",
  models: ["vendor8/2-6-text-to-video"],
  input: {
    prompt: prompt(10_000).annotations({ description: "What to generate" }),
    duration: duration("5", "10", "15"),
    resolution
  },
  normalize: "annotated"
})

/**
 * `POST /api/v1/vendor8/image-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor8ImageToVideoRequest = GenerationRequest.make({
  identifier: "Vendor8ImageToVideoRequest",
  description: "One image to a 5, 10 or 15 s video",
  models: ["vendor8/2-6-image-to-video"],
  input: {
    prompt: prompt(10_000).annotations({ description: "Target motion and scene transformation" }),
    image_urls: list(PublicUrl, { min: 1, max: 1, noun: "URL", message: "must contain exactly one URL" }).annotations({
      description: "Exactly one public image URL directly reachable by the upstream"
    }),
    duration: duration("5", "10", "15"),
    resolution
  },
  normalize: "annotated"
})

/**
 * `POST /api/v1/vendor8/video-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor8VideoToVideoRequest = GenerationRequest.make({
  identifier: "Vendor8VideoToVideoRequest",
  description: "One to three videos to a 5 or 10 s video",
  models: ["vendor8/2-6-video-to-video"],
  input: {
    prompt: prompt(10_000).annotations({ description: "Target style, motion or transformation" }),
    video_urls: list(PublicUrl, { min: 1, max: 3, noun: "URLs", message: "must contain 1 to 3 URLs" }).annotations({
      description: "1 to 3 public video URLs directly reachable by the upstream"
    }),
    duration: duration("5", "10"),
    resolution
  },
  normalize: "annotated"
})
