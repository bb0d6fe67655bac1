/**
 * echo: a transport that exists only in the tests, added the way docs/extending.md describes (this folder: its
 * upstream and its `Transport.make`; a router given `[...Transports.registry, echo]`). Its upstream runs in this
 * process: a job is queued on submit, running on its first poll, and on the next its one file, an "MP4" whose bytes
 * are the job's mapped prompt, goes through the result copy like any upstream's. `fail` makes its calls fail as an
 * unavailable upstream does (for the breaker).
 */
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type JobState, Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as ResultCopy from "../../../src/ResultCopy.js"
import * as Transport from "../../../src/Transport.js"

/** What the echo upstream holds: its jobs (job id → polls so far), and whether its calls fail. */
export const state = {
  jobs: new Map<string, number>(),
  calls: [] as Array<{ readonly call: "submit" | "poll" | "cancel"; readonly channel: string; readonly task: string }>,
  fail: false
}

const down = () => new UpstreamError({ message: "echo: 503", retryable: true, kind: "unavailable" })

/** The bytes of a job's file: the prompt of the task's input, through the channel's mapping target. */
const fileOf = (target: string, task: TaskRecord) =>
  Buffer.from(`${target}: ${String((task.input as { prompt?: unknown }).prompt)}`).toString("base64")

/** Builds the echo upstream of a channel. */
export const make = (context: Transport.Context): Transport.Built => ({
  upstream: Upstream.of({
    notifiesChanges: false,
    changes: Stream.empty,
    submit: (task) =>
      Effect.suspend(() => {
        state.calls.push({ call: "submit", channel: context.channel.id, task: task.id })
        if (state.fail) return Effect.fail(down())
        const jobId = `echo-${task.id}`
        state.jobs.set(jobId, 0)
        return Effect.succeed({ jobId })
      }),
    poll: (task, jobId) =>
      Effect.suspend((): Effect.Effect<JobState, UpstreamError> => {
        state.calls.push({ call: "poll", channel: context.channel.id, task: task.id })
        if (state.fail) return Effect.fail(down())
        const polls = state.jobs.get(jobId)
        if (polls === undefined) {
          return Effect.succeed({ _tag: "Failed", code: "PROVIDER_ERROR", message: "echo: no such job" })
        }
        state.jobs.set(jobId, polls + 1)
        if (polls === 0) return Effect.succeed({ _tag: "Running", progress: 50 })
        const url = `data:video/mp4;base64,${fileOf(context.mapping(task.model).target, task)}`
        return Effect.map(
          context.copier.collect(task, jobId, [{ url, format: "mp4", duration: 1 }], context.policy),
          ResultCopy.jobState
        )
      }),
    cancel: (task, jobId) =>
      Effect.sync(() => {
        state.calls.push({ call: "cancel", channel: context.channel.id, task: task.id })
        state.jobs.delete(jobId)
      })
  })
})

/** The echo transport's registry entry. */
export const echo = Transport.make({
  name: "echo",
  summary: "an in-process upstream whose files repeat the prompt",
  baseUrl: "none",
  apiKey: "none",
  mapping: true,
  workflows: false,
  callbacks: false,
  submitRecovery: "in-process",
  build: Transport.fromContext(make)
})
