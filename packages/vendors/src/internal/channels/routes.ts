/**
 * The routed submit, poll and lookup of a task's job: the channels tried in the task's order with failover, a job
 * followed on its channel (or given up for another when its channel fails), and the job of an uncertain submit
 * looked for where its transport can tell.
 */
import { Metrics } from "@mediagate/contract"
import { ChannelSlots } from "@mediagate/engine/ChannelSlots"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type FindResult, type JobState, UpstreamError } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ResultCopy from "../../ResultCopy.js"
import * as Upstreams from "../../Upstreams.js"
import { type Calls, failureKind, unavailable } from "./calls.js"
import type { Live } from "./live.js"
import { defaultIds, priced } from "./routing.js"
import type { State } from "./state.js"

/** Makes the routed operations on the shared state. */
export const make = (state: State, called: Calls["called"]) =>
  Effect.gen(function*() {
    const slots = yield* ChannelSlots
    const { breakers, candidates, copier, defaultLive, find, options, reportTransitions } = state
    const slotWaitMs = Duration.toMillis(options.slotWait ?? "1 second")
    const submitWaitMs = Duration.toMillis(options.submitWait ?? "5 minutes")

    const submitRouted = (task: TaskRecord) =>
      Effect.gen(function*() {
        const route = candidates(task)
        if (route.length === 0) {
          return yield* new UpstreamError({
            message: `no enabled upstream channel serves model ${task.model}`,
            retryable: false
          })
        }
        let full = false
        let openUntil = Infinity
        let last: UpstreamError | undefined
        for (const live of route) {
          const id = live.config.id
          const now = yield* Clock.currentTimeMillis
          if (!breakers.available(id, now)) {
            openUntil = Math.min(openUntil, breakers.retryAt(id, now))
            continue
          }
          if (live.config.concurrency > 0) {
            const reserved = yield* slots.reserveChannel(task.id, task.fence, id, live.config.concurrency).pipe(
              Effect.mapError((error) => unavailable(`channels: reserving a slot failed: ${error.message}`))
            )
            if (!reserved) {
              full = true
              continue
            }
          }
          const admitted = breakers.admit(id, now)
          yield* reportTransitions
          if (admitted._tag === "Refused") {
            openUntil = Math.min(openUntil, admitted.retryAt)
            continue
          }
          const submitted = yield* Effect.either(
            called(live, task, "submit", live.transport.submit({ ...task, channelId: id }))
          )
          if (submitted._tag === "Right") return { jobId: submitted.right.jobId, channelId: id }
          const error = submitted.left
          if (failureKind(error) === "refused") return yield* error
          // the request may have made a job here: no failover, the worker looks for that job on this channel — unless
          // the channel is failing (its breaker opened) and another can take the task: as with a job whose channel
          // dies, a job it may have made is left there rather than the task waiting for it
          const failing = breakers.view(id).breaker === "open" && elsewhere(task, yield* Clock.currentTimeMillis)
          if (error.uncertain === true && !failing) {
            return yield* new UpstreamError({
              message: `channel ${id}: ${error.message}`,
              retryable: true,
              kind: "unavailable",
              uncertain: true,
              channelId: id
            })
          }
          last = error
          if (error.uncertain === true) {
            yield* Effect.logWarning(
              `task ${task.id}: channel ${id} is failing; a job its lost submit made is left there`
            )
          }
          Metrics.channelFailovers.record(1, id, "submit")
          yield* Effect.logWarning(
            `task ${task.id}: submit on channel ${id} failed (${error.message}); trying the next channel`
          )
        }
        const now = yield* Clock.currentTimeMillis
        if (last !== undefined) {
          return yield* unavailable(`every channel serving ${task.model} failed; the last: ${last.message}`)
        }
        if (full) {
          return yield* unavailable(`every channel serving ${task.model} is at its concurrency limit`, slotWaitMs)
        }
        return yield* unavailable(`every channel serving ${task.model} has its circuit open`, openUntil - now)
      })

    /** Another channel could take the task now (for giving up a job on a failed channel). */
    const elsewhere = (task: TaskRecord, now: number) =>
      candidates(task).some((live) => live.config.id !== task.channelId && breakers.available(live.config.id, now))

    const pollRouted = (task: TaskRecord, jobId: string): Effect.Effect<JobState, UpstreamError> =>
      Effect.gen(function*() {
        const live = find(task.channelId)
        if (live === undefined) {
          return { _tag: "Lost", message: `channel ${task.channelId} is gone` } as const
        }
        const id = live.config.id
        // the poll a finished copy caused: answered from the copy, without asking the upstream again
        const copied = copier.ended(task, jobId)
        if (copied !== undefined) return priced(live.config, ResultCopy.jobState(copied))
        const now = yield* Clock.currentTimeMillis
        const rate = live.pollRate
        const wait = rate === undefined ? 0 : rate.take(now)
        if (rate !== undefined && wait > 0) {
          return yield* unavailable(`channel ${id}: ${rate.perSecond} polls a second reached`, wait)
        }
        const admitted = breakers.admit(id, now)
        yield* reportTransitions
        if (admitted._tag === "Refused") {
          if (elsewhere(task, now)) {
            Metrics.channelFailovers.record(1, id, "poll")
            return { _tag: "Lost", message: `channel ${id} has its circuit open` } as const
          }
          return yield* unavailable(`channel ${id} has its circuit open`, admitted.retryAt - now)
        }
        const polled = yield* Effect.either(called(live, task, "poll", live.transport.poll(task, jobId)))
        if (polled._tag === "Right") return priced(live.config, polled.right)
        const error = polled.left
        if (failureKind(error) === "refused") return yield* error
        const after = yield* Clock.currentTimeMillis
        if (breakers.view(id).breaker === "open" && elsewhere(task, after)) {
          Metrics.channelFailovers.record(1, id, "poll")
          return { _tag: "Lost", message: `channel ${id} failed: ${error.message}` } as const
        }
        // the job may still be there: poll again after the backoff
        return yield* new UpstreamError({ message: error.message, retryable: true, kind: "unavailable" })
      })

    /**
     * The job an uncertain submit of a task may have made on its channel: the transport's lookup (idempotency key,
     * our id in the job's metadata) or a callback it noticed; `Unknown` (wait `submitWait`) where it has neither.
     */
    const findRouted = (task: TaskRecord, since: number): Effect.Effect<FindResult, UpstreamError> =>
      Effect.gen(function*() {
        if (task.channelId == null) return yield* findOnRoute(task, since)
        const live = find(task.channelId)
        // the channel is gone: its job cannot be followed, the task goes elsewhere
        if (live === undefined) return { _tag: "NotFound" } as const
        // the channel is failing (its breaker open) while another can take the task: its job is not looked for, the
        // task goes elsewhere (as a job whose channel dies)
        const now = yield* Clock.currentTimeMillis
        if (breakers.view(live.config.id).breaker === "open" && elsewhere(task, now)) {
          return { _tag: "NotFound" } as const
        }
        if (live.transport.find === undefined) return lookless(live)
        const found = yield* live.transport.find(task, since).pipe(
          Upstreams.traced("Upstream.find", task, live.config.transport, live.config.id)
        )
        return found._tag === "Unknown" ? { _tag: "Unknown", waitMs: submitWaitMs } as const : found
      })

    /**
     * What a channel without a lookup knows of a job a submit may have made: nothing (`Unknown`: the task waits), but
     * the simulator runs in this process and never leaves a job unrecorded behind a lost answer (`NotFound`).
     */
    const lookless = (live: Live): FindResult =>
      live.submitRecovery === "in-process"
        ? { _tag: "NotFound" }
        : { _tag: "Unknown", waitMs: submitWaitMs }

    /**
     * The job of a task whose submit began on a channel not recorded (its worker died while submitting): looked for
     * on each channel of the task's route, in order; `Unknown` when one of them cannot tell and none has it.
     */
    const findOnRoute = (task: TaskRecord, since: number) =>
      Effect.gen(function*() {
        let unknown = false
        for (const live of candidates(task)) {
          const on = { ...task, channelId: live.config.id }
          if (live.transport.find === undefined) {
            if (lookless(live)._tag === "Unknown") unknown = true
            continue
          }
          const found = yield* live.transport.find(on, since).pipe(
            Upstreams.traced("Upstream.find", on, live.config.transport, live.config.id)
          )
          if (found._tag === "Found") return { ...found, channelId: live.config.id }
          if (found._tag === "Unknown") unknown = true
        }
        return unknown ? { _tag: "Unknown", waitMs: submitWaitMs } as const : { _tag: "NotFound" } as const
      })

    /** The transport of a task submitted before channels existed (no channel recorded): the environment's. */
    const legacy = (task: TaskRecord) =>
      (options.transports ?? {})[task.provider] === "relay" ? defaultLive.get(defaultIds.relay)?.transport : undefined
    return { submitRouted, pollRouted, findRouted, legacy }
  })
