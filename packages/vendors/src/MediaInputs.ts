/**
 * Remote input media of a task, checked when the task runs (decisions.md §2): every URL input is fetched safely
 * and held to its field's rules; a file that breaks one fails the task with `INVALID_INPUT_MEDIA` (refunded).
 * Data URIs were checked at request time and are skipped here.
 *
 * @since 0.1.0
 */
import { type Catalog, DataUri, type Fields } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { UpstreamError } from "@mediagate/engine/Upstream"
import * as Effect from "effect/Effect"
import { audioType, type AudioType, checkImage, fetchMedia, type FetchOptions, mp4DurationSeconds } from "./RemoteMedia.js"

const mb = 1024 * 1024

/** One input to check. */
export type MediaCheck =
  | { readonly path: string; readonly url: string; readonly kind: "image"; readonly rules: Fields.ImageRules }
  | { readonly path: string; readonly url: string; readonly kind: "video"; readonly maxBytes: number }
  | {
    readonly path: string
    readonly url: string
    readonly kind: "audio"
    readonly maxBytes: number
    readonly types: ReadonlyArray<AudioType>
  }

const common: Fields.ImageRules = { formats: ["jpeg", "png", "webp", "bmp", "tiff", "gif"], maxBytes: 30 * mb }
const vendor1Frames = (model: string): Fields.ImageRules => ({
  formats: model === "vendor1-1-5-pro" ? [...common.formats, "heic", "heif"] : common.formats,
  maxBytes: 30 * mb,
  minSide: 300,
  maxSide: 6000,
  minRatio: 0.4,
  maxRatio: 2.5
})
const vendor4Input = (model: string): Fields.ImageRules => ({
  formats: model === "vendor4-5-0-lite" ? ["jpeg", "png"] : common.formats,
  maxBytes: 10 * mb,
  maxSide: 6000
})
const vendor5Input: Fields.ImageRules = { formats: ["png", "jpeg", "webp"], maxBytes: 50 * mb, minRatio: 0.25, maxRatio: 4 }

/** The URL inputs of a task and the rules each must meet. */
export const mediaChecks = (endpoint: Catalog.EndpointKey, model: string, input: Readonly<Record<string, unknown>>) => {
  const checks: Array<MediaCheck> = []
  const urls = (field: string): Array<[string, string]> => {
    const value = input[field]
    const list = Array.isArray(value) ? value.map((v, i) => [`${field}[${i}]`, v] as const) : [[field, value] as const]
    return list.flatMap(([path, v]) => typeof v === "string" && !DataUri.isDataUri(v) ? [[path, v] as [string, string]] : [])
  }
  const images = (field: string, rules: Fields.ImageRules) =>
    urls(field).forEach(([path, url]) => checks.push({ path, url, kind: "image", rules }))
  const videos = (field: string) =>
    urls(field).forEach(([path, url]) => checks.push({ path, url, kind: "video", maxBytes: 200 * mb }))
  switch (endpoint) {
    case "vendor1/multimodal-video":
      images("first_frame_url", common)
      images("last_frame_url", common)
      images("reference_image_urls", common)
      videos("reference_video_urls")
      urls("reference_audio_urls").forEach(([path, url]) =>
        checks.push({ path, url, kind: "audio", maxBytes: 15 * mb, types: ["mpeg", "wav", "aac", "mp4", "ogg"] })
      )
      break
    case "vendor1/image-to-video":
      for (const field of ["image", "last_image", "reference_images"]) images(field, vendor1Frames(model))
      break
    case "vendor2/image-to-video":
      images("image", common)
      images("image_tail", common)
      break
    case "vendor4/image-to-image":
      images("image", vendor4Input(model))
      images("images", vendor4Input(model))
      break
    case "vendor5/image-to-video":
      images("images", vendor5Input)
      break
    case "vendor6/image-to-image":
      images("image_input", common)
      break
    case "vendor8/image-to-video":
      images("image_urls", common)
      break
    case "vendor8/video-to-video":
      videos("video_urls")
      break
    default:
      break
  }
  return checks
}

const invalid = (path: string, message: string) =>
  new UpstreamError({ message: `input.${path}: ${message}`, retryable: false, code: "INVALID_INPUT_MEDIA" })

/**
 * Fetches and checks one input: a breach is permanent (`INVALID_INPUT_MEDIA`), a network hiccup is retried.
 * Answers the duration of a video input, in seconds.
 */
export const runCheck = (check: MediaCheck, options: Omit<FetchOptions, "maxBytes">) =>
  Effect.gen(function*() {
    const maxBytes = check.kind === "image" ? check.rules.maxBytes : check.maxBytes
    const fetched = yield* fetchMedia(check.url, { ...options, maxBytes }).pipe(
      Effect.mapError((error) =>
        error.reason === "timeout" || error.reason === "network"
          ? new UpstreamError({ message: `input.${check.path}: ${error.message}`, retryable: true })
          : invalid(check.path, error.message)
      )
    )
    switch (check.kind) {
      case "image": {
        const problem = checkImage(fetched.bytes, check.rules)
        if (problem !== undefined) return yield* invalid(check.path, problem)
        return undefined
      }
      case "video": {
        const seconds = mp4DurationSeconds(fetched.bytes)
        if (seconds === undefined) return yield* invalid(check.path, "is not an MP4/MOV video")
        return seconds
      }
      case "audio": {
        const type = audioType(fetched.bytes)
        if (type === undefined || !check.types.includes(type)) {
          return yield* invalid(check.path, `audio type must be one of ${check.types.join(", ")}`)
        }
        return undefined
      }
    }
  })

/** What the checks measured. */
export interface Measured {
  /** Total seconds of the `reference_video_urls` (vendor1-2 bills them). */
  readonly referenceVideoSeconds: number
}

/** Checks every remote input of a task, in order, and answers what was measured. */
export const checkTask = (
  task: TaskRecord,
  options: Omit<FetchOptions, "maxBytes">
): Effect.Effect<Measured, UpstreamError> =>
  Effect.map(
    Effect.forEach(mediaChecks(task.endpoint, task.model, task.input), (check) =>
      Effect.map(runCheck(check, options), (seconds) =>
        check.path.startsWith("reference_video_urls[") ? seconds ?? 0 : 0)),
    (seconds) => ({ referenceVideoSeconds: seconds.reduce((sum, s) => sum + s, 0) })
  )
