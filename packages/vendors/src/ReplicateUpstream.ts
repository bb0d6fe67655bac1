/**
 * The `replicate` transport: Replicate's predictions protocol (docs/channels.md, "Replicate").
 *
 * - submit: a target `owner/name` → `POST /v1/models/{owner}/{name}/predictions`; a version (64 hex characters, or
 *   `owner/name:version`) → `POST /v1/predictions` with `version`; the (mapped) input; `Authorization: Bearer`; with
 *   callbacks on, `webhook` = our callback URL and `webhook_events_filter: ["completed"]`. The job id is the
 *   prediction id.
 * - poll: `GET /v1/predictions/{id}`: `starting` → queued, `processing` → running (progress from the last `NN%` of
 *   its logs, else from the time it ran), `succeeded` → the output's files (the output mapping, or every URL of
 *   `output`) copied (`ResultCopy`), with `metrics.predict_time` as the seconds it ran; `failed` → failed with its
 *   error; `canceled` / `aborted` → failed.
 * - cancel: `POST /v1/predictions/{id}/cancel`, best effort.
 * - find (after an uncertain submit): Replicate honours no idempotency key and its prediction list shows nothing of
 *   ours to match; the job is known once its signed callback names it, else the task waits the router's `submitWait`.
 * - callbacks: Replicate signs them with Standard Webhooks (HMAC-SHA256 over `id.timestamp.body`, keyed with the
 *   account's signing secret from `GET /v1/webhooks/default/secret`, fetched once per channel); a callback whose
 *   signature does not verify is refused, and one that does only wakes the task for a poll.
 *
 * @since 0.1.0
 */
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type JobState, Upstream, type UpstreamError } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createHmac, timingSafeEqual } from "node:crypto"
import {
  call,
  elapsedProgress,
  field,
  jsonField,
  logLines,
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

const who = "replicate"

/** How long a callback's timestamp may be off our clock (Standard Webhooks' tolerance). */
const toleranceSeconds = 5 * 60

/**
 * Whether a Standard Webhooks signature holds: `signatures` is the space-separated `v1,<base64>` list, the key the
 * base64 after `whsec_` of `secret`, the message `id.timestamp.body`; the timestamp within 5 minutes of `now`.
 *
 * @since 0.1.0
 * @category utils
 */
export const verifyStandardWebhook = (
  secret: string,
  headers: {
    readonly id: string | undefined
    readonly timestamp: string | undefined
    readonly signatures: string | undefined
  },
  body: string,
  nowSeconds: number
): boolean => {
  const { id, signatures, timestamp } = headers
  if (id === undefined || timestamp === undefined || signatures === undefined) return false
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64")
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest()
  return signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",", 2)
    if (version !== "v1" || signature === undefined) return false
    const given = Buffer.from(signature, "base64")
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}

/** The create request of a target: a model's endpoint, or `/v1/predictions` with a version. */
const createOf = (target: string): { readonly path: string; readonly version?: string } | undefined => {
  const version = /^(?:[\w.-]+\/[\w.-]+:)?([0-9a-f]{64})$/i.exec(target)
  if (version !== null) return { path: "/v1/predictions", version: version[1]! }
  const model = /^([\w.-]+)\/([\w.-]+)$/.exec(target)
  if (model !== null) return { path: `/v1/models/${model[1]}/${model[2]}/predictions` }
  return undefined
}

/** The last percentage a prediction's logs show (a progress bar), if any. */
const progressOfLogs = (logs: string | undefined): number | undefined => {
  if (logs === undefined) return undefined
  const matches = logs.slice(-2000).match(/(\d{1,3})%/g)
  const last = matches?.[matches.length - 1]
  const value = last === undefined ? NaN : Number(last.slice(0, -1))
  return Number.isFinite(value) && value <= 100 ? Math.max(1, Math.min(99, value)) : undefined
}

