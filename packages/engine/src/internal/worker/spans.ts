/**
 * The spans of a worker's steps: each part of a step (submit, poll, find, finish) and the claim of each task, as
 * parts of the task's trace (the creating request's, when it was kept). Built only while the tracer is on.
 */
import { Tracing } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { TaskRecord } from "../../TaskRecord.js"

/** The attributes of a task's step spans: task id, family, model and attempt (the claim's fence). */
export const stepAttributes = (task: TaskRecord): Record<string, unknown> => ({
  "mediagate.task_id": task.id,
  "mediagate.family": task.provider,
  "mediagate.model": task.model,
  "mediagate.attempt": task.fence
})

/** A span of one part of a task's step (submit, poll, finish): built only while the tracer is on. */
export const stepSpan = (name: string, task: TaskRecord) =>
  Tracing.spanWith(name, () => ({ attributes: stepAttributes(task) }))

/**
 * The claim of a task as a span of the task's trace (the creating request's, when it was kept): a claim serves
 * many tasks at once, so each task gets a span of the claim's start and end. Nothing while the tracer is off.
 */
export const claimSpan = (task: TaskRecord, started: bigint, ended: bigint) =>
  Effect.flatMap(Tracing.enabled, (on) =>
    on
      ? Effect.tracerWith((tracer) =>
        Effect.sync(() => {
          const span = tracer.span(
            "Worker.claim",
            Option.fromNullable(Tracing.parentOf(task.traceContext)),
            Context.empty(),
            [],
            started,
            "internal"
          )
          for (const [key, value] of Object.entries(stepAttributes(task))) span.attribute(key, value)
          span.end(ended, Exit.void)
        })
      )
      : Effect.void)
