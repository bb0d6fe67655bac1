/**
 * The `openai` transport: the OpenAI-compatible image and video endpoints that gateways (new-api, LiteLLM, ...)
 * expose as their unified interface (docs/channels.md, "OpenAI-compatible").
 *
 * - Images (`POST /v1/images/generations { model, ...input }`) answer in the call itself: submit makes the call
 *   (within the channel's timeout) and hands its files (`data[].url`, or `b64_json` stored directly) to the result
 *   copy at once; the job id is `img_<task>.<random>`. A later poll answers the copy's state. The files of an image
 *   job exist only in this process until they are copied: a poll elsewhere finds the copy's manifest once it is
 *   stored, and an image job neither copied nor known here (the process ended) is submitted again (`Lost`).
 * - Videos: `POST /v1/videos { model, ...input }` (JSON; a mapping can shape what the gateway takes), poll `GET
 *   /v1/videos/{id}`: `queued` → queued, `in_progress` → running with its progress, `completed` → the file from
 *   `GET /v1/videos/{id}/content?variant=video` (with the channel's key: the channel's own host) copied, `failed` →
 *   failed with its error. Cancel: `DELETE /v1/videos/{id}`.
 * - `Authorization: Bearer <api_key>`; errors in OpenAI's `{ error: { message, code } }` envelope are worded with
 *   its message.
 *
 * @since 0.1.0
 */
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type JobState, Upstream, type UpstreamError } from "@mediagate/engine/Upstream"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import {
  call,
  field,
  mappedInput,
  messageIn,
  numberField,
  refused,
  stringField,
  type Transport,
  type TransportContext
} from "./internal/upstreamHttp.js"
import * as Mapping from "./Mapping.js"
import * as ResultCopy from "./ResultCopy.js"

const who = "openai"
const imagePrefix = "img_"

/** The files of an images answer: URLs as they are, `b64_json` as `data:` URIs of the requested format. */
const imageSources = (answer: unknown, format: string): ReadonlyArray<Mapping.ResultSource> => {
  const data = field(answer, "data")
  if (!Array.isArray(data)) return []
  return data.flatMap((item): Array<Mapping.ResultSource> => {
    const url = stringField(item, "url")
    if (url !== undefined) return [{ url }]
    const b64 = stringField(item, "b64_json")
    return b64 === undefined ? [] : [{ url: `data:image/${format === "jpg" ? "jpeg" : format};base64,${b64}` }]
  })
}

/**
 * Builds the OpenAI-compatible transport of a channel.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (context: TransportContext): Transport => {
  const apiKey = context.channel.credentials.apiKey
  const auth: Record<string, string> = apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(apiKey)}` }
  const api = call(context, who, auth)
  /** Image jobs answered in this process, their files not copied yet: job id → files. */
  const images = new Map<string, ReadonlyArray<Mapping.ResultSource>>()

  /** The request body of a task: its mapped input with the target as `model`. */
  const requestOf = (task: TaskRecord) => {
    const compiled = context.mapping(task.model)
    return Effect.map(
      mappedInput(who, compiled, task),
      (input): { compiled: Mapping.Compiled; body: Record<string, unknown> } => ({
        compiled,
        body: { model: compiled.target, ...input }
      })
    )
  }

  const submitImage = (task: TaskRecord) =>
    Effect.gen(function*() {
      const { body, compiled } = yield* requestOf(task)
      const answer = yield* api({ method: "POST", path: "/v1/images/generations", json: body, creates: true })
      const format = typeof body["output_format"] === "string" ? body["output_format"] : "png"
      const sources = compiled.output === undefined
        ? imageSources(answer.json, format)
        : yield* Mapping.mapOutput(compiled, task.model, answer.json)
      if (sources.length === 0) return yield* refused(`${who}: the images answer holds no image`)
      // one id per call: a task submitted again (its answer lost with another process) gets a copy of its own
      const jobId = `${imagePrefix}${task.id}.${randomBytes(6).toString("hex")}`
      images.set(jobId, sources)
      // the copy starts now; the poll that follows answers its state
      yield* context.copier.collect(task, jobId, sources, context.policy)
      return { jobId }
    })

  const submitVideo = (task: TaskRecord) =>
    Effect.gen(function*() {
      const { body } = yield* requestOf(task)
      const answer = yield* api({ method: "POST", path: "/v1/videos", json: body, creates: true })
      const id = stringField(answer.json, "id")
      if (id === undefined) return yield* refused(`${who}: the video answer has no id`)
      return { jobId: id }
    })

  const pollImage = (task: TaskRecord, jobId: string): Effect.Effect<JobState> =>
    Effect.gen(function*() {
      const sources = images.get(jobId)
      const state = yield* context.copier.collect(task, jobId, sources ?? [], context.policy)
      if (state._tag !== "Copying") images.delete(jobId)
      // neither copied nor known here: the answer was lost with another process
      if (sources === undefined && state._tag === "Failed") {
        return { _tag: "Lost", message: `${who}: the image answer of ${jobId} is gone (its process ended)` } as const
      }
      return ResultCopy.jobState(state)
    })

  const pollVideo = (task: TaskRecord, jobId: string): Effect.Effect<JobState, UpstreamError> =>
    Effect.gen(function*() {
      const answer = yield* api({ path: `/v1/videos/${encodeURIComponent(jobId)}` })
      const video = answer.json
      switch (stringField(video, "status")) {
        case "queued":
          return { _tag: "Queued" } as const
        case "in_progress":
          return { _tag: "Running", progress: Math.max(1, Math.min(99, numberField(video, "progress") ?? 50)) } as const
        case "completed": {
          const compiled = context.mapping(task.model)
          const content = `${context.baseUrl}/v1/videos/${encodeURIComponent(jobId)}/content?variant=video`
          const seconds = Number(field(video, "seconds"))
          const sources: ReadonlyArray<Mapping.ResultSource> = compiled.output === undefined
            ? [{
              url: content,
              format: "mp4",
              headers: auth,
              ...(Number.isFinite(seconds) && seconds > 0 ? { duration: seconds } : {})
            }]
            : (yield* Mapping.mapOutput(compiled, task.model, { ...(video as object), content_url: content }))
              .map((source) => ({ ...source, headers: auth }))
          const state = yield* context.copier.collect(task, jobId, sources, context.policy)
          return ResultCopy.jobState(state)
        }
        case "failed":
          return {
            _tag: "Failed",
            code: "PROVIDER_ERROR",
            message: `${who}: ${messageIn(field(video, "error"), "the video failed")}`
          } as const
        default:
          return yield* refused(`${who}: unknown video status ${JSON.stringify(field(video, "status") ?? null)}`)
      }
    })

  return {
    upstream: Upstream.of({
      submit: (task) => task.mediaType === "image" ? submitImage(task) : submitVideo(task),
      poll: (task, jobId) => jobId.startsWith(imagePrefix) ? pollImage(task, jobId) : pollVideo(task, jobId),
      cancel: (_task, jobId) =>
        jobId.startsWith(imagePrefix)
          ? Effect.sync(() => images.delete(jobId))
          : Effect.ignore(
            api({ method: "DELETE", path: `/v1/videos/${encodeURIComponent(jobId)}`, accept: () => true })
          ),
      changes: Stream.empty,
      notifiesChanges: false
    })
  }
}
