/**
 * vendor1 request Schemas: multimodal-video (`vendor1-2`), image-to-video and text-to-video (the 1.5 Pro and 1.0
 * series models).
 *
 * Field Schemas carry the rules common to every model of an endpoint (so OpenAPI shows them); the per-model and
 * cross-field rules live in `rules`, the effective defaults of the chosen model in `normalize`.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import type * as Schema from "effect/Schema"
import { inspectImageDataUri, isDataUri } from "../../DataUri.js"
import {
  boolean,
  describe,
  imageRef,
  type ImageRules,
  integer,
  issue,
  list,
  oneOf,
  optional,
  prompt,
  PublicUrl,
  text,
  withMessage
} from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

const pro15 = "vendor1-1-5-pro"
const pro10 = "vendor1-1-0-pro"
const proFast = "vendor1-1-0-pro-fast"
const liteI2v = "vendor1-1-0-lite-i2v"
const liteT2v = "vendor1-1-0-lite-t2v"

const fixedRatios = ["16:9", "4:3", "1:1", "3:4", "9:16", "21:9"] as const

/** Durations of the 1.0 series (the field range) and of 1.5 Pro (a model rule). */
const duration = withMessage(
  integer(2, 12),
  `must be an integer from 2 to 12 (4 to 12 for model ${pro15})`
).annotations({
  description: "Seconds. 1.0 series: integer 2 to 12. 1.5 Pro: integer 4 to 12"
})

const durationRule = (body: { readonly model: string; readonly input: Readonly<Record<string, unknown>> }) =>
  body.model === pro15 ? GenerationRequest.integerFor(body, "duration", 4, 12) : []

const seed = integer(-1, 4_294_967_295).annotations({ description: "-1 to 4294967295; -1 means random" })

// ---------------------------------------------------------------------------------------------------------------------
// multimodal-video
// ---------------------------------------------------------------------------------------------------------------------

/**
 * `POST /api/v1/vendor1/multimodal-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor1MultimodalVideoRequest = GenerationRequest.make({
  identifier: "Vendor1MultimodalVideoRequest",
  description: "Video from a prompt with optional first/last frames and image, video and audio references",
  models: ["vendor1-2"],
  input: {
    prompt: describe(prompt(5000), "What to generate; at most 5000 characters"),
    first_frame_url: optional(describe(PublicUrl, "First frame: public HTTP(S) URL of an image")),
    last_frame_url: optional(describe(PublicUrl, "Last frame: public HTTP(S) URL of an image")),
    reference_image_urls: optional(
      list(PublicUrl, { min: 1, max: 9, noun: "URLs" }).annotations({ description: "1 to 9 public HTTP(S) URLs" })
    ),
    reference_video_urls: optional(
      list(PublicUrl, { min: 1, max: 3, noun: "URLs" }).annotations({ description: "1 to 3 public HTTP(S) URLs" })
    ),
    reference_audio_urls: optional(
      list(PublicUrl, { min: 1, max: 3, noun: "URLs" }).annotations({
        description: "1 to 3 public HTTP(S) URLs; audio types MPEG, WAV, X-WAV, AAC, MP4, OGG; max 15 MB each " +
          "(checked when the task runs). Must be used with an image or video reference"
      })
    ),
    generate_audio: optional(boolean.annotations({ description: "Generate synchronized audio", default: false })),
    resolution: optional(oneOf("480p", "720p", "1080p").annotations({ default: "720p" })),
    aspect_ratio: optional(oneOf(...fixedRatios).annotations({ default: "16:9" })),
    duration: optional(integer(4, 15).annotations({ description: "Integer 4 to 15 (seconds)", default: 5 })),
    web_search: optional(boolean.annotations({ description: "Use online search", default: false })),
    nsfw_checker: optional(boolean.annotations({ description: "Enable content checker", default: true }))
  },
  rules: ({ input }) =>
    input.reference_audio_urls !== undefined &&
      input.first_frame_url === undefined &&
      input.last_frame_url === undefined &&
      input.reference_image_urls === undefined &&
      input.reference_video_urls === undefined
      ? [issue(["input", "reference_audio_urls"], "audio references must be used with an image or video reference")]
      : [],
  normalize: "annotated"
})

// ---------------------------------------------------------------------------------------------------------------------
// image-to-video
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Input image rules; `heic`/`heif` are allowed here and refused for every model but 1.5 Pro in `rules`.
 *
 * @since 0.1.0
 * @category constants
 */
