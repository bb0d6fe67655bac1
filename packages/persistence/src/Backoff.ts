/**
 * Background loops that outlive storage outages (the task workers, the webhook dispatcher).
 *
 * {@link loop} runs one round after another for as long as its scope lives. A round that fails or dies (the
 * database restarted, connections killed, a defect) never ends the loop: it is logged and the next round waits a
 * capped exponential backoff with jitter (from {@link Options.base}, doubling, at most {@link Options.cap}). The
 * first failure of a streak is a warning, the following ones are debug lines, and the first round that succeeds
 * again logs how long the loop was failing: an outage costs a handful of log lines, not one per round.
 * Only interruption (the scope closing) ends the loop.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

/**
 * Backoff settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Delay after the first failure of a streak. Default 100 ms. */
  readonly base?: Duration.DurationInput
  /** Longest delay between rounds while they fail. Default 5 s. */
  readonly cap?: Duration.DurationInput
  /** Fraction by which a delay is shortened at random, so that processes do not retry in step. Default 0.25. */
  readonly jitter?: number
}

/**
 * Default delay after the first failure: 100 ms.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseMs = 100
/**
 * Default longest delay: 5 s.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultCapMs = 5000

/**
 * The delay after the `failures`-th failure in a row (from 1): `base · 2^(failures - 1)`, at most `cap`,
 * shortened by up to `jitter` (25%) at random (`random` in [0, 1)).
 *
 * @since 0.1.0
 * @category utils
 */
export const delayMs = (failures: number, options: Options = {}, random = 0): number => {
  const base = options.base === undefined ? defaultBaseMs : Duration.toMillis(options.base)
  const cap = options.cap === undefined ? defaultCapMs : Duration.toMillis(options.cap)
  const full = Math.min(cap, base * 2 ** Math.min(30, Math.max(0, failures - 1)))
  return Math.max(0, Math.round(full * (1 - (options.jitter ?? 0.25) * random)))
}

/**
 * The same backoff as a `Schedule` (for `Effect.retry`): from `base`, doubling, at most `cap`, jittered.
 *
 * @since 0.1.0
 * @category utils
 */
export const schedule = (options: Options = {}): Schedule.Schedule<Duration.Duration> =>
  Schedule.exponential(options.base ?? Duration.millis(defaultBaseMs)).pipe(
    Schedule.union(Schedule.spaced(options.cap ?? Duration.millis(defaultCapMs))),
    Schedule.jittered,
    Schedule.map(([delay]) => delay)
  )

/**
 * Runs `round` forever. A failed or dead round is logged (see the module) and followed by a backoff; a round that
 * succeeds resets it. `name` names the loop in logs.
 *
 * @since 0.1.0
 * @category utils
 */
export const loop = <E, R>(
  name: string,
  round: Effect.Effect<unknown, E, R>,
  options: Options = {}
): Effect.Effect<never, never, R> =>
  Effect.suspend(() => {
    let failures = 0
    let since = 0
    const failed = (cause: Cause.Cause<E>) =>
      Effect.gen(function*() {
        failures++
        if (failures === 1) {
          since = yield* Clock.currentTimeMillis
          yield* Effect.logWarning(
            `${name} failed; retrying with backoff (at most ${
              Duration.format(Duration.millis(delayMs(Infinity, options)))
            })`,
            Cause.squash(cause)
          )
        } else {
          yield* Effect.logDebug(`${name} failed again (${failures} in a row)`, Cause.squash(cause))
        }
        yield* Effect.sleep(Duration.millis(delayMs(failures, options, yield* Random.next)))
      })
    const succeeded = Effect.suspend(() => {
      if (failures === 0) return Effect.void
      const streak = failures
      failures = 0
      return Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          Effect.logInfo(
            `${name} works again after ${streak} failed rounds (${Math.round((now - since) / 100) / 10} s)`
          )
      )
    })
    return Effect.forever(
      round.pipe(
        Effect.matchCauseEffect({
          // interruption is the scope closing: let it end the loop
          onFailure: (cause) => Cause.isInterruptedOnly(cause) ? Effect.interrupt : failed(cause),
          onSuccess: () => succeeded
        })
      )
    )
  })
