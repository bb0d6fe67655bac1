/**
 * One step of a claimed task (submit, poll, or finish): what it asks its upstream and what it writes of the answer,
 * with the jobs it submitted recorded even through a storage outage.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { FinishOptions, StepUpdate, TaskLifecycle } from "../../TaskLifecycle.js"
import type { TaskReads } from "../../TaskReads.js"
import { type Outcome, reportOf, type TaskRecord, type UpstreamReport } from "../../TaskRecord.js"
import {
  type FindResult,
  type JobState,
  markedAt,
  submitMarker,
  type Upstream,
  type UpstreamError
} from "../../Upstream.js"
import type { WorkerOptions } from "../../Worker.js"
import * as EngineMetrics from "../metrics.js"
import { stepSpan } from "./spans.js"

/** The delays a step follows. */
export type StepOptions = Required<Pick<WorkerOptions, "pollDelay" | "retryDelay">>

/** The upstream's report of what a job ran and cost, as an outcome's `usage` (nothing when it reports neither). */
const usageOf = (state: { readonly seconds?: number; readonly costMicros?: number }) =>
  state.seconds === undefined && state.costMicros === undefined
    ? {}
    : {
      usage: {
        ...(state.seconds === undefined ? {} : { seconds: state.seconds }),
        ...(state.costMicros === undefined ? {} : { costMicros: state.costMicros })
      }
    }
/** How a write recording a job just submitted is retried while storage is unavailable: 0.2 s doubling to 5 s, 2 min. */
const recordRetry = Schedule.exponential("200 millis").pipe(
  Schedule.either(Schedule.spaced("5 seconds")),
  Schedule.upTo("2 minutes")
)

/**
 * A write that records a job this step submitted (`submitted`): retried while storage is unavailable (a database
 * restart), since a job id not recorded is a job lost, and the task would be submitted again (a second paid job).
 * Other writes fail at once (the step hands its task back).
 */
const kept = <A, E extends { readonly _tag: string }>(submitted: boolean, write: Effect.Effect<A, E>) =>
  submitted
    // the retry's schedule is only set up once the write has failed (nearly every write succeeds at once): the first
    // failure is handed to it as the first attempt's, so the attempts and their delays are those of retrying `write`
    ? Effect.catchIf(write, isUnavailable, (failure) => {
      let first = true
      return Effect.retry(
        Effect.suspend(() => {
          if (!first) return write
          first = false
          return Effect.fail(failure)
        }),
        { schedule: recordRetry, while: isUnavailable }
      )
    })
    : write
/** A storage failure (retried for a job just submitted); other failures are the write's answer. */
const isUnavailable = (error: { readonly _tag: string }) => error._tag === "PersistenceError"
/** What a step writes and reads of the storage. */
export type StepStorage =
  & Pick<TaskLifecycle["Type"], "step" | "finish">
  & Pick<TaskReads["Type"], "getById">

