/**
 * The `fal` transport: fal's queue protocol (docs/channels.md, "fal").
 *
 * - submit: `POST {base_url}/{app}` with the (mapped) input, `Authorization: Key <api_key>`, and, with callbacks on,
 *   `?fal_webhook=<our callback URL>`; the job id is `<app without its subpath>|<request_id>` (status, result and
 *   cancel URLs leave the subpath out, so the job id keeps what they need even if the mapping changes later).
 * - poll: `GET .../requests/{id}/status?logs=1`: `IN_QUEUE` → queued (with fal's `queue_position`, the jobs ahead,
 *   as the place: + 1), `IN_PROGRESS` → running, each with the runner's log lines; `COMPLETED` → the result (`GET .../requests/{id}`): a model error (an error status
 *   with fal's `detail`) fails the task; otherwise the files (the output mapping, or every file URL: `images[]`,
 *   `video`, ...) are copied (`ResultCopy`) and the task succeeds, with `metrics.inference_time` as the seconds it
 *   ran.
 * - cancel: `PUT .../requests/{id}/cancel`, best effort.
 * - find (after an uncertain submit): fal's queue honours no idempotency key and lists no requests by our id; the job
 *   is known once its callback names its `request_id`, else the task waits the router's `submitWait`.
 * - callbacks: fal POSTs the outcome to the callback URL; it only wakes the task for a poll (fal signs callbacks
 *   with ED25519 keys published as a JWKS; the poll that follows is what we trust, so an unsigned or forged callback
 *   can only make a task polled early).
 *
 * @since 0.1.0
 */
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type JobState, Upstream, type UpstreamError } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import {
  call,
  elapsedProgress,
  failureOf,
  field,
  jsonField,
  logLines,
  mappedInput,
  numberField,
  refused,
  stringField,
  type Transport,
  type TransportContext
} from "./internal/upstreamHttp.js"
import * as Mapping from "./Mapping.js"
import * as ResultCopy from "./ResultCopy.js"

const who = "fal"

/**
 * The app of a target without its subpath (`fal-ai/flux/dev` → `fal-ai/flux`): where its requests live.
 *
 * @since 0.1.0
 * @category utils
 */
export const appOf = (target: string): string => target.split("/").filter((part) => part !== "").slice(0, 2).join("/")

/** The request URLs of a job id (`<app>|<request id>`). */
const requestPath = (jobId: string): string | undefined => {
  const bar = jobId.indexOf("|")
  if (bar <= 0) return undefined
  return `/${jobId.slice(0, bar)}/requests/${encodeURIComponent(jobId.slice(bar + 1))}`
}

/**
 * Builds the fal transport of a channel.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (context: TransportContext): Transport => {
  const apiKey = context.channel.credentials.apiKey
  const api = call(context, who, apiKey === undefined ? {} : { authorization: `Key ${Redacted.value(apiKey)}` })

  const submit = (task: TaskRecord) =>
    Effect.gen(function*() {
      const compiled = context.mapping(task.model)
      const target = compiled.target.replace(/^\/+/, "")
      if (appOf(target).split("/").length < 2) {
        return yield* refused(`${who}: target ${target} of model ${task.model} is not an app id (owner/app)`)
      }
      const input = yield* mappedInput(who, compiled, task)
      const callback = yield* context.callbackUrl(task)
      const query = callback === undefined ? "" : `?fal_webhook=${encodeURIComponent(callback)}`
      const answer = yield* api({ method: "POST", path: `/${target}${query}`, json: input, creates: true })
      const requestId = stringField(answer.json, "request_id")
      if (requestId === undefined) return yield* refused(`${who}: the submit answer has no request_id`)
      return { jobId: `${appOf(target)}|${requestId}` }
    })

  const result = (task: TaskRecord, jobId: string, path: string, seconds: number | undefined) =>
    Effect.gen(function*() {
      // a failed request answers its result with the model's error status and fal's `detail`; only the statuses of
      // fal's gateway itself (rate limit, unavailable) are worth asking again
      const answer = yield* api({ path, accept: (status) => ![408, 429, 502, 503, 504].includes(status) })
      // our key refused is the channel's failure, not the job's
      if (answer.status === 401 || answer.status === 402 || answer.status === 403) return yield* failureOf(who, answer)
      if (answer.status >= 400) {
        return {
          _tag: "Failed",
          code: "PROVIDER_ERROR",
          message: `${who}: ${
            typeof field(answer.json, "detail") === "string"
              ? stringField(answer.json, "detail")
              : JSON.stringify(field(answer.json, "detail") ?? answer.text.slice(0, 300))
          }`
        } satisfies JobState
      }
      const sources = yield* Mapping.mapOutput(context.mapping(task.model), task.model, answer.json)
      return ResultCopy.jobState(yield* context.copier.collect(task, jobId, sources, context.policy, { seconds }))
    })

  const poll = (task: TaskRecord, jobId: string): Effect.Effect<JobState, UpstreamError> =>
    Effect.gen(function*() {
      const path = requestPath(jobId)
      if (path === undefined) return yield* refused(`${who}: job id ${jobId} is not a fal request`)
      const status = yield* api({ path: `${path}/status?logs=1` })
      const logs = logLines(field(status.json, "logs"))
      switch (stringField(status.json, "status")) {
        case "IN_QUEUE": {
          const ahead = numberField(status.json, "queue_position")
          return { _tag: "Queued", position: ahead === undefined ? undefined : ahead + 1, logs } as const
        }
        case "IN_PROGRESS":
          return { _tag: "Running", progress: elapsedProgress(task, yield* Clock.currentTimeMillis), logs } as const
        case "COMPLETED":
          return yield* result(task, jobId, path, numberField(field(status.json, "metrics"), "inference_time"))
        default:
          return yield* refused(`${who}: unknown status ${JSON.stringify(field(status.json, "status"))}`)
      }
    })

  const cancel = (_task: TaskRecord, jobId: string) => {
    const path = requestPath(jobId)
    return path === undefined
      ? Effect.void
      : Effect.ignore(api({ method: "PUT", path: `${path}/cancel`, accept: () => true }))
  }

  // fal honours no idempotency key and lists no requests by our id: after an uncertain submit only its callback (the
  // `request_id` of the job the submit made) tells the job; without one the task waits
  const jobOfCallback = (body: string) => {
    const requestId = jsonField(body, "request_id")
    return requestId === undefined
      ? undefined
      : (model: string) => `${appOf(context.mapping(model).target.replace(/^\/+/, ""))}|${requestId}`
  }

  return {
    upstream: Upstream.of({ submit, poll, cancel, changes: Stream.empty, notifiesChanges: false }),
    jobOfCallback
  }
}
