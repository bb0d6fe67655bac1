/**
 * Tasks: states, the full task read, list summaries, result items, acknowledgements and the list query.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { mediaTypes, modelIds, operations, taskFamilies } from "./Catalog.js"
import { Metadata, oneOf, optional, pageCursor, pageLimit, text } from "./Fields.js"
import { IsoDate, Timestamp } from "./Timestamp.js"

/**
 * Task states (spec "States and transitions"; decisions.md §3).
 *
 * @since 0.1.0
 * @category constants
 */
export const taskStatuses = ["pending", "queued", "running", "succeeded", "failed", "cancelled", "expired"] as const
/**
 * A task state.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TaskStatus = typeof taskStatuses[number]
/**
 * A task state.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskStatus = Schema.Literal(...taskStatuses).annotations({ identifier: "TaskStatus" })

/**
 * States from which a task moves no more.
 *
 * @since 0.1.0
 * @category constants
 */
export const terminalStatuses: ReadonlyArray<TaskStatus> = ["succeeded", "failed", "cancelled", "expired"]
/**
 * States a retry accepts.
 *
 * @since 0.1.0
 * @category constants
 */
export const retryableStatuses: ReadonlyArray<TaskStatus> = ["failed", "expired"]
/**
 * States a cancel accepts.
 *
 * @since 0.1.0
 * @category constants
 */
export const cancellableStatuses: ReadonlyArray<TaskStatus> = ["pending", "queued"]

/**
 * The media type of a task.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MediaType = Schema.Literal(...mediaTypes).annotations({ identifier: "MediaType" })
/**
 * An operation name.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Operation = Schema.Literal(...operations).annotations({ identifier: "Operation" })
/**
 * A family that creates tasks: the document lists the registry's; answers are not held to it (test registries).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Provider = Schema.String.annotations({
  identifier: "Provider",
  jsonSchema: { type: "string", enum: taskFamilies }
})

/**
 * One output file of a succeeded task.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResultItem = Schema.Struct({
  url: Schema.String.annotations({ description: "Signed, expiring URL of the file" }),
  duration: optional(Schema.Number.annotations({ description: "Seconds (videos and audio)" })),
  format: Schema.String.annotations({ description: "Container or image format, e.g. mp4, png" }),
  size_bytes: Schema.Number,
  width: optional(Schema.Number.annotations({ description: "Pixels (extension)" })),
  height: optional(Schema.Number.annotations({ description: "Pixels (extension)" })),
  kind: optional(
    Schema.Literal("output", "last_frame").annotations({
      description: "What the file is (extension): the output, or the last frame of a video"
    })
  )
}).annotations({ identifier: "ResultItem" })
/**
 * One output file of a succeeded task.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ResultItem = typeof ResultItem.Type

/**
 * The error of a failed (or expired) task.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskError = Schema.Struct({
  code: Schema.String,
  message: Schema.String
}).annotations({ identifier: "TaskError" })
/**
 * The error of a failed (or expired) task.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TaskError = typeof TaskError.Type

/** What a task is: its media type, operation, state, provider and model. */
const what = { type: MediaType, operation: Operation, status: TaskStatus, provider: Provider, model: Schema.String }

/** When a task was created, started and completed. */
const times = {
  created_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  completed_at: Schema.NullOr(Timestamp)
}

/**
 * Where a task waits (an extension): present while it is `pending` or `queued`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const QueuePosition = Schema.Struct({
  account: Schema.NullOr(Schema.Int).annotations({
    description: "While pending: its place among the account's pending tasks of its environment, oldest first " +
      "(1: the next to start); null once it waits at the upstream"
  }),
  upstream: Schema.NullOr(Schema.Int).annotations({
    description: "While queued: its place in the upstream's queue, when the upstream reports it (1: next); " +
      "null otherwise"
  })
}).annotations({ identifier: "QueuePosition" })
/**
 * Where a task waits.
 *
 * @since 0.1.0
 * @category schemas
 */
export type QueuePosition = typeof QueuePosition.Type

/** The waiting place and the upstream's log lines (extensions; see `QueuePosition`). */
const live = {
  queue_position: optional(QueuePosition),
  logs: optional(
    Schema.Array(Schema.String).annotations({
      description: "The latest log lines of the upstream job (at most 20, oldest first), for upstreams that give them"
    })
  )
}

