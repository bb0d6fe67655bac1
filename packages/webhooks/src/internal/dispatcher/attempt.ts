/**
 * One attempt of a delivery: the request sent (in a span of the task's trace while tracing is on), its outcome
 * settled (succeeded, the next retry, or failed), and the claim of every due delivery for a one-off run.
 */
import { Metrics, Tracing } from "@mediagate/contract"
import { TaskReads } from "@mediagate/engine/TaskReads"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { WebhookSender } from "../../Outbound.js"
import { WebhookStore } from "../../WebhookStore.js"
import type { DeliveryRow, Settle, Settlement, Target } from "../store/records.js"
import { configuredHeaders, perJobHeaders, taskIdOf } from "./headers.js"
import { type DispatcherOptions, resolve, type Resolved } from "./options.js"

/** The delay before the next retry after `requests` requests, or undefined when none is left. */
export const retryDelayMs = (
  options: Resolved,
  requests: number,
  random: () => number = Math.random
): number | undefined => {
  const base = options.retryScheduleMs[requests - 1]
  if (base === undefined) return undefined
  return Math.round(base * (1 + options.jitter * random()))
}

const isSuccess = (status: number | null) => status !== null && status >= 200 && status <= 299

/**
 * A delivery to attempt: a claimed row, with its configured webhook as the claim read it (`webhook`, see
 * `ClaimedDelivery`), or without it (then the attempt reads the webhook).
 */
export type Attempting = DeliveryRow & { readonly webhook?: Target | null | undefined }

/** Where an attempt records its outcome: the settle, and the storage clock. */
export interface Recorder {
  readonly settle: (settle: Settle) => Effect.Effect<boolean, PersistenceError>
  readonly now: Effect.Effect<number, PersistenceError>
}

/** Each settle on its own (`settleAll` of one), the clock read from the storage. */
const directRecorder = (store: WebhookStore["Type"]): Recorder => ({
  settle: (settle) => Effect.map(store.settleAll([settle]), (answers) => answers[0] === true),
  now: store.now
})

/**
 * Sends one claimed delivery and records the attempt (fenced): succeeded on 2xx; on a failure the next retry, or
 * `failed` after the last; `410 Gone` fails it and disables its webhook. A delivery whose webhook was deleted or
 * disabled is failed without a request. Answers whether the outcome was recorded (the fence still held).
 */
export const attemptDelivery = (delivery: Attempting, options: Resolved) =>
  Effect.flatMap(WebhookStore, (store) => attemptWith(delivery, options, directRecorder(store)))

/** An attempt recorded through `recorder`: traced while tracing is on. */
export const attemptWith = (delivery: Attempting, options: Resolved, recorder: Recorder) =>
  Effect.flatMap(
    Tracing.enabled,
    (on) => on ? tracedAttempt(delivery, options, recorder) : attemptOnce(delivery, options, recorder)
  )

/**
 * An attempt in a span of the trace of the task's creating request (when the task kept it: the delivery's task is
 * read for its `traceContext`), with the event and delivery ids, the attempt number and the answer's status.
 */
const tracedAttempt = (delivery: Attempting, options: Resolved, recorder: Recorder) =>
  Effect.gen(function*() {
    const tasks = yield* Effect.serviceOption(TaskReads)
    const taskId = taskIdOf(delivery.payload)
    const task = Option.isNone(tasks) || taskId === ""
      ? Option.none()
      : yield* tasks.value.getById(taskId).pipe(Effect.orElseSucceed(() => Option.none()))
    const parent = Option.isSome(task) ? Tracing.parentOf(task.value.traceContext) : undefined
    return yield* attemptOnce(delivery, options, recorder).pipe(Effect.withSpan("Webhooks.attemptDelivery", {
      kind: "client",
      captureStackTrace: false,
      ...(parent === undefined ? {} : { parent }),
      attributes: {
        "mediagate.event_id": delivery.eventId,
        "mediagate.delivery_id": delivery.id,
        "mediagate.attempt": delivery.attempts + 1,
        ...(taskId === "" ? {} : { "mediagate.task_id": taskId })
      }
    }))
  })

const attemptOnce = (delivery: Attempting, options: Resolved, recorder: Recorder) =>
  Effect.gen(function*() {
    const sender = yield* WebhookSender
    let headers: Record<string, string>
    const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (delivery.webhookId !== null) {
      const webhook: Option.Option<Target> = delivery.webhook === undefined
        ? yield* Effect.flatMap(WebhookStore, (store) => store.getWebhookById(delivery.webhookId!))
        : Option.fromNullable(delivery.webhook)
      if (Option.isNone(webhook) || webhook.value.deletedAt !== null || !webhook.value.enabled) {
        const reason = Option.isNone(webhook) || webhook.value.deletedAt !== null
          ? "webhook deleted"
          : "webhook disabled"
        return yield* recorder.settle({ delivery, attempt: undefined, settlement: { status: "failed", reason } })
      }
      headers = configuredHeaders(webhook.value.secret, delivery.eventId, timestamp, delivery.payload)
    } else {
      headers = perJobHeaders(delivery.eventType, taskIdOf(delivery.payload), delivery.eventId, timestamp)
    }
    // the attempt's span travels with the request (W3C Trace Context) while tracing is on
    const traceparent = yield* Tracing.traceparent
    if (traceparent !== undefined) headers = { ...headers, traceparent }
    const result = yield* sender.send({
      url: delivery.url,
      headers,
      body: delivery.payload,
      timeoutMs: options.timeoutMs
    })
    if (traceparent !== undefined) {
      yield* Effect.annotateCurrentSpan(
        result.statusCode === null
          ? { "error.type": result.reason ?? "error" }
          : { "http.response.status_code": result.statusCode }
      )
    }
    const at = yield* recorder.now
    const requests = delivery.attempts + 1
    let settlement: Settlement
    if (isSuccess(result.statusCode)) settlement = { status: "succeeded" }
    else if (result.statusCode === 410) settlement = { status: "failed", disableWebhook: delivery.webhookId !== null }
    else {
      const delay = retryDelayMs(options, requests)
      settlement = delay === undefined ? { status: "failed" } : { status: "pending", nextAttemptAt: at + delay }
    }
    const outcome = settlement.status === "succeeded"
      ? "delivered"
      : settlement.status === "pending"
      ? "retrying"
      : "failed"
    Metrics.webhookDeliveries.record(1, outcome, requests)
    Metrics.webhookDeliveryDuration.record(result.durationMs / 1000, outcome)
    return yield* recorder.settle({
      delivery,
      attempt: {
        statusCode: result.statusCode,
        error: isSuccess(result.statusCode) ? null : result.error ?? `HTTP ${result.statusCode}`,
        durationMs: result.durationMs,
        responseExcerpt: result.responseExcerpt,
        at
      },
      settlement
    })
  })

/** Claims every due delivery (up to `limit`) and sends them concurrently; answers how many were claimed. */
export const deliverDue = (options: DispatcherOptions = {}, limit = 100) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const resolved = resolve(options)
    const now = yield* store.now
    const owner = options.owner ?? "deliverDue"
    const claimed = yield* store.claimDue(
      owner,
      limit,
      Duration.toMillis(options.lease ?? resolved.timeoutMs + 30_000),
      now
    )
    yield* Effect.forEach(claimed, (delivery) => attemptDelivery(delivery, resolved), {
      concurrency: "unbounded",
      discard: true
    })
    return claimed.length
  })
