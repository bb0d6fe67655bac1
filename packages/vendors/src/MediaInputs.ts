/**
 * Remote input media of a task, checked when the task runs (decisions.md §2): every URL input is fetched safely
 * and held to its field's rules; a file that breaks one fails the task with `INVALID_INPUT_MEDIA` (refunded).
 * Data URIs were checked at request time and are skipped here.
 *
 * @since 0.1.0
 */
import { DataUri, Families, Family, type InputMedia } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { UpstreamError } from "@mediagate/engine/Upstream"
import * as Effect from "effect/Effect"
import { audioType, checkImage, fetchMedia, type FetchOptions, mp4DurationSeconds } from "./RemoteMedia.js"

/**
 * One input to check: a URL of a field (`path` names the list item) with the field's rules.
 *
 * @since 0.1.0
 * @category models
 */
export type MediaCheck = InputMedia.Field & { readonly path: string; readonly url: string }

/**
 * The URL inputs of a task and the rules each must meet: the endpoint's input media fields (see its family).
 *
 * @since 0.1.0
 * @category utils
 */
export const mediaChecks = (
  endpoint: string,
  model: string,
  input: Readonly<Record<string, unknown>>,
  families: Family.Registry = Families.registry
): Array<MediaCheck> =>
  (Family.findEndpoint(families, endpoint)?.inputMedia(model) ?? []).flatMap((field) => {
    const value = input[field.field]
    const list = Array.isArray(value)
      ? value.map((v, i) => [`${field.field}[${i}]`, v] as const)
      : [[field.field, value] as const]
    return list.flatMap(([path, url]) =>
      typeof url === "string" && !DataUri.isDataUri(url) ? [{ ...field, path, url }] : []
    )
  })

const invalid = (path: string, message: string) =>
  new UpstreamError({ message: `input.${path}: ${message}`, retryable: false, code: "INVALID_INPUT_MEDIA" })

/**
 * Fetches and checks one input: a breach is permanent (`INVALID_INPUT_MEDIA`), a network hiccup is retried.
 * Answers the duration of a video input, in seconds.
 *
 * @since 0.1.0
 * @category utils
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

/**
 * Checks every remote input of a task, in order, and answers what was measured (video seconds per field).
 *
 * @since 0.1.0
 * @category utils
 */
export const checkTask = (
  task: TaskRecord,
  options: Omit<FetchOptions, "maxBytes">,
  families: Family.Registry = Families.registry
): Effect.Effect<InputMedia.Measured, UpstreamError> =>
  Effect.map(
    Effect.forEach(mediaChecks(task.endpoint, task.model, task.input, families), (check) =>
      Effect.map(runCheck(check, options), (seconds) => [check.field, seconds ?? 0] as const)),
    (measured) => {
      const videoSeconds: Record<string, number> = {}
      for (const [field, seconds] of measured) {
        videoSeconds[field] = (videoSeconds[field] ?? 0) + seconds
      }
      return { videoSeconds }
    }
  )
