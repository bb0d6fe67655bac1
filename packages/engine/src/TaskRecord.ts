/**
 * The stored task and its state machine (spec "States and transitions"; decisions.md §3).
 *
 * `pending` (accepted, stored, charged) → `queued` (claimed and handed to the upstream) → `running` (the upstream
 * is generating) → `succeeded` | `failed`; `cancelled` from `pending`/`queued`; `expired` from any non-terminal state
 * at the deadline. Every transition is a compare-and-set on the stored status and the fencing token.
 *
 * @since 0.1.0
 */
import { type Catalog, Money, Task, type Webhook } from "@mediagate/contract"
import type { Refund } from "./Billing.js"

/**
 * A task as storage holds it. Times are epoch milliseconds; money is integer micro-dollars.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskRecord {
  readonly id: string
  readonly accountId: string
  readonly keyId: string
  readonly environment: "live" | "test"
  readonly endpoint: Catalog.EndpointKey
  readonly provider: Catalog.TaskFamily
  readonly operation: Catalog.Operation
  readonly mediaType: Catalog.MediaType
  readonly model: string
  readonly status: Task.TaskStatus
  readonly input: Readonly<Record<string, unknown>>
  readonly metadata: Readonly<Record<string, string | number | boolean | null>>
  readonly webhookUrl: string | null
  readonly originalTaskId: string | null
  /** Everything charged for the task (the price at accept, plus extras charged while it ran). */
  readonly chargedMicros: number
  /** Everything refunded. */
  readonly refundedMicros: number
  readonly estimatedSeconds: number
  readonly progress: number
  readonly result: ReadonlyArray<Task.ResultItem> | null
  readonly error: Task.TaskError | null
  readonly upstreamJobId: string | null
  /**
   * The upstream channel the task is submitted to, or reserved on for its submit (docs/channels.md); null for `test`
   * tasks, before routing, and for storages written before channels existed. Operators see it, accounts never do.
   */
  readonly channelId?: string | null | undefined
  /** Fencing token: incremented by every claim; every worker write names the token it holds. */
  readonly fence: number
  readonly leaseOwner: string | null
  readonly leaseExpiresAt: number | null
  /** When the task is next due for a worker step; null once terminal. */
  readonly nextRunAt: number | null
  readonly deadlineAt: number
  /** Upstream polls so far (drives the poll backoff). */
  readonly polls: number
  readonly createdAt: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  /**
   * The W3C `traceparent` of the request that created the task, kept while tracing is on (null otherwise): its
   * worker steps and webhook deliveries continue that trace.
   */
  readonly traceContext?: string | null | undefined
  /**
   * What the upstream reported the task's job ran (seconds) and cost (micro-USD), recorded when the task ended, for
   * operators (accounts never see it); null where the upstream reports nothing.
   */
  readonly upstreamSeconds?: number | null | undefined
  readonly upstreamCostMicros?: number | null | undefined
  /**
   * The node that accepted the task (its id in the node registry; `Placement`): a node apart from it leaves the task
   * to it. Null when accepted by a process without workers or without a `Placement`.
   */
  readonly nodeId?: string | null | undefined
  /**
   * The claim (its fence) that began submitting the task while it had no upstream job: set by the first claim of a
   * task without one, cleared when a submit surely made no job (`resubmit`). A task without a job claimed again
   * under a newer fence was being submitted by a worker that died: that submit may have made a job its worker never
   * recorded, so it is looked for before the task is submitted again.
   */
  readonly submitFence?: number | null | undefined
  /** What the upstream last reported of the job besides its state: its queue position and log lines. */
  readonly upstreamReport?: UpstreamReport | null | undefined
  /**
   * When the task's visible state last changed (epoch ms, the storage clock): set by every write that changes what a
   * read shows (accept, start, a step's status, progress or report, the end, a refund). The account's event stream
   * reads changes in this order. Null for a task stored before the column existed and not changed since.
   */
  readonly changedAt?: number | null | undefined
}

