/**
 * vendor2 request Schemas: image-to-video and text-to-video with the models `vendor2-v3` (per-second billing,
 * multi-shot, element control, 3 to 15 s) and `vendor2-v2-6` (fixed price per video, modes std/pro, 5 s or 10 s).
 *
 * Both endpoints share their fields and rules; text-to-video has no `image`/`image_tail` and requires `prompt`.
 *
 * Readings where the specification is silent (decisions.md §2b, §4 and this module):
 * - `duration` defaults to 5 s. When `duration` is absent and every `multi_prompt` segment has a `duration`, the
 *   effective duration is the sum of the segment durations instead (it must lie in the model's range); the
 *   normalized input carries that sum as `duration`.
 * - When `duration` and every segment duration are given, the segments must sum to `duration`. When only some
 *   segments have a duration, their sum must leave at least 1 s for each other segment within the effective duration.
 * - `multi_shot` is a string (`"true"` or `"intelligence"`); the JSON boolean `true` is refused.
 * - `multi_prompt` holds 1 to 6 segments; a segment's `index` is a positive integer equal to its position (from 1);
 *   a segment's `duration` is an integer from 1 to 15 s.
 * - `element_list` holds 1 to 4 elements and `voice_list` 1 to 10 voices; an empty list is refused (omit the field).
 * - `voice_id` is a string of 1 to 200 characters; a voice's `text` is a non-blank string of at most 2000 characters.
 * - `prompt` and segment prompts are non-blank strings of at most 10000 characters; `negative_prompt` is a string of
 *   at most 10000 characters (may be empty).
 * - `image_tail` on `vendor2-v2-6` needs `mode: "pro"` (the default mode `std` refuses it).
 * - `image` and `image_tail` are public http(s) URLs; data URIs are refused (decisions.md §2b).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { describe, integer, issue, list, oneOf, optional, prompt, PublicUrl, text, withMessage } from "../../Fields.js"
import * as GenerationRequest from "../../GenerationRequest.js"

const models = ["vendor2-v3", "vendor2-v2-6"] as const
type Model = typeof models[number]

const v3Only: ReadonlyArray<Model> = ["vendor2-v3"]

/** Longest prompt, negative prompt and segment prompt (no maximum stated; same cap as the other families). */
const maxPrompt = 10_000
/** Default duration in seconds (decisions.md §4). */
const defaultDuration = 5
/** V3 duration range in seconds. */
const v3Duration = { min: 3, max: 15 } as const
/** V2.6 durations in seconds. */
const v26Durations: ReadonlyArray<number> = [5, 10]

/** An object with fields; a value of another type gets a short message, inner failures keep their own. */
const object = <F extends Schema.Struct.Fields>(fields: F) =>
  Schema.Struct(fields).annotations({ message: () => ({ message: "must be an object", override: false }) })

/** A positive integer (no upper bound: list counts and positions are checked by their own rules). */
const positiveInteger = withMessage(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)), "must be a positive integer")

const Segment = object({
  index: positiveInteger.annotations({ description: "Position of the segment, starting at 1, consecutive" }),
  prompt: prompt(maxPrompt).annotations({ description: "What this shot shows" }),
  duration: optional(integer(1, v3Duration.max).annotations({ description: "Length of this shot in seconds" }))
}).annotations({ title: "Vendor2MultiPromptSegment" })

const Element = object({
  element_id: positiveInteger.annotations({ description: "Id of a pre-created element" })
}).annotations({ title: "Vendor2Element" })

const Voice = object({
  voice_id: text(200, 1).annotations({ description: "Voice id" }),
  text: prompt(2_000).annotations({ description: "Text to speak" })
}).annotations({ title: "Vendor2Voice" })

/** The fields of both endpoints. */
const commonFields = {
  negative_prompt: optional(text(maxPrompt).annotations({ description: "What to avoid" })),
  duration: optional(
    integer(v3Duration.min, v3Duration.max).annotations({
      description: "Seconds. vendor2-v3: integer 3 to 15; vendor2-v2-6: 5 or 10. Default 5, or the sum of the " +
        "multi_prompt segment durations when every segment has one",
      default: defaultDuration
    })
  ),
  aspect_ratio: optional(oneOf("16:9", "9:16", "1:1").annotations({ description: "Aspect ratio", default: "16:9" })),
  mode: optional(oneOf("std", "pro").annotations({ description: "Quality mode", default: "std" })),
  sound: optional(oneOf("on", "off").annotations({ description: "Generate sound", default: "off" })),
  multi_shot: optional(
    oneOf("true", "intelligence").annotations({
      description: "vendor2-v3 only. `true`: manual shots from multi_prompt; `intelligence`: automatic scene splitting"
    })
  ),
  multi_prompt: optional(
    list(Segment, { min: 1, max: 6, noun: "segments" }).annotations({
      description: "vendor2-v3 only; requires multi_shot \"true\" (which requires it). 1 to 6 shots; when every " +
        "segment has a duration they sum to duration"
    })
  ),
  element_list: optional(
    list(Element, { min: 1, max: 4, noun: "elements" }).annotations({
      description: "vendor2-v3 only; 1 to 4 pre-created elements"
    })
  ),
  voice_list: optional(
    list(Voice, { min: 1, max: 10, noun: "voices" }).annotations({
      description: "Requires sound \"on\"; 1 to 10 voices"
    })
  )
}

type CommonInput = Schema.Struct.Type<typeof commonFields> & { readonly image_tail?: string }
type Body = GenerationRequest.GenerationBody<Model, CommonInput>

const sum = (values: ReadonlyArray<number>): number => values.reduce((a, b) => a + b, 0)

/**
 * The effective duration: `duration` when given; else the sum of the segment durations when every `multi_prompt`
 * segment has one; else 5 s.
 */