/**
 * The full task read (`GET /tasks/{id}`), with the extensions of decisions.md §3.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Task = Schema.Struct({
  id: Schema.String.annotations({ description: "`task_` + ULID" }),
  ...what,
  result: optional(Schema.Array(ResultItem)),
  error: optional(TaskError),
  progress: Schema.Number.annotations({ description: "0 to 100" }),
  cost: Schema.Number.annotations({ description: "Net charge in USD" }),
  input: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "The normalized input (defaults filled in)"
  }),
  metadata: Metadata,
  webhookUrl: Schema.NullOr(Schema.String),
  original_task_id: Schema.NullOr(Schema.String),
  estimated_seconds: Schema.Number,
  ...times,
  ...live
}).annotations({ identifier: "Task" })
/**
 * The full task read.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Task = typeof Task.Type

/**
 * An item of the task list.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskSummary = Schema.Struct({
  id: Schema.String,
  ...what,
  progress: Schema.Number,
  cost: Schema.Number,
  error: optional(TaskError),
  original_task_id: Schema.NullOr(Schema.String),
  ...times,
  metadata: Metadata,
  queue_position: live.queue_position,
  prompt: optional(Schema.String.annotations({
    description: "The start of the task's prompt (at most 200 characters; extension), when it has one"
  })),
  thumbnail_url: optional(Schema.String.annotations({
    description: "A finished image task's first image (a signed link, as in the task read; extension)"
  }))
}).annotations({ identifier: "TaskSummary" })
/**
 * An item of the task list.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TaskSummary = typeof TaskSummary.Type

/**
 * `data` of a generation response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreationAck = Schema.Struct({
  id: Schema.String,
  status: TaskStatus,
  type: Operation.annotations({ description: "Operation name, e.g. text-to-video" }),
  provider: Provider,
  model: Schema.String,
  created_at: Timestamp,
  estimated_seconds: Schema.Number
}).annotations({ identifier: "CreationAck" })
/**
 * `data` of a generation response.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreationAck = typeof CreationAck.Type

/**
 * `data` of a generation endpoint's estimate (`POST /api/v1/<family>/<operation>/estimate`, extension): what the
 * request would cost and run as, without making a task.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Estimate = Schema.Struct({
  type: Operation.annotations({ description: "Operation name, e.g. text-to-video" }),
  provider: Provider,
  model: Schema.String,
  price: Schema.Number.annotations({
    description: "What the calling key would be charged in USD (0 for a test key: test tasks are free)"
  }),
  live_price: Schema.Number.annotations({ description: "The request's price in USD for a live key" }),
  estimated_seconds: Schema.Number,
  input: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "The input as the task would run it: the request's fields and the model's defaults for the others"
  })
}).annotations({ identifier: "Estimate" })
/**
 * `data` of a generation endpoint's estimate.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Estimate = typeof Estimate.Type

/**
 * `data` of a retry response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RetryAck = Schema.Struct({
  id: Schema.String,
  original_task_id: Schema.String,
  status: TaskStatus,
  type: MediaType.annotations({ description: "Media type, e.g. video" }),
  operation: Operation,
  provider: Provider,
  model: Schema.String,
  created_at: Timestamp,
  estimated_seconds: Schema.Number
}).annotations({ identifier: "RetryAck" })
/**
 * `data` of a retry response.
 *
 * @since 0.1.0
 * @category schemas
 */
export type RetryAck = typeof RetryAck.Type

/**
 * Query of `GET /api/v1/tasks` (decisions.md §3).
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskListQuery = Schema.Struct({
  status: optional(oneOf(...taskStatuses)),
  provider: optional(oneOf(...taskFamilies)),
  model: optional(oneOf(...modelIds)),
  created_after: optional(IsoDate),
  created_before: optional(IsoDate),
  search: optional(
    text(64, 1).annotations({
      description:
        "A task id prefix (`task_...`); any other text finds the tasks whose prompt has each of its words, as the start " +
        "of a word, in any case (extension)"
    })
  ),
  limit: pageLimit,
  cursor: pageCursor
}).annotations({ identifier: "TaskListQuery" })
/**
 * Query of `GET /api/v1/tasks`, decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TaskListQuery = typeof TaskListQuery.Type

/**
 * Query of `GET /api/v1/tasks/events` (extension): the list's filters, without its page.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskEventsQuery = TaskListQuery.omit("limit", "cursor").annotations({ identifier: "TaskEventsQuery" })
/**
 * Query of `GET /api/v1/tasks/events`, decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TaskEventsQuery = typeof TaskEventsQuery.Type

/**
 * Default page size of lists.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPageSize = 20
