/**
 * The task lifecycle: accepting a task, the workers' claims, steps and finishes, cancels, and the wake-ups of due work.
 *
 * Every worker write is a compare-and-set on the task's status **and** fencing token (`fence`, incremented by each
 * claim), so a worker that lost its lease can never overwrite a newer state. Terminal transitions write the refund
 * (through `Billing`) and the outbox event in the same step as the state.
 *
 * One of the task storage's ports (docs/engine.md "Storage"): the memory implementation is `TaskStorage.layerMemory`,
 * the SQL one (SQLite, PostgreSQL) `SqlTaskStorage.layer`; each provides every port.
 *
 * @since 0.1.0
 */
import type { Errors, Task } from "@mediagate/contract"
import type * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { Charge } from "./Billing.js"
import type { NewTask, Outcome, TaskRecord, UpstreamReport } from "./TaskRecord.js"

/**
 * An `Idempotency-Key` claim of a task, judged by the shared rule (`IdempotencyWindow`).
 *
 * @since 0.1.0
 * @category models
 */
export type IdempotencyClaim = IdempotencyWindow.Claim

/**
 * The answer of {@link TaskLifecycle} `accept`.
 *
 * @since 0.1.0
 * @category models
 */
export type AcceptResult =
  | { readonly _tag: "Created"; readonly task: TaskRecord }
  | { readonly _tag: "Replayed"; readonly task: TaskRecord }

/**
 * The answer of a cancel.
 *
 * @since 0.1.0
 * @category models
 */
export type CancelResult =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NotCancellable"; readonly status: Task.TaskStatus }
  | { readonly _tag: "Cancelled"; readonly task: TaskRecord }

/**
 * A fenced, non-terminal update by the worker holding the lease.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepUpdate {
  readonly status?: "queued" | "running"
  readonly progress?: number
  readonly upstreamJobId?: string
  /** The channel the job was submitted to (recorded with `upstreamJobId`). */
  readonly channelId?: string
  /**
   * Forget the upstream job and the channel (both back to null): the job's channel failed and the next step submits
   * the task again, on another channel; or a submit failed on every channel and the reservation is let go.
   */
  readonly resubmit?: boolean
  /**
   * When the task is next due; the lease is released with it. A task an upstream's change made due during this claim
   * (`markDue`) stays due instead.
   */
  readonly nextRunAt: number
  /** Count this step as an upstream poll. */
  readonly polled?: boolean
  /**
   * Charges on top of the price, known only once the task runs (e.g. measured input seconds). Charged through
   * {@link Billing} in the same transaction as the step (never for `test` tasks); a refusal fails the step and
   * records nothing.
   */
  readonly charges?: ReadonlyArray<ExtraCharge>
  /** What the upstream reported besides the state; null clears the recorded one (undefined keeps it). */
  readonly report?: UpstreamReport | null
}

/**
 * What a finish records besides the outcome.
 *
 * @since 0.1.0
 * @category models
 */
export interface FinishOptions {
  /** The upstream job of the task, when the worker has not recorded it yet. */
  readonly upstreamJobId?: string | undefined
  /** The channel of that job. */
  readonly channelId?: string | undefined
  /**
   * The task as the finishing worker claimed it (the record of the claim whose fence is given). A storage may
   * build the event from it before the write (the fields an event carries do not change while a claim holds), and
   * so end the task and write its event in one statement; without it, the event is built from the written row.
   */
  readonly task?: TaskRecord | undefined
}

/**
 * A charge on top of a task's price.
 *
 * @since 0.1.0
 * @category models
 */
export interface ExtraCharge {
  readonly amountMicros: number
  readonly description: string
}

/**
 * The positive extra charges of a step.
 *
 * @since 0.1.0
 * @category utils
 */
export const extraCharges = (update: StepUpdate): ReadonlyArray<ExtraCharge> =>
  (update.charges ?? []).filter((charge) => charge.amountMicros > 0)

/**
 * The task lifecycle.
 *
 * @since 0.1.0
 * @category services
 */