const effectiveDuration = (input: CommonInput): number => {
  if (input.duration !== undefined) return input.duration
  const segments = input.multi_prompt
  if (segments !== undefined && segments.length > 0) {
    const durations = segments.flatMap((s) => s.duration === undefined ? [] : [s.duration])
    if (durations.length === segments.length) return sum(durations)
  }
  return defaultDuration
}

/** Requires a number input field to be one of model-specific values (the numeric counterpart of `oneOfFor`). */
const numberOneOfFor = (body: Body, field: "duration", values: ReadonlyArray<number>): Array<Schema.FilterIssue> => {
  const value = body.input[field]
  return value !== undefined && !values.includes(value)
    ? [issue(["input", field], `must be ${values.join(" or ")} for model ${body.model}`)]
    : []
}

const segmentRules = (body: Body): Array<Schema.FilterIssue> => {
  const { input, model } = body
  const segments = input.multi_prompt
  const issues: Array<Schema.FilterIssue> = []
  if (segments !== undefined && input.multi_shot !== "true") {
    issues.push(issue(["input", "multi_prompt"], "requires multi_shot \"true\""))
  }
  if (input.multi_shot === "true") {
    for (const found of GenerationRequest.requiredFor(body, "multi_prompt", "when multi_shot is \"true\"")) {
      issues.push(found)
    }
  }
  if (segments === undefined) return issues
  segments.forEach((segment, i) => {
    if (segment.index !== i + 1) {
      issues.push(
        issue(["input", "multi_prompt", i, "index"], `must be ${i + 1} (indexes are consecutive from 1)`)
      )
    }
  })
  const durations = segments.flatMap((s) => s.duration === undefined ? [] : [s.duration])
  const total = sum(durations)
  if (durations.length === segments.length) {
    if (input.duration !== undefined && total !== input.duration) {
      issues.push(
        issue(["input", "multi_prompt"], `segment durations must sum to duration (${input.duration} s), got ${total} s`)
      )
    } else if (input.duration === undefined && (total < v3Duration.min || total > v3Duration.max)) {
      issues.push(
        issue(
          ["input", "multi_prompt"],
          `segment durations must sum to ${v3Duration.min} to ${v3Duration.max} s for model ${model} (the sum is ` +
            `the duration when duration is absent), got ${total} s`
        )
      )
    }
  } else if (durations.length > 0) {
    const duration = effectiveDuration(input)
    const untimed = segments.length - durations.length
    if (total + untimed > duration) {
      issues.push(
        issue(
          ["input", "multi_prompt"],
          `segment durations (${total} s) must leave at least 1 s for each of the ${untimed} segments without a ` +
            `duration within duration (${duration} s)`
        )
      )
    }
  }
  return issues
}

/** The rules of both endpoints, in field order after the unsupported fields. */
const rules = (body: Body): Array<Schema.FilterIssue> => {
  const unsupported = [
    ...GenerationRequest.onlyFor(body, "multi_shot", v3Only),
    ...GenerationRequest.onlyFor(body, "multi_prompt", v3Only),
    ...GenerationRequest.onlyFor(body, "element_list", v3Only)
  ]
  if (unsupported.length > 0) return unsupported
  const { input, model } = body
  const issues: Array<Schema.FilterIssue> = []
  if (model === "vendor2-v2-6" && input.image_tail !== undefined && (input.mode ?? "std") !== "pro") {
    issues.push(
      issue(["input", "image_tail"], `is not supported by model ${model} in mode "${input.mode ?? "std"}" (use "pro")`)
    )
  }
  if (model === "vendor2-v3") {
    for (const found of GenerationRequest.integerFor(body, "duration", v3Duration.min, v3Duration.max)) {
      issues.push(found)
    }
  } else {
    for (const found of numberOneOfFor(body, "duration", v26Durations)) issues.push(found)
  }
  for (const found of segmentRules(body)) issues.push(found)
  if (input.voice_list !== undefined && (input.sound ?? "off") !== "on") {
    issues.push(issue(["input", "voice_list"], "requires sound \"on\""))
  }
  return issues
}

/** The defaults of both endpoints (every one is supported by both models). */
const defaults = ({ input }: Body) => ({
  duration: effectiveDuration(input),
  aspect_ratio: "16:9" as const,
  mode: "std" as const,
  sound: "off" as const
})

/**
 * `POST /api/v1/vendor2/image-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor2ImageToVideoRequest = GenerationRequest.make({
  identifier: "Vendor2ImageToVideoRequest",
  description: "Image to video; vendor2-v3 billed per second (3 to 15 s, multi-shot, elements), vendor2-v2-6 per " +
    "video (5 s or 10 s)",
  models,
  input: {
    image: describe(PublicUrl, "URL of the image to animate"),
    image_tail: optional(
      describe(
        PublicUrl,
        "URL of the end frame; the video transitions from image to it. vendor2-v3: std and pro; " +
          "vendor2-v2-6: pro only"
      )
    ),
    prompt: optional(prompt(maxPrompt).annotations({ description: "What to generate" })),
    ...commonFields
  },
  rules,
  normalize: (body) => GenerationRequest.withDefaults(body.input, defaults(body))
})

/**
 * `POST /api/v1/vendor2/text-to-video`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Vendor2TextToVideoRequest = GenerationRequest.make({
  identifier: "Vendor2TextToVideoRequest",
  description: "Text to video; vendor2-v3 billed per second (3 to 15 s, multi-shot, elements), vendor2-v2-6 per " +
    "video (5 s or 10 s)",
  models,
  input: {
    prompt: prompt(maxPrompt).annotations({ description: "What to generate" }),
    ...commonFields
  },
  rules,
  normalize: (body) => GenerationRequest.withDefaults(body.input, defaults(body))
})
