/**
 * vendor4 request Schemas: text-to-image (`vendor4-5-0-lite`, `vendor4-4-5`, `vendor4-4-0`, `vendor4-3-0-t2i`) and
 * image-to-image (`vendor4-5-0-lite`, `vendor4-4-5`, `vendor4-4-0`), billed per image (one image per request).
 *
 * Output size: `size` is a preset (`1K`, `2K`, `3K`, `4K`) or `WxH` pixels; `width` + `height` is the alternative
 * (decisions.md §2b). A preset is accepted where the model lists it and its pixel size satisfies the model's pixel
 * rules; {@link vendor4OutputSize} reads the pixel size a normalized input produces.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { type ImageFormat, inspectImageDataUri, isDataUri } from "../../DataUri.js"
import {
  boolean,
  describe,
  imageRef,
  type ImageRules,
  integer,
  issue,
  list,
  number,
  oneOf,
  optional,
  prompt,
  withMessage
} from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

const v50 = "vendor4-5-0-lite"
const v45 = "vendor4-4-5"
const v40 = "vendor4-4-0"
const v30 = "vendor4-3-0-t2i"

/**
 * A vendor4 model id.
 *
 * @since 0.1.0
 * @category models
 */
export type Vendor4Model = typeof v50 | typeof v45 | typeof v40 | typeof v30

// ---------------------------------------------------------------------------------------------------------------------
// Sizes
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The size presets and their pixel sizes.
 *
 * @since 0.1.0
 * @category constants
 */
export const vendor4Presets = {
  "1K": { width: 1024, height: 1024 },
  "2K": { width: 2048, height: 2048 },
  "3K": { width: 3072, height: 3072 },
  "4K": { width: 4096, height: 4096 }
} as const
/**
 * A size preset.
 *
 * @since 0.1.0
 * @category models
 */
export type Vendor4Preset = keyof typeof vendor4Presets

/** The pixel rules of one model for custom sizes (and for the presets it lists). */
type PixelRule =
  | {
    /** Total-pixel range, width/height ratio at most `maxRatio` either way, both sides multiples of `align`. */
    readonly _tag: "Pixels"
    readonly minPixels: number
    readonly maxPixels: number
    readonly maxRatio: number
    readonly align: number
  }
  | {
    /** Each side in a range and a multiple of `align`. */
    readonly _tag: "Sides"
    readonly minSide: number
    readonly maxSide: number
    readonly align: number
  }

interface ModelSizing {
  readonly rule: PixelRule
  /** The presets the specification lists for the model on text-to-image (before the pixel rules). */
  readonly presets: ReadonlyArray<Vendor4Preset>
  /** The size filled in when neither `size` nor `width`/`height` is given. */
  readonly defaultSize: string
}

/** The sizing of the 4.0/4.5/5.0 models: a total-pixel range, ratio 1:16 to 16:1, 128-aligned, default 2K. */
const byPixels = (minPixels: number, maxPixels: number, presets: ReadonlyArray<Vendor4Preset>): ModelSizing => ({
  rule: { _tag: "Pixels", minPixels, maxPixels, maxRatio: 16, align: 128 },
  presets,
  defaultSize: "2K"
})

const sizing: Record<Vendor4Model, ModelSizing> = {
  [v50]: byPixels(921_600, 9_437_184, ["1K", "2K", "3K"]),
  [v45]: byPixels(3_686_400, 16_777_216, ["1K", "2K", "4K"]),
  [v40]: byPixels(921_600, 16_777_216, ["1K", "2K", "4K"]),
  [v30]: {
    rule: { _tag: "Sides", minSide: 512, maxSide: 2048, align: 64 },
    presets: ["1K", "2K"],
    defaultSize: "1024x1024"
  }
}

/**
 * True for a vendor4 model id.
 *
 * @since 0.1.0
 * @category guards
 */
export const isVendor4Model = (model: string): model is Vendor4Model => Object.hasOwn(sizing, model)

/** Presets that image-to-image lists at all (any model). */
const imageToImagePresets = ["1K", "2K", "4K"] as const satisfies ReadonlyArray<Vendor4Preset>
/** Presets that text-to-image lists at all (any model). */
const textToImagePresets = ["1K", "2K", "3K", "4K"] as const satisfies ReadonlyArray<Vendor4Preset>

const isPreset = (value: string): value is Vendor4Preset => Object.hasOwn(vendor4Presets, value)

const customSizePattern = /^([1-9]\d{0,5})x([1-9]\d{0,5})$/