export class TaskLifecycle extends Context.Tag("@mediagate/engine/TaskLifecycle")<TaskLifecycle, {
  /**
   * Stores a new `pending` task with its charge and idempotency record in one transaction. With an idempotency
   * key already used for the same fingerprint (within its window), answers the original task instead.
   */
  readonly accept: (input: {
    readonly task: NewTask
    readonly charge: Charge | undefined
    readonly idempotency: IdempotencyClaim | undefined
  }) => Effect.Effect<
    AcceptResult,
    Errors.IdempotencyKeyReused | Errors.InsufficientBalance | Errors.SpendLimitExceeded | PersistenceError
  >
  /**
   * Leases up to `limit` due tasks (active, `nextRunAt` reached, no live lease): increments each fence, moves
   * `pending` to `queued`, sets `startedAt` on first claim. `exclude`: skip the tasks accepted by these nodes
   * (`TaskRecord.nodeId`; the nodes the caller is apart from, see `Placement`).
   */
  readonly claim: (
    owner: string,
    limit: number,
    leaseMs: number,
    exclude?: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<TaskRecord>, PersistenceError>
  /**
   * Applies a step's update and releases the lease, if `fence` still holds — the caller's claim is the latest and
   * its lease not yet released — and the task is still active.
   */
  readonly step: (
    id: string,
    fence: number,
    update: StepUpdate
  ) => Effect.Effect<boolean, PersistenceError | Errors.InsufficientBalance | Errors.SpendLimitExceeded>
  /**
   * Ends a task (succeeded, failed, expired) if `fence` still holds (as for `step`): terminal state, refund of failed
   * and expired tasks, and the outbox event, in one transaction. Answers the terminal task, or none when the fence
   * was lost. `options.upstreamJobId` records the upstream job with the outcome (a job submitted and finished under
   * one claim). SQL storage commits concurrent finishes together (one transaction for a burst; see `SqlTaskStorage`).
   */
  readonly finish: (
    id: string,
    fence: number,
    outcome: Outcome,
    options?: FinishOptions
  ) => Effect.Effect<Option.Option<TaskRecord>, PersistenceError>
  /**
   * Cancels a `pending` or `queued` task of an account (and of `environment` when given; a task of the other one is
   * `NotFound`): state, refund and outbox event in one transaction.
   */
  readonly cancel: (
    accountId: string,
    id: string,
    environment?: TaskRecord["environment"]
  ) => Effect.Effect<CancelResult, PersistenceError>
  /**
   * Makes active tasks due now (their upstream reported a change), in creation order: `nextRunAt` becomes the
   * task's `createdAt` (now, if that is later), so that claims take them before the tasks accepted after them. A
   * leased task stays due through its claim's step: the step's write does not put it off to its own next run (the
   * change may have come while the step ran, on another thread or node than the step's).
   */
  readonly markDue: (ids: ReadonlyArray<string>) => Effect.Effect<void, PersistenceError>
  /**
   * When an active task is next due: its `nextRunAt`, or, while it is leased, the later of that and its lease
   * expiry. None when no task is active.
   */
  readonly nextDueAt: Effect.Effect<Option.Option<number>, PersistenceError>
  /**
   * Signals that work may be due (a task accepted, made due or handed back, here or in another process). A step
   * does not signal: the worker that wrote it knows when its task is due again.
   */
  readonly wakeups: Stream.Stream<void>
  /**
   * Records the job an upstream's callback on `channelId` named for an active task whose job is not known yet (none
   * recorded: its submit's answer is still on its way, or its worker died; or an uncertain submit's marker), so
   * that whichever worker claims it next polls that job instead of submitting again. `jobOf` gives the job id from
   * the task's model. Answers whether it was recorded (false: a job was recorded already, or the task has ended).
   */
  readonly noteJob: (
    id: string,
    channelId: string,
    jobOf: (model: string) => string
  ) => Effect.Effect<boolean, PersistenceError>
}>() {}