/**
 * What an upstream reported of a job besides its state (the task read shows it: `queue_position`, `logs`).
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamReport {
  /** The job's place in the upstream's queue while it waits there (1: next). */
  readonly position?: number | undefined
  /** The job's latest log lines (at most {@link reportLogLines}), oldest first. */
  readonly logs?: ReadonlyArray<string> | undefined
}

/**
 * How many of a job's log lines a task keeps (the latest), and how long each may be (characters).
 *
 * @since 0.1.0
 * @category constants
 */
export const reportLogLines = 20

/** The longest log line a task keeps (longer ones are cut). */
const reportLineLength = 500

/**
 * The report a worker records of a job's state: its queue position (while queued) and latest log lines, cut to
 * size; undefined when the upstream reported neither.
 *
 * @since 0.1.0
 * @category utils
 */
export const reportOf = (
  state: { readonly position?: number | undefined; readonly logs?: ReadonlyArray<string> | undefined }
): UpstreamReport | undefined => {
  const position = state.position !== undefined && Number.isSafeInteger(state.position) && state.position > 0
    ? state.position
    : undefined
  const logs = state.logs?.slice(-reportLogLines).map((line) => line.slice(0, reportLineLength))
  if (position === undefined && (logs === undefined || logs.length === 0)) return undefined
  return { ...(position === undefined ? {} : { position }), ...(logs === undefined ? {} : { logs }) }
}

/**
 * What an upstream reported a job ran and cost.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamUsage {
  /** Seconds the job ran at the upstream. */
  readonly seconds?: number | undefined
  /** What the job cost at the upstream, micro-USD. */
  readonly costMicros?: number | undefined
}

/**
 * What a new task needs; storage fills the bookkeeping fields.
 *
 * @since 0.1.0
 * @category models
 */
export type NewTask = Pick<
  TaskRecord,
  | "id"
  | "accountId"
  | "keyId"
  | "environment"
  | "endpoint"
  | "provider"
  | "operation"
  | "mediaType"
  | "model"
  | "input"
  | "metadata"
  | "webhookUrl"
  | "originalTaskId"
  | "chargedMicros"
  | "estimatedSeconds"
  | "deadlineAt"
  | "createdAt"
  | "traceContext"
  | "nodeId"
>

/**
 * Builds the stored form of a new task in `pending`, due at once (at `createdAt`, which storage may give as it
 * stores times). Every field written out, not spread: it runs on every accept.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromNew = (task: NewTask, createdAt = task.createdAt, deadlineAt = task.deadlineAt): TaskRecord => ({
  id: task.id,
  accountId: task.accountId,
  keyId: task.keyId,
  environment: task.environment,
  endpoint: task.endpoint,
  provider: task.provider,
  operation: task.operation,
  mediaType: task.mediaType,
  model: task.model,
  status: "pending",
  input: task.input,
  metadata: task.metadata,
  webhookUrl: task.webhookUrl,
  originalTaskId: task.originalTaskId,
  chargedMicros: task.chargedMicros,
  refundedMicros: 0,
  estimatedSeconds: task.estimatedSeconds,
  progress: 0,
  result: null,
  error: null,
  upstreamJobId: null,
  channelId: null,
  fence: 0,
  leaseOwner: null,
  leaseExpiresAt: null,
  nextRunAt: createdAt,
  deadlineAt,
  polls: 0,
  createdAt,
  startedAt: null,
  completedAt: null,
  changedAt: createdAt,
  traceContext: task.traceContext ?? null,
  nodeId: task.nodeId ?? null
})

/**
 * States a worker moves a task through.
 *
 * @since 0.1.0
 * @category constants
 */
export const activeStatuses: ReadonlyArray<Task.TaskStatus> = ["pending", "queued", "running"]

/**
 * Whether a status is terminal.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTerminal = (status: Task.TaskStatus): boolean => Task.terminalStatuses.includes(status)

/**
 * Allowed transitions of the state machine.
 *
 * @since 0.1.0
 * @category constants
 */
export const transitions: Readonly<Record<Task.TaskStatus, ReadonlyArray<Task.TaskStatus>>> = {
  pending: ["queued", "cancelled", "expired", "failed"],
  queued: ["queued", "running", "succeeded", "failed", "cancelled", "expired"],
  running: ["running", "succeeded", "failed", "expired"],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: []
}