/** Reads a `WxH` size or a preset; undefined when the string is neither. */
const parseSize = (value: string): { readonly width: number; readonly height: number } | undefined => {
  if (isPreset(value)) return vendor4Presets[value]
  const match = customSizePattern.exec(value)
  return match === null ? undefined : { width: Number(match[1]), height: Number(match[2]) }
}

const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",")

/** Which field a size problem concerns when the size is given as `width` + `height`. */
type Side = "width" | "height" | "both"

/** Why `width`x`height` breaks the model's pixel rules (plus a detail shown after the offending size), or undefined. */
const pixelProblem = (
  rule: PixelRule,
  width: number,
  height: number
): { readonly side: Side; readonly message: string; readonly detail?: string } | undefined => {
  if (rule._tag === "Sides") {
    const outside = (n: number) => n < rule.minSide || n > rule.maxSide
    if (outside(width) || outside(height)) {
      return {
        side: outside(width) ? "width" : "height",
        message: `each side must be from ${rule.minSide} to ${rule.maxSide} px`
      }
    }
  }
  if (width % rule.align !== 0 || height % rule.align !== 0) {
    return {
      side: width % rule.align !== 0 ? "width" : "height",
      message: `width and height must be multiples of ${rule.align}`
    }
  }
  if (rule._tag === "Pixels") {
    const pixels = width * height
    if (pixels < rule.minPixels || pixels > rule.maxPixels) {
      return {
        side: "both",
        message: `total pixels must be from ${grouped(rule.minPixels)} to ${grouped(rule.maxPixels)}`,
        detail: ` = ${grouped(pixels)}`
      }
    }
    if (width > height * rule.maxRatio || height > width * rule.maxRatio) {
      return {
        side: "both",
        message: `width/height ratio must be from 1:${rule.maxRatio} to ${rule.maxRatio}:1`
      }
    }
  }
  return undefined
}

/** The presets a model accepts on an endpoint: listed for the model and the endpoint, and within its pixel rules. */
const acceptedPresets = (model: Vendor4Model, endpointPresets: ReadonlyArray<Vendor4Preset>) => {
  const { presets, rule } = sizing[model]
  return presets.filter((preset) =>
    endpointPresets.includes(preset) &&
    pixelProblem(rule, vendor4Presets[preset].width, vendor4Presets[preset].height) === undefined
  )
}

const sizeMessage = (
  model: Vendor4Model,
  problem: { readonly message: string; readonly detail?: string },
  size: string
) => `${problem.message} for model ${model} (got ${size}${problem.detail ?? ""})`

/**
 * The size fields of an input.
 *
 * @since 0.1.0
 * @category models
 */
export interface SizeInput {
  readonly size?: string | undefined
  readonly width?: number | undefined
  readonly height?: number | undefined
}

/** The size rules shared by both endpoints: exclusivity of `size` and `width`/`height`, and the per-model rules. */
const sizeRules = (
  model: Vendor4Model,
  input: SizeInput,
  endpointPresets: ReadonlyArray<Vendor4Preset>
): Array<Schema.FilterIssue> => {
  const { height, size, width } = input
  const issues: Array<Schema.FilterIssue> = []
  if (size !== undefined && (width !== undefined || height !== undefined)) {
    issues.push(issue(["input", "size"], "cannot be combined with width/height; give either size or width and height"))
  }
  if (width !== undefined && height === undefined) {
    issues.push(issue(["input", "height"], "is required when width is given"))
  }
  if (height !== undefined && width === undefined) {
    issues.push(issue(["input", "width"], "is required when height is given"))
  }
  if (issues.length > 0) return issues
  const { rule } = sizing[model]
  if (size !== undefined) {
    if (isPreset(size)) {
      const accepted = acceptedPresets(model, endpointPresets)
      if (!accepted.includes(size)) {
        const choices = [...accepted.map((p) => JSON.stringify(p)), "a custom WxH size"].join(", ")
        const message = `preset ${JSON.stringify(size)} is not available for model ${model}; use ${choices}`
        issues.push(issue(["input", "size"], message))
      }
      return issues
    }
    const parsed = parseSize(size)
    const problem = parsed === undefined ? undefined : pixelProblem(rule, parsed.width, parsed.height)
    if (problem !== undefined) issues.push(issue(["input", "size"], sizeMessage(model, problem, size)))
    return issues
  }
  if (width !== undefined && height !== undefined) {
    const problem = pixelProblem(rule, width, height)
    if (problem !== undefined) {
      const path = ["input", problem.side === "height" ? "height" : "width"]
      issues.push(issue(path, sizeMessage(model, problem, `${width}x${height}`)))
    }
  }
  return issues
}

