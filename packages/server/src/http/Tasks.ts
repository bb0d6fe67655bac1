/**
 * Handlers of `/api/v1/tasks`: list and read need `tasks:read`; retry and cancel need `tasks:write`, and retry
 * also the create permission of the task's media type and provider (it creates a charged task).
 *
 * @since 0.1.0
 */
import { Api, Errors, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"
import { RateLimiter } from "../RateLimit.js"

const notFound = (id: string) => new Errors.TaskNotFound({ message: `task ${id} not found` })
const reader = Authorization.require("tasks:read")
const writer = Authorization.require("tasks:write")
const spans = { list: Tracing.span("Tasks.list"), get: Tracing.span("Tasks.get") }
// a polled task's view is made once per stored state (TaskService): so is its answer
const answerOf = Envelope.encodedOnce(Api.TaskResponse)

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
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(reader, (principal) => tasks.list(principal, urlParams)).pipe(spans.list))
      .handle("get", ({ path }) =>
        Effect.flatMap(reader, (principal) =>
          Effect.map(tasks.get(principal, path.id), answerOf)).pipe(spans.get))
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