export const imageRules: ImageRules = {
  formats: ["jpeg", "png", "webp", "bmp", "tiff", "gif", "heic", "heif"],
  maxBytes: 30 * 1024 * 1024,
  minSide: 300,
  maxSide: 6000,
  minRatio: 0.4,
  maxRatio: 2.5
}

/**
 * The image formats of every model but 1.5 Pro.
 *
 * @since 0.1.0
 * @category constants
 */
export const commonFormats = imageRules.formats.filter((format) => format !== "heic" && format !== "heif")

const imageInput = imageRef(imageRules)

const imageRequirements = "URL or base64 data URI. Formats jpeg, png, webp, bmp, tiff, gif (1.5 Pro also heic, " +
  "heif). Width/height ratio 0.4 to 2.5. 300 to 6000 px per side. Max 30 MB"

/** Refuses a `heic`/`heif` data URI for models other than 1.5 Pro. */
const heifRule = (model: string, value: string | undefined, path: ReadonlyArray<PropertyKey>) => {
  if (model === pro15 || value === undefined || !isDataUri(value)) return []
  const image = inspectImageDataUri(value)
  return Either.isRight(image) && (image.right.format === "heic" || image.right.format === "heif")
    ? [issue(path, `image format must be one of ${commonFormats.join(", ")} for model ${model}`)]
    : []
}

