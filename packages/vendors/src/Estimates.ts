/**
 * `estimated_seconds`: a per-model default until the model has finished a few tasks, then the median of its
 * recent actual durations (decisions.md §3).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Samples kept per model.
 *
 * @since 0.1.0
 * @category constants
 */
export const window = 50
/**
 * Samples needed before the median replaces the default.
 *
 * @since 0.1.0
 * @category constants
 */
export const minimumSamples = 5

/**
 * Recent durations per model.
 *
 * @since 0.1.0
 * @category services
 */
export class Estimates extends Context.Tag("@mediagate/vendors/Estimates")<Estimates, {
  /** Records how long a finished task of `model` took, in seconds. */
  readonly observe: (model: string, seconds: number) => Effect.Effect<void>
  /** The estimate for `model`: the median of recent durations, or `fallback` while there are too few. */
  readonly estimate: (model: string, fallback: number) => Effect.Effect<number>
}>() {}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * Estimates kept in memory (per process; they start from the defaults again after a restart).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.sync(() => {
  const samples = new Map<string, Array<number>>()
  return Estimates.of({
    observe: (model, seconds) =>
      Effect.sync(() => {
        if (!Number.isFinite(seconds) || seconds < 0) return
        const list = samples.get(model) ?? []
        list.push(seconds)
        if (list.length > window) list.shift()
        samples.set(model, list)
      }),
    estimate: (model, fallback) =>
      Effect.sync(() => {
        const list = samples.get(model)
        const value = list !== undefined && list.length >= minimumSamples ? median(list) : fallback
        return Math.max(1, Math.round(value))
      })
  })
})

/**
 * In-memory estimates.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Estimates> = Layer.effect(Estimates, make)
