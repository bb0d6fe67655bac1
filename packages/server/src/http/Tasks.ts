/**
 * Handlers of `/api/v1/tasks`: list, read and the event stream need `tasks:read`; retry and cancel need
 * `tasks:write`, and retry also the create permission of the task's media type and provider (it creates a charged
 * task).
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Api, Errors, Services, Task, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"
import { type EventStreamSlot, RateLimiter } from "../RateLimit.js"
import { defaultEventStreams, type EventStreamSettings, ServerConfig } from "../ServerConfig.js"

const notFound = (id: string) => new Errors.TaskNotFound({ message: `task ${id} not found` })
const reader = Authorization.require("tasks:read")
const writer = Authorization.require("tasks:write")
const spans = { list: Tracing.span("Tasks.list"), get: Tracing.span("Tasks.get") }
// a polled task's view is made once per stored state (TaskService): so is its answer
const answerOf = Envelope.encodedOnce(Api.TaskResponse)

const encodeTask = Schema.encodeSync(Task.Task)

/** One event of a task's stream: its state as `data`, its version as `id`; after a terminal state, `end`. */
const eventOf = (state: Services.TaskVersion) =>
  taskEvent(state.version, state.task) + (state.terminal ? "event: end\ndata: {}\n\n" : "")

/** An `event: task` with `task` as `data` (as `GET /tasks/{id}` answers it) and `id`. */
const taskEvent = (id: string, task: Task.Task) =>
  `id: ${id}\nevent: task\ndata: ${JSON.stringify(encodeTask(task))}\n\n`

/** One event of an account's stream: the changed task as `data`, the change's place as `id`. */
const changeEventOf = (change: Services.TaskChange) => taskEvent(change.id, change.task)

/**
 * A task's event stream (`GET /tasks/{id}/events`): the current state unless `after` names it, then each change
 * until a terminal one.
 */
const taskEvents = (watch: Services.TaskWatch, after: string | undefined, timing: EventStreamSettings) =>
  Stream.map(
    Stream.concat(
      after === watch.current.version ? Stream.empty : Stream.make(watch.current),
      watch.changes(watch.current, timing.pollMs)
    ),
    eventOf
  )

/**
 * An event stream's answer: the reconnection delay, the events, a comment line every `heartbeatMs` meanwhile. The
 * slot is held while the stream is written.
 */
const eventStream = <E>(stream: Stream.Stream<string, E>, slot: EventStreamSlot, timing: EventStreamSettings) => {
  const events = Stream.concat(Stream.make("retry: 2000\n\n"), stream)
  const keepAlive = Stream.repeatValue(": keep-alive\n\n").pipe(Stream.schedule(Schedule.spaced(timing.heartbeatMs)))
  const body = Stream.merge(events, keepAlive, { haltStrategy: "left" }).pipe(
    Stream.catchAll(() => Stream.empty),
    Stream.encodeText,
    Stream.onStart(Effect.sync(slot.start)),
    Stream.ensuring(Effect.sync(slot.release))
  )
  return HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
}

/**
 * The tasks group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "tasks", (handlers) =>
  Effect.gen(function*() {
    const tasks = yield* Services.TaskService
    const limiter = yield* RateLimiter
    const timing = (yield* ServerConfig).eventStreams ?? defaultEventStreams
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(reader, (principal) => tasks.list(principal, urlParams)).pipe(spans.list))
      .handle("get", ({ path }) =>
        Effect.flatMap(reader, (principal) =>
          Effect.map(tasks.get(principal, path.id), answerOf)).pipe(spans.get))
      .handle("events", ({ headers, path }) =>
        Effect.gen(function*() {
          const principal = yield* reader
          const watch = yield* tasks.watch(principal, path.id)
          const after = headers["last-event-id"]
          // the client has the final state already: 204 tells an EventSource to stop reconnecting
          if (after === watch.current.version && watch.current.terminal) {
            return HttpServerResponse.empty({ status: 204 })
          }
          const slot = yield* limiter.eventStream(principal)
          return eventStream(taskEvents(watch, after, timing), slot, timing)
        }).pipe(Tracing.span("Tasks.events")))
      .handle("accountEvents", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* reader
          const slot = yield* limiter.eventStream(principal)
          const changes = tasks.changes(principal, urlParams, { after: headers["last-event-id"], every: timing.pollMs })
          return eventStream(Stream.map(changes, changeEventOf), slot, timing)
        }).pipe(Tracing.span("Tasks.accountEvents")))
      .handle("retry", ({ headers, path }) =>
        Effect.gen(function*() {
          const principal = yield* writer
          const task = yield* tasks.providerOf(principal, path.id)
          if (Option.isNone(task)) {
            return yield* notFound(path.id)
          }
          yield* Authorization.require(Authorization.createPermission(task.value.type), task.value.provider)
          yield* limiter.tasks(principal)
          return yield* tasks.retry(principal, path.id, headers["idempotency-key"])
        }).pipe(Tracing.span("Tasks.retry")))
      .handle("cancel", ({ path }) =>
        Effect.flatMap(writer, (principal) =>
          tasks.cancel(principal, path.id)).pipe(Tracing.span("Tasks.cancel")))
  }))
