/**
 * vendor5 request Schemas: image-to-video and text-to-video on the Q3 models (`vendor5q3-pro`, `vendor5q3-turbo`),
 * both with audio-video sync and 1 to 16 s clips, billed per second of output.
 *
 * @since 0.1.0
 */
import { boolean, imageRef, type ImageRules, integer, list, oneOf, optional, prompt, text } from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

/**
 * Rules of the start-frame image (spec: png, jpeg/jpg, webp; ratio 1:4 to 4:1; at most 50 MB).
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor5ImageRules: ImageRules = {
  formats: ["png", "jpeg", "webp"],
  maxBytes: 50 * 1024 * 1024,
  minRatio: 1 / 4,
  maxRatio: 4
}

/**
 * Largest seed: the unsigned 32-bit range (the spec states no range).
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor5MaxSeed = 4_294_967_295

const models = ["vendor5q3-pro", "vendor5q3-turbo"] as const

/** Models that accept `bgm`: none, since every model of these endpoints is Q3 ("not available for Q3 models"). */
const bgmModels: ReadonlyArray<string> = []

const duration = optional(
  integer(1, 16).annotations({ description: "Length of the video in seconds", default: 5 })
)
const resolution = optional(
  oneOf("540p", "720p", "1080p").annotations({ description: "Output resolution (priced differently)", default: "720p" })
)
const audio = optional(
  boolean.annotations({
    description: "Audio-video sync (dialogue and sound effects); true on Q3 models",
    default: true
  })
)
const seed = optional(
  integer(0, vendor5MaxSeed).annotations({ description: `Seed for reproducibility, 0 to ${vendor5MaxSeed}` })
)
const offPeak = optional(
  boolean.annotations({ description: "50% discount; the task completes within 48 hours", default: false })
)

/**
 * `POST /api/v1/vendor5/image-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor5ImageToVideoRequest = GenerationRequest.make({
  identifier: "Vendor5ImageToVideoRequest",
  description: "One start-frame image (and an optional prompt) to a 1 to 16 s video with audio sync; billed per second",
  models,
  input: {
    images: list(imageRef(vendor5ImageRules), { min: 1, max: 1, noun: "image" }).annotations({
      description: "Exactly one start-frame image: public URL or base64 data URI (png, jpeg, webp; width/height " +
        "ratio 1:4 to 4:1; at most 50 MB)"
    }),
    prompt: optional(
      prompt(5000).annotations({ description: "What to generate; ignored when `is_rec` is true" })
    ),
    duration,
    resolution,
    audio,
    voice_id: optional(
      text(200, 1).annotations({ description: "Voice of the dialogue; effective only when `audio` is true" })
    ),
    is_rec: optional(
      boolean.annotations({
        description: "Use the recommended prompt instead of the given one; costs 10 additional credits per task",
        default: false
      })
    ),
    bgm: optional(
      boolean.annotations({
        description: "Background music; not available for Q3 models, so refused on every model of this endpoint"
      })
    ),
    movement_amplitude: optional(
      oneOf("auto", "small", "medium", "large").annotations({
        description: "Movement amplitude; accepted but ineffective on Q3 models",
        default: "auto"
      })
    ),
    seed,
    off_peak: offPeak
  },
  rules: (body) => GenerationRequest.onlyFor(body, "bgm", bgmModels),
  normalize: "annotated"
})

/**
 * `POST /api/v1/vendor5/text-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor5TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor5TextToVideoRequest",
  description: "Text to a 1 to 16 s video with audio sync; billed per second",
  models,
  input: {
    prompt: prompt(2000).annotations({ description: "What to generate" }),
    duration,
    aspect_ratio: optional(
      oneOf("16:9", "9:16", "1:1", "4:3", "3:4").annotations({ description: "Aspect ratio", default: "16:9" })
    ),
    resolution,
    style: optional(oneOf("general", "anime").annotations({ description: "Visual style", default: "general" })),
    audio,
    seed,
    off_peak: offPeak
  },
  normalize: "annotated"
})
