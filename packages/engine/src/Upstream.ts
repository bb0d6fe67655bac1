/**
 * The upstream port a worker drives: submit a task, poll its job, cancel it. The vendor layers implement it per
 * family (simulated, relay, ...). Every call is a short step: a task waiting on its upstream holds no worker.
 *
 * @since 0.1.0
 */
import type { Task } from "@mediagate/contract"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { TaskRecord } from "./TaskRecord.js"
import type { ExtraCharge } from "./TaskStorage.js"

/** What a poll reports. */
export type JobState =
  | { readonly _tag: "Queued" }
  | { readonly _tag: "Running"; readonly progress: number }
  | { readonly _tag: "Succeeded"; readonly result: ReadonlyArray<Task.ResultItem> }
  | { readonly _tag: "Failed"; readonly code: string; readonly message: string }

/**
 * An upstream call failed. `retryable` failures (timeouts, 5xx, connection resets) are retried with backoff until
 * the deadline; others fail the task with `PROVIDER_ERROR` (or the given code).
 */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
  message: Schema.String,
  retryable: Schema.Boolean,
  code: Schema.optional(Schema.String)
}) {}

/** The upstream port. */
export class Upstream extends Context.Tag("@mediagate/engine/Upstream")<Upstream, {
  /**
   * Starts the job of a task; the task id doubles as an idempotency key for upstreams that support one. `charges`
   * are what the task costs on top of its price, measured while submitting (e.g. reference-video seconds).
   */
  readonly submit: (
    task: TaskRecord
  ) => Effect.Effect<{ readonly jobId: string; readonly charges?: ReadonlyArray<ExtraCharge> }, UpstreamError>
  /** Reads the state of a job. */
  readonly poll: (task: TaskRecord, jobId: string) => Effect.Effect<JobState, UpstreamError>
  /** Best-effort cancel of a job (after a cancel or expiry). */
  readonly cancel: (task: TaskRecord, jobId: string) => Effect.Effect<void>
  /**
   * Task ids whose job just changed state (an upstream callback): the worker polls them at once instead of at
   * the next backoff step. Upstreams without callbacks give an empty stream.
   */
  readonly changes: Stream.Stream<string>
  /**
   * Whether `changes` reports every job that finishes (callbacks the upstream always makes). Polls are then only
   * a slow safety net; otherwise they are how the engine learns that a job finished.
   */
  readonly notifiesChanges: boolean
}>() {}
