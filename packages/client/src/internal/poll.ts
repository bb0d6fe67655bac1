/**
 * The polling schedule of `waitFor`: quick first looks, then paced by the task's `estimated_seconds`, then a
 * gentle backoff once the estimate has passed.
 */

/** Bounds of the polling interval (ms). */
export interface PollInterval {
  /** The first wait and the shortest (default 250 ms). */
  readonly min: number
  /** The longest wait (default 5,000 ms). */
  readonly max: number
}

/** The default bounds. */
export const defaultPollInterval: PollInterval = { min: 250, max: 5_000 }

/**
 * The wait after a poll that followed a wait of `previous` ms (`undefined` before the first poll), `elapsed` ms
 * since the wait began, for a task estimated to take `estimated` seconds: doubling from `min` up to a tenth of the
 * estimate (about ten looks while it runs), then × 1.5 per poll once the estimate has passed; within [min, max].
 */
export const nextDelay = (
  previous: number | undefined,
  elapsed: number,
  estimated: number,
  bounds: PollInterval = defaultPollInterval
): number => {
  const clamp = (ms: number) => Math.min(bounds.max, Math.max(bounds.min, ms))
  if (previous === undefined) return bounds.min
  if (elapsed <= estimated * 1000) return clamp(Math.min(previous * 2, Math.max(bounds.min, (estimated * 1000) / 10)))
  return clamp(previous * 1.5)
}

/** Terminal states of a task. */
export const terminal: ReadonlySet<string> = new Set(["succeeded", "failed", "cancelled", "expired"])