/**
 * The pixel size (`width` x `height`) a normalized vendor4 input produces on `model`: `width`/`height` when given,
 * else the `size` preset (`1K` 1024x1024, `2K` 2048x2048, `3K` 3072x3072, `4K` 4096x4096) or `WxH` string, else the
 * model's default size (`2K` on 4.0/4.5/5.0, 1024x1024 on 3.0-t2i). The input is assumed to be valid; a `size` that is
 * neither a preset nor `WxH` also yields the model's default.
 *
 * @since 0.1.0
 * @category utils
 */
export const vendor4OutputSize = (
  model: Vendor4Model,
  input: SizeInput
): { width: number; height: number } => {
  if (input.width !== undefined && input.height !== undefined) return { width: input.width, height: input.height }
  const parsed = (input.size === undefined ? undefined : parseSize(input.size)) ?? parseSize(sizing[model].defaultSize)!
  return { width: parsed.width, height: parsed.height }
}

// ---------------------------------------------------------------------------------------------------------------------
// Fields
// ---------------------------------------------------------------------------------------------------------------------

/** `size`: one of the endpoint's presets or `WxH` pixels; which presets and sizes a model takes is a rule. */
const sizeField = (presets: readonly [Vendor4Preset, ...Array<Vendor4Preset>]) =>
  withMessage(
    Schema.Union(Schema.Literal(...presets), Schema.String.pipe(Schema.pattern(customSizePattern))),
    `must be one of ${presets.map((p) => JSON.stringify(p)).join(", ")} or a custom size "WxH" in pixels ` +
      `(e.g. "2048x1536")`
  )

/** `width`/`height`: the bounds common to every model (a multiple of 64, 256 to 16384); the model rules follow. */
const side = withMessage(
  Schema.Int.pipe(Schema.between(256, 16_384), Schema.multipleOf(64)),
  "must be an integer from 256 to 16384 and a multiple of 64"
)

const sizeDescription = "Output size: a preset (1K 1024x1024, 2K 2048x2048, 3K 3072x3072 on 5.0 only, " +
  "4K 4096x4096 on 4.0/4.5 only) or WxH pixels. 5.0: 921,600 to 9,437,184 pixels; 4.5: 3,686,400 to 16,777,216 " +
  "pixels (1K refused); 4.0: 921,600 to 16,777,216 pixels; ratio 1:16 to 16:1 and 128-aligned on 4.0/4.5/5.0. " +
  "3.0-t2i: each side 512 to 2048, 64-aligned. Not together with width/height. Default 2K (3.0-t2i: 1024x1024)"

/**
 * A `description` that also reaches the JSON Schema: the generator drops the description of a refinement that has no
 * `jsonSchema` annotation of its own (as `prompt` and `imageRef` from Fields are), so it is repeated there.
 */
const promptField = describe(
  prompt(10_000),
  "What to generate (Chinese or English; recommended at most 300 Chinese characters or 600 English words)"
)

/** `width` and `height`, the alternative to `size`. */
const sides = {
  width: optional(side.annotations({
    description: "Output width in pixels; alternative to size, requires height; same per-model rules as a WxH size"
  })),
  height: optional(side.annotations({
    description: "Output height in pixels; used with width; same per-model rules as a WxH size"
  }))
}

/** The options both endpoints take after the size fields. */
const options = {
  watermark: optional(boolean.annotations({ description: "Add a watermark to the image", default: true })),
  optimize_prompt: optional(
    oneOf("standard", "fast").annotations({
      description: "Prompt optimization mode: standard or fast on 4.0/4.5, standard only on 5.0; not on 3.0-t2i"
    })
  ),
  output_format: optional(oneOf("png", "jpeg").annotations({ description: "Output image format; 5.0 only" })),
  web_search: optional(boolean.annotations({ description: "Real-time web search before generation; 5.0 only" }))
}

/** Per-model rules of the fields both endpoints share (size aside). */
const commonRules = (body: { readonly model: Vendor4Model; readonly input: Readonly<Record<string, unknown>> }) => [
  ...GenerationRequest.onlyFor(body, "optimize_prompt", [v50, v45, v40]),
  ...(body.model === v50 ? GenerationRequest.oneOfFor(body, "optimize_prompt", ["standard"]) : []),
  ...GenerationRequest.onlyFor(body, "output_format", [v50]),
  ...GenerationRequest.onlyFor(body, "web_search", [v50])
]

/** The defaults of both endpoints: `size` (only when no size at all is given) and `watermark`. */
const defaultsOf = (model: Vendor4Model, input: SizeInput): { readonly size?: string; readonly watermark: boolean } =>
  input.size === undefined && input.width === undefined && input.height === undefined
    ? { size: sizing[model].defaultSize, watermark: true }
    : { watermark: true }

