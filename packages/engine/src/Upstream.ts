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
import type { ExtraCharge } from "./TaskLifecycle.js"
import type { TaskRecord } from "./TaskRecord.js"

/**
 * What a poll reports.
 *
 * @since 0.1.0
 * @category models
 */
export type JobState =
  | {
    readonly _tag: "Queued"
    /** The job's place in the upstream's queue (1: next), when the upstream says. */
    readonly position?: number | undefined
    /** The job's latest log lines, when the upstream gives them. */
    readonly logs?: ReadonlyArray<string> | undefined
  }
  | { readonly _tag: "Running"; readonly progress: number; readonly logs?: ReadonlyArray<string> | undefined }
  | {
    readonly _tag: "Succeeded"
    readonly result: ReadonlyArray<Task.ResultItem>
    /**
     * How long the job ran at the upstream, in seconds, when the upstream says (a relay reads the other service's
     * started and completed times): the duration estimates learn from it rather than from when a poll found it done.
     */
    readonly seconds?: number
    /** What the job cost at the upstream (micro-USD), when the upstream says or the channel prices its seconds. */
    readonly costMicros?: number
  }
  | {
    readonly _tag: "Failed"
    readonly code: string
    readonly message: string
    readonly seconds?: number
    readonly costMicros?: number
  }
  /**
   * The job cannot be followed any more: its channel failed (circuit open, removed) while another channel can serve
   * the task. The worker lets the job go (a best-effort cancel) and submits the task again (docs/channels.md).
   */
  | { readonly _tag: "Lost"; readonly message: string }

/**
 * An upstream call failed. `retryable` failures (timeouts, 5xx, connection resets) are retried with backoff until
 * the deadline (after `retryAfterMs` when given, e.g. a channel slot or breaker opening then); others fail the task
 * with `PROVIDER_ERROR` (or the given code). `kind` says why, for the channel router: `unavailable` (timeout,
 * refused connection, 5xx, 429), `auth` (the upstream rejected our credentials), `refused` (the upstream refused
 * this request on its merits: invalid input, content policy).
 *
 * @since 0.1.0
 * @category errors
 */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
  message: Schema.String,
  retryable: Schema.Boolean,
  code: Schema.optional(Schema.String),
  kind: Schema.optional(Schema.Literal("unavailable", "auth", "refused")),
  retryAfterMs: Schema.optional(Schema.Number),
  /**
   * A submit whose request may have reached the upstream and made a job (a timeout, a connection reset, a 5xx: the
   * answer was lost, not the request refused). The worker then records a {@link submitMarker} on `channelId` and
   * looks for that job ({@link Upstream} `find`) before it submits again.
   */
  uncertain: Schema.optional(Schema.Boolean),
  /** The channel an uncertain submit went to. */
  channelId: Schema.optional(Schema.String)
}) {}

/**
 * What an upstream knows of a job an uncertain submit may have made: `Found` (its id), `NotFound` (there is none, or
 * the upstream honours the submit's idempotency key: submitting again is safe), `Unknown` (the upstream offers no
 * way to tell: the task waits `waitMs` from the uncertain submit, or a callback that names the job, before it is
 * submitted again).
 *
 * @since 0.1.0
 * @category models
 */
export type FindResult =
  | { readonly _tag: "Found"; readonly jobId: string; readonly channelId?: string }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Unknown"; readonly waitMs: number }

/** The prefix of a {@link submitMarker}. */
const markerPrefix = "submit?"

/**
 * The upstream job id a worker records after an uncertain submit at `at` (epoch ms): the job may exist, its id is
 * not known yet. Never a real job id (polls and cancels skip it).
 *
 * @since 0.1.0
 * @category utils
 */
export const submitMarker = (at: number): string => `${markerPrefix}${at}`

/**
 * The SQL `LIKE` pattern of a {@link submitMarker}. A step that records a marker keeps a job recorded meanwhile (a
 * callback named it: `TaskLifecycle.noteJob`): a marker never replaces a job id.
 *
 * @since 0.1.0
 * @category constants
 */
export const markerPattern = `${markerPrefix}%`

/**
 * When the uncertain submit of a {@link submitMarker} was made (epoch ms), or undefined for a real job id.
 *
 * @since 0.1.0
 * @category utils
 */
export const markedAt = (jobId: string | null | undefined): number | undefined => {
  if (jobId == null || !jobId.startsWith(markerPrefix)) return undefined
  const at = Number(jobId.slice(markerPrefix.length))
  return Number.isFinite(at) ? at : 0
}

/**
 * The id an upstream may know a task's job by (an idempotency key, a tag in the job's metadata): the task id with
 * the channel's (`<task>.<channel>`), so a retried task (a new id) or a task failed over to another channel never
 * matches an earlier job, and a submit repeated on the same channel always does.
 *
 * @since 0.1.0
 * @category utils
 */
export const submitKey = (task: TaskRecord): string => task.channelId == null ? task.id : `${task.id}.${task.channelId}`

/**
 * The upstream port.
 *
 * @since 0.1.0
 * @category services
 */
export class Upstream extends Context.Tag("@mediagate/engine/Upstream")<Upstream, {
  /**
   * Starts the job of a task; the task id (with the channel's, when routed over channels) doubles as an idempotency
   * key for upstreams that support one. `channelId`: the channel the job went to (recorded on the task; polls and
   * cancels of the job go there). `charges` are what the task costs on top of its price, measured while submitting
   * (e.g. reference-video seconds).
   */
  readonly submit: (
    task: TaskRecord
  ) => Effect.Effect<
    { readonly jobId: string; readonly channelId?: string; readonly charges?: ReadonlyArray<ExtraCharge> },
    UpstreamError
  >
  /**
   * Looks for the job an uncertain submit of the task (on `task.channelId`, at `since`) may have made, by the task's
   * {@link submitKey}; a task without a channel (a worker died while submitting it) is looked for on the channels it
   * would be submitted to, and `Found` names the channel. Absent: the upstream offers no way (`Unknown` with the
   * worker's default wait).
   */
  readonly find?: (task: TaskRecord, since: number) => Effect.Effect<FindResult, UpstreamError>
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
  /**
   * Whether the upstream a task's job is on reports its changes (routed upstreams, whose channels differ); absent:
   * `notifiesChanges` for every task.
   */
  readonly notifies?: (task: TaskRecord) => boolean
  /**
   * The delay before the `polls`-th poll of a task's job, ms, where its upstream sets one (a channel's poll
   * interval); absent, or `undefined` for a task: the worker's schedule.
   */
  readonly pollDelay?: (polls: number, task: TaskRecord) => number | undefined
}>() {}
