/**
 * The engine's `Planner` for real families: the price from the operator's price table, the estimate from recent
 * durations (or the family default), and the deadline (`MEDIAGATE_TASK_TIMEOUT`, 48 h for `off_peak`).
 *
 * @since 0.1.0
 */
import { Planner } from "@mediagate/engine/Planner"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { durationConfig } from "./Durations.js"
import { Estimates } from "./Estimates.js"
import { familyOf } from "./families/index.js"
import { PriceBook, price } from "./Prices.js"

/** Deadline of an `off_peak` task (decisions.md §3). */
export const offPeakTimeoutMs = 48 * 60 * 60 * 1000

/** The planner with a given task timeout. */
export const layer = (options: { readonly timeoutMs?: number } = {}): Layer.Layer<Planner, never, PriceBook | Estimates> =>
  Layer.effect(
    Planner,
    Effect.gen(function*() {
      const table = yield* PriceBook
      const estimates = yield* Estimates
      const timeoutMs = options.timeoutMs ?? 60 * 60 * 1000
      return Planner.of({
        plan: (endpoint, request) =>
          Effect.map(
            estimates.estimate(request.model, familyOf(endpoint).defaultEstimateSeconds(endpoint, request)),
            (estimatedSeconds) => ({
              priceMicros: price(endpoint, request, table),
              estimatedSeconds,
              timeoutMs: request.input["off_peak"] === true ? offPeakTimeoutMs : timeoutMs
            })
          )
      })
    })
  )

/** The planner with `MEDIAGATE_TASK_TIMEOUT` (default `1h`). */
export const layerConfig: Layer.Layer<Planner, ConfigError.ConfigError, PriceBook | Estimates> = Layer.unwrapEffect(
  Effect.map(durationConfig("MEDIAGATE_TASK_TIMEOUT", "1h"), (timeoutMs) => layer({ timeoutMs }))
)