// ---------------------------------------------------------------------------------------------------------------------
// text-to-image
// ---------------------------------------------------------------------------------------------------------------------

/**
 * `POST /api/v1/vendor4/text-to-image`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor4TextToImageRequest = GenerationRequest.make({
  identifier: "Vendor4TextToImageRequest",
  description: "Text to one image; billed per image",
  models: [v50, v45, v40, v30],
  input: {
    prompt: promptField,
    size: optional(
      sizeField(textToImagePresets).annotations({
        description: sizeDescription,
        default: "2K"
      })
    ),
    ...sides,
    seed: optional(
      integer(-1, 2_147_483_647).annotations({
        description: "Seed for reproducibility, -1 for random; 3.0-t2i only"
      })
    ),
    guidance_scale: optional(
      number(1, 10).annotations({
        description: "How closely the image follows the prompt; 3.0-t2i only"
      })
    ),
    ...options
  },
  rules: (body) => [
    ...sizeRules(body.model, body.input, textToImagePresets),
    ...GenerationRequest.onlyFor(body, "seed", [v30]),
    ...GenerationRequest.onlyFor(body, "guidance_scale", [v30]),
    ...commonRules(body)
  ],
  normalize: ({ input, model }) => GenerationRequest.withDefaults(input, defaultsOf(model, input))
})

// ---------------------------------------------------------------------------------------------------------------------
// image-to-image
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Input image rules common to every image-to-image model (the formats of 4.0/4.5, the widest set).
 *
 * @since 0.1.0
 * @category constants
 */
export const inputImageRules: ImageRules = {
  formats: ["jpeg", "png", "webp", "bmp", "tiff", "gif"],
  maxBytes: 10 * 1024 * 1024,
  maxSide: 6000
}

/**
 * Data-URI formats per model (5.0 takes jpeg and png only).
 *
 * @since 0.1.0
 * @category constants
 */
export const imageFormats: Record<Vendor4Model, ReadonlyArray<ImageFormat>> = {
  [v50]: ["jpeg", "png"],
  [v45]: inputImageRules.formats,
  [v40]: inputImageRules.formats,
  [v30]: []
}

/** The format rule of a model on one data-URI image; URLs are checked when the task runs. */
const imageFormatRule = (model: Vendor4Model, path: ReadonlyArray<PropertyKey>, value: string) => {
  if (!isDataUri(value)) return []
  const inspected = inspectImageDataUri(value)
  if (Either.isLeft(inspected)) return []
  const formats = imageFormats[model]
  const format = inspected.right.format
  return format !== "other" && formats.includes(format)
    ? []
    : [issue(path, `image format must be one of ${formats.join(", ")} for model ${model} (got ${format})`)]
}

const imageDescription = "public http(s) URL or base64 data URI. Formats jpeg, png (4.0/4.5 also webp, bmp, tiff, " +
  "gif); at most 10 MB; each side at most 6000 px"

/**
 * `POST /api/v1/vendor4/image-to-image`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor4ImageToImageRequest = GenerationRequest.make({
  identifier: "Vendor4ImageToImageRequest",
  description: "Image (plus up to 14 reference images) and text to one image; billed per image",
  models: [v50, v45, v40],
  input: {
    prompt: promptField,
    image: describe(imageRef(inputImageRules), `Input image: ${imageDescription}`),
    images: optional(
      list(imageRef(inputImageRules), { min: 0, max: 14, noun: "images" }).annotations({
        description: `Up to 14 reference images, each a ${imageDescription}`
      })
    ),
    size: optional(
      sizeField(imageToImagePresets).annotations({
        description: "Output size: a preset (1K 1024x1024, 2K 2048x2048, 4K 4096x4096) or WxH pixels, within the " +
          "model's rules. 5.0: 921,600 to 9,437,184 pixels (4K refused); 4.5: 3,686,400 to 16,777,216 pixels (1K " +
          "refused); 4.0: 921,600 to 16,777,216 pixels; ratio 1:16 to 16:1; 128-aligned. Not together with " +
          "width/height. Default 2K",
        default: "2K"
      })
    ),
    ...sides,
    ...options
  },
  rules: (body) => [
    ...imageFormatRule(body.model, ["input", "image"], body.input.image),
    ...(body.input.images ?? []).flatMap((value, index) =>
      imageFormatRule(body.model, ["input", "images", index], value)
    ),
    ...sizeRules(body.model, body.input, imageToImagePresets),
    ...commonRules(body)
  ],
  normalize: ({ input, model }) => GenerationRequest.withDefaults(input, defaultsOf(model, input))
})
