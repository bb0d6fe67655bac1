/**
 * Task reads, list, retry and cancel (`/api/v1/tasks`).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { page, success } from "../Envelope.js"
import {
  IdempotencyKeyReused,
  InsufficientBalance,
  RateLimited,
  SpendLimitExceeded,
  TaskNotCancellable,
  TaskNotFound,
  TaskNotRetryable,
  ValidationError
} from "../Errors.js"
import { RetryAck, Task, TaskEventsQuery, TaskListQuery, TaskSummary } from "../Task.js"
import { authenticated, IdempotencyHeaders, PathId } from "./Common.js"

/**
 * The answer of `GET /api/v1/tasks/{id}` (its success Schema, for a handler that encodes its answer itself).
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskResponse = success(Task, "TaskResponse")

/**
 * The body of `GET /api/v1/tasks/{id}/events`: server-sent events (`text/event-stream`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskEventStream = HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
  identifier: "TaskEventStream",
  description: "Server-sent events: `event: task` with the task as `data` (the `data` of `GET /tasks/{id}`) and " +
    "its version as `id`, for the current state and each change; comment lines (`: keep-alive`) while nothing " +
    "changes; `event: end` after a terminal state, then the stream closes."
})

/**
 * The body of `GET /api/v1/tasks/events`: server-sent events (`text/event-stream`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const AccountEventStream = HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
  identifier: "AccountEventStream",
  description: "Server-sent events: `event: task` with a changed task as `data` (the `data` of `GET /tasks/{id}`) " +
    "and the change's place as `id` (its time in epoch ms, `.`, the task id), oldest change first; comment lines " +
    "(`: keep-alive`) while nothing changes. The stream does not end by itself."
})

/**
 * The last event id of an event stream (`Last-Event-ID`).
 *
 * @since 0.1.0
 * @category schemas
 */
const LastEventId = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String.annotations({
    description: "The `id` of the last event received: the stream resumes after it"
  }))
})

/**
 * The task endpoints.
 *
 * @since 0.1.0
 * @category api
 */
export class TasksApi extends HttpApiGroup.make("tasks")
  .add(
    HttpApiEndpoint.get("list", "/tasks")
      .setUrlParams(TaskListQuery)
      .addSuccess(page(TaskSummary, "TaskListResponse"))
      .addError(ValidationError.wire)
      .annotate(
        OpenApi.Summary,
        "List the tasks of the calling key's environment, newest first, with filters and a keyset cursor"
      )
  )
  .add(
    HttpApiEndpoint.get("accountEvents", "/tasks/events")
      .setUrlParams(TaskEventsQuery)
      .setHeaders(LastEventId)
      .addSuccess(AccountEventStream)
      .addError(Schema.Union(ValidationError.wire, RateLimited.wire))
      .annotate(
        OpenApi.Summary,
        "Stream every change of the calling key's environment's tasks as server-sent events, filtered like the list " +
          "(extension; resumes with Last-Event-ID)"
      )
      .annotate(
        OpenApi.Description,
        "Needs `tasks:read`. Each change of a task of the calling key's account and environment that passes the " +
          "filters (the list's, without its page) is sent as the task as it is after the change, oldest change " +
          "first: new tasks, starts, progress, upstream reports, ends. Changes are read from the database (any " +
          "node serves any stream); a task that changed twice between two reads is sent once, as it is now. " +
          "Without `Last-Event-ID` the stream starts with the changes from now on; with it, after the change it " +
          "names (changes of the few seconds before it may come again). Comment lines keep idle streams open " +
          "through proxies. Open streams are bounded per key and per node, as task streams: beyond them `429 " +
          "RATE_LIMITED` with `Retry-After`."
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/tasks/:id")
      .setPath(PathId)
      .addSuccess(TaskResponse)
      .addError(TaskNotFound.wire)
      .annotate(
        OpenApi.Summary,
        "Read a task of the calling key's environment (another environment's task: 404 as an unknown id)"
      )
  )
  .add(
    HttpApiEndpoint.get("events", "/tasks/:id/events")
      .setPath(PathId)
      .setHeaders(LastEventId)
      .addSuccess(TaskEventStream)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(Schema.Union(TaskNotFound.wire, RateLimited.wire))
      .annotate(
        OpenApi.Summary,
        "Stream a task's changes as server-sent events until it ends (extension; resumes with Last-Event-ID)"
      )
      .annotate(
        OpenApi.Description,
        "The same permission (`tasks:read`) and environment rules as `GET /tasks/{id}`. The first event is the " +
          "task as it is now, unless `Last-Event-ID` names that state already; each change follows, read from " +
          "the database (any node serves any task's stream). A terminal state is followed by `event: end` and " +
          "the end of the stream; a reconnect with `Last-Event-ID` naming that final state answers `204` (an " +
          "`EventSource` stops reconnecting). Comment lines keep idle streams open through proxies. Open streams " +
          "are bounded per key and per node: beyond them `429 RATE_LIMITED` with `Retry-After`."
      )
  )
  .add(
    HttpApiEndpoint.post("retry", "/tasks/:id/retry")
      .setPath(PathId)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(success(RetryAck, "RetryResponse"), { status: 201 })
      .addError(Schema.Union(
        TaskNotFound.wire,
        TaskNotRetryable.wire,
        InsufficientBalance.wire,
        SpendLimitExceeded.wire,
        IdempotencyKeyReused.wire,
        RateLimited.wire
      ))
      .annotate(OpenApi.Summary, "Retry a failed or expired task as a new task (charged again)")
  )
  .add(
    HttpApiEndpoint.post("cancel", "/tasks/:id/cancel")
      .setPath(PathId)
      .addSuccess(success(Task, "CancelResponse"))
      .addError(Schema.Union(TaskNotFound.wire, TaskNotCancellable.wire))
      .annotate(OpenApi.Summary, "Cancel a pending or queued task (extension; refunded)")
  )
  .pipe(authenticated)
  .annotate(OpenApi.Title, "Tasks")
  .annotate(OpenApi.Description, "The tasks of the calling key's environment: read, list, retry, cancel")
{}