/**
 * Whether the state machine allows `from` → `to`.
 *
 * @since 0.1.0
 * @category utils
 */
export const canMove = (from: Task.TaskStatus, to: Task.TaskStatus): boolean => transitions[from].includes(to)

/**
 * A task's columns of what its upstream reported (absent: left as they are).
 *
 * @since 0.1.0
 * @category utils
 */
export const usageColumns = (
  usage: UpstreamUsage | undefined
): Pick<TaskRecord, "upstreamSeconds" | "upstreamCostMicros"> => ({
  ...(usage?.seconds === undefined ? {} : { upstreamSeconds: usage.seconds }),
  ...(usage?.costMicros === undefined ? {} : { upstreamCostMicros: Math.round(usage.costMicros) })
})

/**
 * How a worker step ends a task.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome =
  | { readonly _tag: "Succeeded"; readonly result: ReadonlyArray<Task.ResultItem>; readonly usage?: UpstreamUsage }
  | { readonly _tag: "Failed"; readonly error: Task.TaskError; readonly usage?: UpstreamUsage }
  | { readonly _tag: "Expired" }

/**
 * The terminal status of an outcome.
 *
 * @since 0.1.0
 * @category utils
 */
export const statusOfOutcome = (outcome: Outcome): Task.TaskStatus =>
  outcome._tag === "Succeeded" ? "succeeded" : outcome._tag === "Failed" ? "failed" : "expired"

/**
 * Whether a terminal status is refunded in full (decisions.md §3).
 *
 * @since 0.1.0
 * @category guards
 */
export const isRefunded = (status: Task.TaskStatus): boolean =>
  status === "failed" || status === "expired" || status === "cancelled"

/**
 * The refund a task is owed when it becomes `status`: everything charged and not yet refunded, for failed,
 * expired and cancelled tasks; none otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const refundFor = (task: TaskRecord, status: Task.TaskStatus): Refund | undefined => {
  const owed = isRefunded(status) ? task.chargedMicros - task.refundedMicros : 0
  return owed > 0
    ? { accountId: task.accountId, keyId: task.keyId, taskId: task.id, amountMicros: owed, reason: `task ${status}` }
    : undefined
}

const iso = (ms: number) => new Date(ms).toISOString()
const isoOrNull = (ms: number | null) => ms === null ? null : iso(ms)

/**
 * Net charge in USD.
 *
 * @since 0.1.0
 * @category utils
 */
export const costOf = (task: TaskRecord): number => Money.fromMicros(task.chargedMicros - task.refundedMicros)

/** What every read of a task starts with. */
const head = (task: TaskRecord) => ({
  id: task.id,
  type: task.mediaType,
  operation: task.operation,
  status: task.status,
  provider: task.provider,
  model: task.model
})

/** The result (of a succeeded task) and the error a read carries. */
const result = (task: TaskRecord) => task.status === "succeeded" && task.result !== null ? { result: task.result } : {}
const error = (task: TaskRecord) => task.error !== null ? { error: task.error } : {}

/**
 * The full task read of the API.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toTask = (task: TaskRecord): Task.Task => ({
  ...head(task),
  ...result(task),
  ...error(task),
  progress: task.progress,
  cost: costOf(task),
  input: task.input,
  metadata: task.metadata,
  webhookUrl: task.webhookUrl,
  original_task_id: task.originalTaskId,
  estimated_seconds: task.estimatedSeconds,
  created_at: iso(task.createdAt),
  started_at: isoOrNull(task.startedAt),
  completed_at: isoOrNull(task.completedAt),
  ...(task.upstreamReport?.logs === undefined || task.upstreamReport.logs.length === 0
    ? {}
    : { logs: task.upstreamReport.logs })
})

/**
 * An item of the API's task list.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toSummary = (task: TaskRecord): Task.TaskSummary => ({
  ...head(task),
  progress: task.progress,
  cost: costOf(task),
  ...error(task),
  original_task_id: task.originalTaskId,
  created_at: iso(task.createdAt),
  started_at: isoOrNull(task.startedAt),
  completed_at: isoOrNull(task.completedAt),
  metadata: task.metadata,
  ...promptExcerpt(task)
})

/** The longest prompt excerpt of a list item (characters). */
const excerptLength = 200

