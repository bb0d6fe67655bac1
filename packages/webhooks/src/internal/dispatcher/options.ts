/**
 * The dispatcher's settings: their defaults, and the settings an attempt needs with the defaults applied, in ms.
 */
import type * as Backoff from "@mediagate/persistence/Backoff"
import * as Duration from "effect/Duration"

/** Default delays of the retries: 1, 5 and 30 minutes. */
export const defaultRetryScheduleMs: ReadonlyArray<number> = [60_000, 300_000, 1_800_000]
/** Default time limit of one attempt: 10 s. */
export const defaultTimeoutMs = 10_000
/** Default jitter: each retry delay is lengthened by up to this fraction. */
export const defaultJitter = 0.1
/** Default fan-out backstop ({@link DispatcherOptions.idle}): 5 s. */
export const defaultIdle: Duration.DurationInput = "5 seconds"
/** The most attempt outcomes settled in one statement (`WebhookStore.settleAll`) by the background dispatcher. */
export const maxSettleBatch = 256

/** Dispatcher settings. */
export interface DispatcherOptions {
  /** Delays of the retries after the first attempt. Default {@link defaultRetryScheduleMs}. */
  readonly retrySchedule?: ReadonlyArray<Duration.DurationInput>
  /** Time limit of one attempt. Default 10 s. */
  readonly timeout?: Duration.DurationInput
  /** Fraction by which a retry delay may be lengthened at random (0 turns jitter off). Default 0.1. */
  readonly jitter?: number
  /** Deliveries sent at once by one process. Default 16. */
  readonly concurrency?: number
  /** Lease of a claimed delivery; longer than the timeout. Default timeout + 30 s. */
  readonly lease?: Duration.DurationInput
  /** Outbox entries fanned out per round (one compare-and-set). Default 500. */
  readonly batchSize?: number
  /**
   * Fan-out backstop: the longest wait for an outbox signal (`TaskOutbox.outboxWakeups`) before reading the outbox
   * anyway (a signal lost with a dropped `LISTEN` connection). Default {@link defaultIdle} (5 s).
   */
  readonly idle?: Duration.DurationInput
  /**
   * The longest wait of the delivery loop between looks for due deliveries (retries are awaited to their due time;
   * this catches deliveries made due elsewhere, e.g. a replay on another process). Default 1 s.
   */
  readonly deliveryIdle?: Duration.DurationInput
  /** This dispatcher's name in leases. Default `<host>:<pid>:<ulid>`. */
  readonly owner?: string
  /** Backoff of both loops while storage fails. Default 100 ms, doubling, at most 5 s. */
  readonly backoff?: Backoff.Options
}

/** Settings with defaults applied, in ms. */
export interface Resolved {
  readonly retryScheduleMs: ReadonlyArray<number>
  readonly timeoutMs: number
  readonly jitter: number
}

/** Applies the defaults. */
export const resolve = (options: DispatcherOptions = {}): Resolved => ({
  retryScheduleMs: (options.retrySchedule ?? defaultRetryScheduleMs).map(Duration.toMillis),
  timeoutMs: Duration.toMillis(options.timeout ?? defaultTimeoutMs),
  jitter: Math.max(0, options.jitter ?? defaultJitter)
})
