/**
 * The URL inputs of an endpoint that are fetched and checked when a task runs (decisions.md §2), with the rules of
 * each field. A family declares them per endpoint; `@mediagate/vendors` fetches and checks (data URIs were checked
 * at request time and are skipped).
 *
 * @since 0.1.0
 */
import type { ImageRules } from "./Fields.js"

const mb = 1024 * 1024

/**
 * The audio types a field may accept.
 *
 * @since 0.1.0
 * @category models
 */
export type AudioType = "mpeg" | "wav" | "aac" | "mp4" | "ogg"

/**
 * One URL field (a string, or a list of strings) and its rules.
 *
 * @since 0.1.0
 * @category models
 */
export type Field =
  | { readonly field: string; readonly kind: "image"; readonly rules: ImageRules }
  | { readonly field: string; readonly kind: "video"; readonly maxBytes: number }
  | {
    readonly field: string
    readonly kind: "audio"
    readonly maxBytes: number
    readonly types: ReadonlyArray<AudioType>
  }

/**
 * What the checks measured: the total seconds of the videos of each video field.
 *
 * @since 0.1.0
 * @category models
 */
export interface Measured {
  readonly videoSeconds: Readonly<Record<string, number>>
}

/**
 * Image fields, all with the same rules.
 *
 * @since 0.1.0
 * @category utils
 */
export const images = (rules: ImageRules, ...fields: ReadonlyArray<string>): Array<Field> =>
  fields.map((field) => ({ field, kind: "image", rules }))

/**
 * A video field (MP4/MOV, at most `maxBytes`, 200 MB by default).
 *
 * @since 0.1.0
 * @category utils
 */
export const video = (field: string, maxBytes = 200 * mb): Field => ({ field, kind: "video", maxBytes })

/**
 * An audio field of the given types.
 *
 * @since 0.1.0
 * @category utils
 */
export const audio = (field: string, maxBytes: number, types: ReadonlyArray<AudioType>): Field => ({
  field,
  kind: "audio",
  maxBytes,
  types
})

/**
 * Image rules most endpoints share: the common formats, at most 30 MB.
 *
 * @since 0.1.0
 * @category constants
 */
export const commonImage: ImageRules = { formats: ["jpeg", "png", "webp", "bmp", "tiff", "gif"], maxBytes: 30 * mb }