/** {@link runStep} on the given storage and upstream (the worker's: no context to provide per step). */
export const runStepWith = (
  storage: StepStorage,
  upstream: Upstream["Type"],
  task: TaskRecord,
  options: StepOptions
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis

    /** Ends the task (a span of the step). */
    const end = (outcome: Outcome, finishOptions?: FinishOptions) =>
      storage.finish(task.id, task.fence, outcome, { ...finishOptions, task }).pipe(stepSpan("Worker.finish", task))
    /** When to call again after a retryable upstream failure: its `retryAfterMs`, else the retry delay. */
    const retryAt = (error: UpstreamError) =>
      now + (error.retryAfterMs ?? Duration.toMillis(options.retryDelay(task.polls)))
    /** The end of a task after an upstream failure that is not retryable. */
    const refused = (error: UpstreamError): Outcome => ({
      _tag: "Failed",
      error: { code: error.code ?? "PROVIDER_ERROR", message: error.message }
    })

    // a task without a job whose submit an earlier claim began: that claim's worker died, and its submit may have
    // made a job it never recorded (looked for like the job of an uncertain submit, from now)
    const orphaned = task.upstreamJobId === null && task.submitFence != null && task.submitFence < task.fence
    /** When an uncertain submit of the task was made, if the task waits to learn whether it made a job. */
    const uncertainSince = markedAt(task.upstreamJobId) ?? (orphaned ? now : undefined)

    if (now >= task.deadlineAt) {
      if (task.upstreamJobId !== null && uncertainSince === undefined) yield* upstream.cancel(task, task.upstreamJobId)
      return yield* Effect.asVoid(end({ _tag: "Expired" }))
    }

    /**
     * Polls the job and records what it tells; `submitted`: a job this claim submitted and has not recorded yet (on
     * `channelId`).
     */
    const poll = (jobId: string, submitted: boolean, channelId?: string) =>
      Effect.gen(function*() {
        const record = submitted ? { upstreamJobId: jobId, ...(channelId === undefined ? {} : { channelId }) } : {}
        // the task as the job's channel knows it
        const on = channelId === undefined ? task : { ...task, channelId }
        const step = (update: StepUpdate) =>
          kept(submitted, storage.step(task.id, task.fence, { ...record, ...update }))
        const finish = (outcome: Outcome) => Effect.map(kept(submitted, end(outcome, record)), Option.isSome)
        const polled = yield* Effect.either(
          EngineMetrics.timed(task, "poll", upstream.poll(on, jobId)).pipe(stepSpan("Worker.poll", task))
        )
        const next = now + Duration.toMillis(options.pollDelay(task.polls + 1, on))
        if (polled._tag === "Left") {
          const error = polled.left
          if (!error.retryable) return yield* finish(refused(error))
          // the backoff counts the job's good polls too: it waits no longer than the schedule's next poll (at least
          // the backoff's first step), so a job polled often is not left a minute after one failed poll
          const firstBackoff = now + Duration.toMillis(options.retryDelay(0))
          const nextRunAt = error.retryAfterMs === undefined
            ? Math.min(retryAt(error), Math.max(next, firstBackoff))
            : retryAt(error)
          return yield* step({ nextRunAt, polled: true })
        }
        const state: JobState = polled.right
        // the upstream's report (queue position, log lines), written when it changed
        const reported = (report: UpstreamReport | undefined) => {
          const known = task.upstreamReport ?? null
          const next = report ?? null
          return JSON.stringify(known) === JSON.stringify(next) ? {} : { report: next }
        }
        switch (state._tag) {
          case "Queued":
            return yield* step({ nextRunAt: next, polled: true, ...reported(reportOf(state)) })
          case "Running":
            return yield* step({
              status: "running",
              progress: Math.max(0, Math.min(99, state.progress)),
              nextRunAt: next,
              polled: true,
              // the queue is behind it: its log lines only
              ...reported(reportOf({ logs: state.logs }))
            })
          case "Succeeded":
            return yield* finish({ _tag: "Succeeded", result: state.result, ...usageOf(state) })
          case "Failed":
            return yield* finish({
              _tag: "Failed",
              error: { code: state.code, message: state.message },
              ...usageOf(state)
            })
          case "Lost": {
            // the job's channel failed: let the job go, submit the task again at once (on another channel). The job
            // is cancelled and the give-up logged once the task records it: a write lost to a database outage, or a
            // fence lost to another node, leaves the task on its job, polled again, and the job running
            const moved = yield* storage.step(task.id, task.fence, { resubmit: true, nextRunAt: now, polled: true })
            if (moved) {
              yield* Effect.logWarning(
                `task ${task.id}: upstream job ${jobId} given up, submitting again: ${state.message}`
              )
              yield* upstream.cancel(on, jobId)
            }
            return moved
          }
        }
      })

    if (task.upstreamJobId !== null && uncertainSince === undefined) {
      return yield* Effect.asVoid(poll(task.upstreamJobId, false))
    }

    // an earlier submit may have made a job (its answer was lost): look for it before submitting again
    if (uncertainSince !== undefined && upstream.find !== undefined) {
      const found = yield* Effect.either(upstream.find(task, uncertainSince).pipe(stepSpan("Worker.find", task)))
      if (found._tag === "Left") {
        const error = found.left
        return yield* error.retryable
          ? Effect.asVoid(storage.step(task.id, task.fence, { nextRunAt: retryAt(error), polled: true }))
          : Effect.asVoid(end(refused(error)))
      }
      const result: FindResult = found.right
      if (result._tag === "Found") {
        return yield* Effect.asVoid(poll(result.jobId, true, result.channelId ?? task.channelId ?? undefined))
      }
      // the upstream cannot tell: wait for its callback (which wakes the task) or the bounded time, holding no slot
      // (an orphaned submit is recorded as uncertain from now, so the wait is counted once)
      if (result._tag === "Unknown" && now < uncertainSince + result.waitMs) {
        return yield* Effect.asVoid(storage.step(task.id, task.fence, {
          nextRunAt: uncertainSince + result.waitMs,
          polled: true,
          ...(orphaned ? { upstreamJobId: submitMarker(uncertainSince) } : {})
        }))
      }
    }

    const submitted = yield* Effect.either(
      EngineMetrics.timed(task, "submit", upstream.submit(task)).pipe(stepSpan("Worker.submit", task))
    )
    if (submitted._tag === "Left") {
      const error = submitted.left
      // the submit may have made a job: recorded as such on its channel, looked for before submitting again
      if (error.retryable && error.uncertain === true) {
        return yield* Effect.asVoid(storage.step(task.id, task.fence, {
          upstreamJobId: submitMarker(now),
          ...(error.channelId === undefined ? {} : { channelId: error.channelId }),
          nextRunAt: retryAt(error),
          polled: true
        }))
      }
      // a retryable failure on every channel: try again later, the channel reservation let go
      return yield* error.retryable
        ? Effect.asVoid(storage.step(task.id, task.fence, { nextRunAt: retryAt(error), polled: true, resubmit: true }))
        : Effect.asVoid(end(refused(error)))
    }
    const jobId = submitted.right.jobId
    const channelId = submitted.right.channelId
    /** The task as its job's channel knows it (cancels of the job go there). */
    const submittedTask = channelId === undefined ? task : { ...task, channelId }
    const charges = submitted.right.charges ?? []
    const firstPoll = Duration.toMillis(options.pollDelay(0, submittedTask))
    // the first poll is due at once and nothing is to be charged: poll now, record the job with its answer
    const recorded = firstPoll <= 0 && charges.length === 0
      ? yield* poll(jobId, true, channelId)
      : yield* Effect.either(kept(
        true,
        storage.step(task.id, task.fence, {
          upstreamJobId: jobId,
          ...(channelId === undefined ? {} : { channelId }),
          nextRunAt: now + firstPoll,
          ...(charges.length === 0 ? {} : { charges })
        })
      )).pipe(
        Effect.flatMap((written) => {
          if (written._tag === "Right") {
            if (written.right) { for (const charge of charges) EngineMetrics.charged(task, charge.amountMicros) }
            return Effect.succeed(written.right)
          }
          const error = written.left
          if (error._tag === "PersistenceError") return Effect.fail(error)
          // the account cannot pay what the task turned out to cost: the job is not wanted, the task fails (refunded)
          return Effect.zipRight(
            upstream.cancel(submittedTask, jobId),
            Effect.as(end({ _tag: "Failed", error: { code: error.code, message: error.message } }), true)
          )
        })
      )
    // cancelled (or taken over) while submitting: the job is nobody's now — unless a write retried after storage
    // failed had committed the first time (the job is recorded)
    if (!recorded) {
      const stored = yield* Effect.orElseSucceed(storage.getById(task.id), () => Option.none<TaskRecord>())
      if (Option.isNone(stored) || stored.value.upstreamJobId !== jobId) yield* upstream.cancel(submittedTask, jobId)
    }
  })