/** The start of a task's prompt, for its list item; nothing without a text prompt. */
const promptExcerpt = (task: TaskRecord): { readonly prompt?: string } => {
  const prompt = task.input["prompt"]
  if (typeof prompt !== "string" || prompt === "") return {}
  return { prompt: prompt.length <= excerptLength ? prompt : `${prompt.slice(0, excerptLength - 1)}…` }
}

/**
 * The result item a finished image task's list item shows (its first image), if any.
 *
 * @since 0.1.0
 * @category encoding
 */
export const thumbnailOf = (task: TaskRecord): Task.ResultItem | undefined =>
  task.status === "succeeded" && task.mediaType === "image"
    ? task.result?.find((item) => item.kind !== "last_frame")
    : undefined

/** What both acknowledgements end with. */
const ackTail = (task: TaskRecord) => ({
  provider: task.provider,
  model: task.model,
  created_at: iso(task.createdAt),
  estimated_seconds: task.estimatedSeconds
})

/**
 * The creation acknowledgement of the API.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toCreationAck = (task: TaskRecord): Task.CreationAck => ({
  id: task.id,
  status: "pending",
  type: task.operation,
  ...ackTail(task)
})

/**
 * The retry acknowledgement of the API.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toRetryAck = (task: TaskRecord): Task.RetryAck => ({
  id: task.id,
  original_task_id: task.originalTaskId ?? "",
  status: "pending",
  type: task.mediaType,
  operation: task.operation,
  ...ackTail(task)
})

const eventTypes: Partial<Record<Task.TaskStatus, Webhook.EventType>> = {
  succeeded: "task.completed",
  failed: "task.failed",
  expired: "task.expired",
  cancelled: "task.cancelled"
}

/**
 * The terminal event of a task (decisions.md §6), written to the outbox with the terminal state.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toEvent = (task: TaskRecord, id: string, now: number): Webhook.WebhookEvent => ({
  id,
  type: eventTypes[task.status] ?? "task.failed",
  created_at: new Date(now).toISOString(),
  data: {
    task: {
      id: task.id,
      type: task.mediaType,
      status: task.status,
      provider: task.provider,
      model: task.model,
      created_at: iso(task.createdAt),
      completed_at: isoOrNull(task.completedAt),
      ...result(task),
      ...error(task),
      ...(Object.keys(task.metadata).length > 0 ? { metadata: task.metadata } : {})
    }
  }
})

/**
 * An event as a write may store it before it knows its time: `created_at` (and its task's `completed_at`) `null`,
 * filled in from the stored row's time when read ({@link timedEvent}). A write that makes the task terminal in the
 * same statement as its event takes "now" from the database clock there, after the event was built.
 *
 * @since 0.1.0
 * @category models
 */
export type UntimedEvent = Omit<Webhook.WebhookEvent, "created_at"> & { readonly created_at: string | null }

/**
 * The terminal event of a task that ends at a time not known yet (see {@link UntimedEvent}).
 *
 * @since 0.1.0
 * @category encoding
 */
export const toUntimedEvent = (task: TaskRecord, id: string): UntimedEvent => ({
  ...toEvent({ ...task, completedAt: null }, id, 0),
  created_at: null
})

/**
 * The event with its time: an untimed event's `created_at` and task `completed_at` become `at` (the keys keep their
 * places); an event that has its time is answered as it is.
 *
 * @since 0.1.0
 * @category utils
 */
export const timedEvent = (event: UntimedEvent, at: number): Webhook.WebhookEvent => {
  if (isTimed(event)) return event
  const time = iso(at)
  const task = event.data.task
  return { ...event, created_at: time, data: { task: { ...task, completed_at: task.completed_at ?? time } } }
}

/** Whether an event has its time (see {@link UntimedEvent}). */
const isTimed = (event: UntimedEvent): event is Webhook.WebhookEvent => event.created_at !== null
