/**
 * An upstream for engine tests: jobs take `durationMs` of real time; prompt directives steer them —
 * `[fail]` fails the job, `[hang]` never finishes, `[flaky]` makes the first submit fail with a retryable error,
 * `[reject]` makes every submit fail for good, `[slow=N]` makes a submit itself take N ms, `[early]` reports the
 * job's change during the submit (then takes 100 ms more to answer), `[lost]` puts the first submit on channel
 * `ch_first`, whose polls answer `Lost`, and later ones on `ch_second`. It counts submits per task and reports
 * finished jobs on `changes`.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { TaskRecord } from "../src/TaskRecord.js"
import { Upstream, UpstreamError } from "../src/Upstream.js"

/** What the fake upstream saw. */
export interface UpstreamLog {
  readonly submits: Map<string, number>
  readonly cancels: Array<string>
  readonly polls: Map<string, number>
}

const promptOf = (task: TaskRecord) => String(task.input["prompt"] ?? "")

/** Builds the fake upstream and its log. */
export const makeFakeUpstream = (options: { readonly durationMs: number; readonly callbacks?: boolean }) => {
  const log: UpstreamLog = { submits: new Map(), cancels: [], polls: new Map() }
  const started = new Map<string, number>()
  const layer = Layer.scoped(
    Upstream,
    Effect.gen(function*() {
      const changes = yield* PubSub.unbounded<string>()
      return {
        submit: (task) =>
          Effect.gen(function*() {
            const count = (log.submits.get(task.id) ?? 0) + 1
            log.submits.set(task.id, count)
            const prompt = promptOf(task)
            if (prompt.includes("[reject]")) {
              return yield* new UpstreamError({ message: "upstream refused the request", retryable: false })
            }
            const slow = /\[slow=(\d+)\]/.exec(prompt)
            if (slow !== null) yield* Effect.sleep(Number(slow[1]))
            if (prompt.includes("[flaky]") && count === 1) {
              return yield* new UpstreamError({ message: "upstream timed out", retryable: true })
            }
            started.set(task.id, Date.now())
            if (prompt.includes("[lost]")) {
              return { jobId: `job_${task.id}_${count}`, channelId: count === 1 ? "ch_first" : "ch_second" }
            }
            if (prompt.includes("[early]")) {
              // the callback outruns the submit's answer: it is handled before the worker records the job
              yield* PubSub.publish(changes, task.id)
              yield* Effect.sleep(100)
              return { jobId: `job_${task.id}` }
            }
            if (options.callbacks === true && !prompt.includes("[hang]")) {
              yield* Effect.forkDaemon(
                Effect.zipRight(Effect.sleep(options.durationMs), PubSub.publish(changes, task.id))
              )
            }
            return { jobId: `job_${task.id}` }
          }),
        poll: (task) =>
          Effect.sync(() => {
            log.polls.set(task.id, (log.polls.get(task.id) ?? 0) + 1)
            const prompt = promptOf(task)
            if (prompt.includes("[lost]") && task.channelId === "ch_first") {
              return { _tag: "Lost" as const, message: "channel ch_first failed" }
            }
            const elapsed = Date.now() - (started.get(task.id) ?? task.createdAt)
            if (prompt.includes("[hang]") || elapsed < options.durationMs) {
              return {
                _tag: "Running" as const,
                progress: Math.min(99, Math.round((100 * elapsed) / options.durationMs))
              }
            }
            if (prompt.includes("[fail]")) {
              return { _tag: "Failed" as const, code: "PROVIDER_ERROR", message: "the upstream failed the job" }
            }
            return {
              _tag: "Succeeded" as const,
              result: [{
                url: `https://files.example.com/${task.id}.mp4`,
                duration: 5,
                format: "mp4",
                size_bytes: 1234
              }]
            }
          }),
        cancel: (task) => Effect.sync(() => void log.cancels.push(task.id)),
        changes: Stream.fromPubSub(changes),
        notifiesChanges: options.callbacks === true
      }
    })
  )
  return { layer, log }
}
