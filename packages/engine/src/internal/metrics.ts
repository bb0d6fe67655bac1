/**
 * What the engine records in the metrics of `@mediagate/contract/Metrics`, after each write committed: tasks
 * created and finished, money charged and refunded, the wait from acceptance to the first claim, upstream calls.
 * Each is a synchronous update of a pre-labelled metric (a map lookup and an addition).
 *
 * @internal
 */
import { Metrics } from "@mediagate/contract"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { performance } from "node:perf_hooks"
import type { TaskRecord } from "../TaskRecord.js"

/** A task accepted (and its price charged). */
export const created = (task: TaskRecord): void => {
  Metrics.tasksCreated.record(1, task.provider, task.model)
  if (task.chargedMicros > 0) Metrics.ledgerCharged.record(task.chargedMicros, task.provider)
}

/** A task that reached its final state (and what it was refunded). */
export const finished = (task: TaskRecord): void => {
  Metrics.tasksFinished.record(1, task.provider, task.model, task.status)
  if (task.refundedMicros > 0) Metrics.ledgerRefunded.record(task.refundedMicros, task.provider)
}

/** Extra charges of a step (measured usage), once written. */
export const charged = (task: TaskRecord, amountMicros: number): void => {
  if (amountMicros > 0) Metrics.ledgerCharged.record(amountMicros, task.provider)
}

/** A claimed task: its first claim records the wait since its acceptance. */
export const claimed = (task: TaskRecord, now: number): void => {
  if (task.fence === 1) Metrics.taskClaimDelay.record(Math.max(0, now - task.createdAt) / 1000, task.provider)
}

/** An upstream call of a task that took `ms`; `failure`: whether it failed, and if so whether it is retried. */
export const upstreamCall = (
  task: TaskRecord,
  call: "submit" | "poll",
  ms: number,
  failure: "retryable" | "fatal" | undefined
): void => {
  Metrics.upstreamDuration.record(ms / 1000, task.provider, call)
  if (failure !== undefined) {
    Metrics.upstreamErrors.record(1, task.provider, call, failure === "retryable" ? "true" : "false")
  }
}

/**
 * `call` timed as an upstream call of `task` (wall-clock `performance.now()`: a duration, which Effect's test clock
 * would make 0), failures counted by whether they are retried.
 */
export const timed = <A, E extends { readonly retryable: boolean }, R>(
  task: TaskRecord,
  call: "submit" | "poll",
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.onExit(effect, (exit) =>
      Effect.sync(() => {
        const failure = Exit.isSuccess(exit)
          ? undefined
          : Option.match(Cause.failureOption(exit.cause), {
            onNone: () => "fatal" as const,
            onSome: (error) => error.retryable ? "retryable" as const : "fatal" as const
          })
        upstreamCall(task, call, performance.now() - started, failure)
      }))
  })
