/**
 * A call to a channel as the router makes it: timed, its outcome counted and told to the channel's breaker, and an
 * authentication failure counted towards disabling a stored channel.
 */
import { Metrics } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { UpstreamError } from "@mediagate/engine/Upstream"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { performance } from "node:perf_hooks"
import * as Upstreams from "../../Upstreams.js"
import type { Live } from "./live.js"
import type { State } from "./state.js"

/** A failure of the channels (retryable), with when to try again. */
export const unavailable = (message: string, retryAfterMs?: number) =>
  new UpstreamError({
    message,
    retryable: true,
    kind: "unavailable",
    ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(100, Math.round(retryAfterMs)) })
  })

/** How a failed call counts: a refusal of the request (an answer), or a failure of the channel. */
export const failureKind = (error: UpstreamError): "refused" | "auth" | "unavailable" =>
  error.kind ?? (error.retryable ? "unavailable" : "refused")
/** Makes the router's calls on the shared state. */
export const make = (state: State) => {
  const { authFailures, breakers, reload, reportTransitions, store } = state
  const authLimit = Math.max(1, state.options.authFailures ?? 3)

  /**
   * Counts a call's outcome on its channel and tells the breaker: a success (`error` undefined), a refusal of the
   * request (an answer: counted as ok), or a failure of the channel.
   */
  const counted = (live: Live, call: "submit" | "poll", error: UpstreamError | undefined, now: number) => {
    const id = live.config.id
    const kind = error === undefined ? "ok" : failureKind(error)
    if (error === undefined || kind === "refused") {
      breakers.success(id, now)
      if (error === undefined) authFailures.delete(id)
      Metrics.channelRequests.record(1, id, call, "ok")
      return reportTransitions
    }
    breakers.failure(id, now, error.message)
    Metrics.channelRequests.record(1, id, call, kind)
    return kind === "auth" ? Effect.zipRight(reportTransitions, authFailed(live, error.message)) : reportTransitions
  }

  /** Times a call to a channel and counts its outcome (an interruption or defect is only timed). */
  const called = <A>(
    live: Live,
    task: TaskRecord,
    call: "submit" | "poll",
    effect: Effect.Effect<A, UpstreamError>
  ) =>
    Effect.suspend(() => {
      const started = performance.now()
      const id = live.config.id
      return effect.pipe(
        Effect.onExit((exit) => {
          Metrics.channelDuration.record((performance.now() - started) / 1000, id, call)
          const failure = Exit.isSuccess(exit) ? undefined : Cause.failureOption(exit.cause)
          if (failure?._tag === "None") return Effect.void
          return Effect.flatMap(Clock.currentTimeMillis, (now) => counted(live, call, failure?.value, now))
        }),
        Upstreams.traced(`Upstream.${call}`, task, live.config.transport, id)
      )
    })

  /** Counts an authentication failure; the `authLimit`-th in a row disables a stored channel. */
  const authFailed = (live: Live, message: string) =>
    Effect.suspend(() => {
      const id = live.config.id
      const count = (authFailures.get(id) ?? 0) + 1
      authFailures.set(id, count)
      if (count < authLimit) return Effect.void
      if (!live.stored) {
        return Effect.logError(
          `channel ${id}: ${count} authentication failures in a row (${message}); fix the environment's credentials`
        )
      }
      authFailures.delete(id)
      const reason = `disabled automatically after ${count} authentication failures in a row: ${message}`
      return store.update(id, { enabled: false, disabledReason: reason }).pipe(
        Effect.zipRight(Effect.logWarning(`channel ${id} (${live.config.name}) ${reason}`)),
        Effect.zipRight(reload),
        Effect.catchAllCause((cause) => Effect.logWarning(`channel ${id}: disabling it failed`, cause))
      )
    })

  return { called }
}

/** The router's calls. */
export type Calls = ReturnType<typeof make>