/**
 * `POST /api/v1/vendor1/image-to-video`.
 *
 * Modes are exclusive (decisions.md §2b): first frame (`image`), first plus last frame (`image` + `last_image`), or
 * reference images (`reference_images`, `vendor1-1-0-lite-i2v` only). In reference-image mode `image`, `last_image`,
 * `ratio: "adaptive"` and `camera_fixed: true` are refused (and `1080p`, which 1.0 Lite does not support there).
 * Decision: since `adaptive` (the spec's default ratio, "matches first frame") is not available in reference-image
 * mode, the default ratio there is `16:9`; `camera_fixed` gets no default there.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor1ImageToVideoRequest = GenerationRequest.make({
  identifier: "Vendor1ImageToVideoRequest",
  description: "Video from a first frame, first and last frames, or reference images",
  models: [pro15, pro10, proFast, liteI2v],
  input: {
    image: optional(describe(
      imageInput,
      `First frame; required except in reference-image mode, where it is refused. ${imageRequirements}`
    )),
    last_image: optional(describe(
      imageInput,
      "Last frame; same requirements as `image`. Models 1.5 Pro, 1.0 Pro, 1.0 Lite I2V. May equal the first " +
        "image; if aspect ratios differ the last frame is auto-cropped to the first. Refused in reference-image mode"
    )),
    reference_images: optional(
      list(imageInput, { min: 1, max: 4, noun: "images" }).annotations({
        description: "1 to 4 images (same requirements as `image`); `vendor1-1-0-lite-i2v` only. Prompt may refer to " +
          "them with markers `[图1]`, `[图2]`, etc. Replaces `image`"
      })
    ),
    prompt: optional(text(10_000).annotations({ description: "Chinese and English supported" })),
    duration,
    resolution: optional(
      oneOf("480p", "720p", "1080p").annotations({
        description: "1.0 Lite I2V reference-image mode does not support `1080p`",
        default: "720p"
      })
    ),
    ratio: optional(
      oneOf(...fixedRatios, "adaptive").annotations({
        description: "`adaptive` matches the first frame; reference-image mode does not support `adaptive` (default " +
          "there: `16:9`)",
        default: "adaptive"
      })
    ),
    seed: optional(seed),
    camera_fixed: optional(boolean.annotations({
      description: "Not supported in reference-image mode",
      default: false
    })),
    watermark: optional(boolean.annotations({ default: false })),
    generate_audio: optional(boolean.annotations({ description: "`vendor1-1-5-pro` only", default: true })),
    return_last_frame: optional(boolean.annotations({
      description: "Return last frame of the video (for chaining)",
      default: false
    }))
  },
  rules: (body) => {
    const { input, model } = body
    const issues: Array<Schema.FilterIssue> = [
      ...GenerationRequest.onlyFor(body, "reference_images", [liteI2v]),
      ...GenerationRequest.onlyFor(body, "last_image", [pro15, pro10, liteI2v]),
      ...GenerationRequest.onlyFor(body, "generate_audio", [pro15]),
      ...durationRule(body)
    ]
    if (input.reference_images !== undefined) {
      const mode = "in reference-image mode (with reference_images)"
      if (input.image !== undefined) issues.push(issue(["input", "image"], `is not allowed ${mode}`))
      if (input.last_image !== undefined) issues.push(issue(["input", "last_image"], `is not allowed ${mode}`))
      for (const found of GenerationRequest.oneOfFor(body, "ratio", fixedRatios, "reference-image mode")) {
        issues.push(found)
      }
      if (input.camera_fixed === true) {
        issues.push(issue(["input", "camera_fixed"], "is not supported in reference-image mode"))
      }
      if (model === liteI2v) {
        const mode = `model ${model} in reference-image mode`
        for (const found of GenerationRequest.oneOfFor(body, "resolution", ["480p", "720p"], mode)) issues.push(found)
      }
    } else {
      for (const found of GenerationRequest.requiredFor(body, "image", "unless reference_images is given")) {
        issues.push(found)
      }
    }
    return issues.concat(
      heifRule(model, input.image, ["input", "image"]),
      heifRule(model, input.last_image, ["input", "last_image"]),
      (input.reference_images ?? []).flatMap((value, i) => heifRule(model, value, ["input", "reference_images", i]))
    )
  },
  normalize: ({ input, model }) => {
    const referenceMode = input.reference_images !== undefined
    return GenerationRequest.withDefaults(input, {
      resolution: "720p",
      ratio: referenceMode ? "16:9" : "adaptive",
      ...(referenceMode ? {} : { camera_fixed: false }),
      watermark: false,
      ...(model === pro15 ? { generate_audio: true } : {}),
      return_last_frame: false
    })
  }
})

// ---------------------------------------------------------------------------------------------------------------------
// text-to-video
// ---------------------------------------------------------------------------------------------------------------------

/**
 * `POST /api/v1/vendor1/text-to-video`. The recommended 500-character prompt length is not enforced (§2b).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor1TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor1TextToVideoRequest",
  description: "Video from a text prompt",
  models: [pro15, pro10, proFast, liteT2v],
  input: {
    prompt: describe(prompt(10_000), "Chinese and English; recommended max 500 characters (not enforced)"),
    duration,
    resolution: optional(
      oneOf("480p", "720p", "1080p").annotations({
        description: "Effective default: `720p` for 1.5 Pro and 1.0 Lite; `1080p` for 1.0 Pro and Pro Fast",
        default: "720p"
      })
    ),
    ratio: optional(
      oneOf(...fixedRatios, "adaptive").annotations({
        description: "`adaptive` (auto-selects from the prompt) is available for 1.5 Pro only",
        default: "16:9"
      })
    ),
    seed: optional(seed),
    camera_fixed: optional(boolean.annotations({ default: false })),
    watermark: optional(boolean.annotations({ default: false })),
    generate_audio: optional(boolean.annotations({
      description: "1.5 Pro only; voice, sound effects, background music; dialogue should be placed in double quotes",
      default: true
    })),
    return_last_frame: optional(boolean.annotations({ description: "Return last frame as an image", default: false })),
    draft: optional(boolean.annotations({ description: "1.5 Pro only; faster, lower quality", default: false })),
    service_tier: optional(
      oneOf("default", "flex").annotations({
        description: "`default` (standard priority), `flex` (lower priority, may queue longer)",
        default: "default"
      })
    )
  },
  rules: (body) => [
    ...GenerationRequest.onlyFor(body, "generate_audio", [pro15]),
    ...GenerationRequest.onlyFor(body, "draft", [pro15]),
    ...durationRule(body),
    ...(body.model === pro15 ? [] : GenerationRequest.oneOfFor(body, "ratio", fixedRatios))
  ],
  normalize: ({ input, model }) =>
    GenerationRequest.withDefaults(input, {
      resolution: model === pro15 || model === liteT2v ? "720p" : "1080p",
      ratio: "16:9",
      camera_fixed: false,
      watermark: false,
      ...(model === pro15 ? { generate_audio: true, draft: false } : {}),
      return_last_frame: false,
      service_tier: "default"
    })
})