/**
 * Builds the Replicate transport of a channel.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (context: TransportContext): Transport => {
  const apiKey = context.channel.credentials.apiKey
  const api = call(context, who, apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(apiKey)}` })

  const submit = (task: TaskRecord) =>
    Effect.gen(function*() {
      const compiled = context.mapping(task.model)
      const create = createOf(compiled.target)
      if (create === undefined) {
        return yield* refused(
          `${who}: target ${compiled.target} of model ${task.model} is neither owner/name nor a version id`
        )
      }
      const input = yield* mappedInput(who, compiled, task)
      const callback = yield* context.callbackUrl(task)
      const answer = yield* api({
        method: "POST",
        path: create.path,
        json: {
          ...(create.version === undefined ? {} : { version: create.version }),
          input,
          ...(callback === undefined ? {} : { webhook: callback, webhook_events_filter: ["completed"] })
        },
        creates: true
      })
      const id = stringField(answer.json, "id")
      if (id === undefined) return yield* refused(`${who}: the create answer has no prediction id`)
      return { jobId: id }
    })

  const poll = (task: TaskRecord, jobId: string): Effect.Effect<JobState, UpstreamError> =>
    Effect.gen(function*() {
      const answer = yield* api({ path: `/v1/predictions/${encodeURIComponent(jobId)}` })
      const prediction = answer.json
      const status = stringField(prediction, "status")
      const logs = logLines(field(prediction, "logs"))
      switch (status) {
        case "starting":
          return { _tag: "Queued", logs } as const
        case "processing": {
          const progress = progressOfLogs(stringField(prediction, "logs")) ??
            elapsedProgress(task, yield* Clock.currentTimeMillis)
          return { _tag: "Running", progress, logs } as const
        }
        case "succeeded": {
          const seconds = numberField(field(prediction, "metrics"), "predict_time")
          const sources = yield* Mapping.mapOutput(context.mapping(task.model), task.model, field(prediction, "output"))
          return ResultCopy.jobState(yield* context.copier.collect(task, jobId, sources, context.policy, { seconds }))
        }
        case "failed": {
          const seconds = numberField(field(prediction, "metrics"), "predict_time")
          return {
            _tag: "Failed",
            code: "PROVIDER_ERROR",
            message: `${who}: ${messageIn(field(prediction, "error"), "the prediction failed")}`,
            ...(seconds === undefined ? {} : { seconds })
          } as const
        }
        case "canceled":
        case "aborted":
          return { _tag: "Failed", code: "PROVIDER_ERROR", message: `${who}: the prediction was ${status}` } as const
        default:
          return yield* refused(`${who}: unknown prediction status ${JSON.stringify(status ?? null)}`)
      }
    })

  const cancel = (_task: TaskRecord, jobId: string) =>
    Effect.ignore(
      api({
        method: "POST",
        path: `/v1/predictions/${encodeURIComponent(jobId)}/cancel`,
        accept: () => true,
        repeatable: true
      })
    )

  /** The account's signing secret, read once (a failed read is tried again at the next callback). */
  let secret: string | undefined
  const signingSecret = Effect.suspend(() =>
    secret !== undefined
      ? Effect.succeed(secret)
      : Effect.map(api({ path: "/v1/webhooks/default/secret" }), (answer) => {
        secret = stringField(answer.json, "key")
        return secret
      })
  )

  const verifyCallback: NonNullable<Transport["verifyCallback"]> = (body, headers) =>
    Effect.gen(function*() {
      const key = yield* signingSecret
      if (key === undefined) return false
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      return verifyStandardWebhook(
        key,
        {
          id: headers["webhook-id"],
          timestamp: headers["webhook-timestamp"],
          signatures: headers["webhook-signature"]
        },
        body,
        now
      )
    }).pipe(Effect.catchAll(() => Effect.succeed(false)))

  // Replicate honours no idempotency key, and its list of predictions shows nothing of ours to match (no webhook, no
  // metadata): after an uncertain submit only the signed callback (the prediction's `id`) tells the job
  const jobOfCallback = (body: string) => {
    const id = jsonField(body, "id")
    return id === undefined ? undefined : () => id
  }

  return {
    upstream: Upstream.of({ submit, poll, cancel, changes: Stream.empty, notifiesChanges: false }),
    verifyCallback,
    jobOfCallback
  }
}
