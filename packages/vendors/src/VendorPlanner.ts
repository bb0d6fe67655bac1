/**
 * The engine's `Planner` for the families of a registry: the price from the operator's price table and the family's
 * price function, the estimate from recent durations (or the family's default), the deadline
 * (`MEDIAGATE_TASK_TIMEOUT`, 48 h for `off_peak`), and the media type the endpoint declares.
 *
 * @since 0.1.0
 */
import { Families, Family, Pricing, Tracing } from "@mediagate/contract"
import { Planner } from "@mediagate/engine/Planner"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { durationConfig } from "./Durations.js"
import { Estimates } from "./Estimates.js"
import { PriceBook } from "./Prices.js"

/**
 * Deadline of an `off_peak` task (decisions.md §3).
 *
 * @since 0.1.0
 * @category constants
 */
export const offPeakTimeoutMs = 48 * 60 * 60 * 1000

/**
 * The planner with a given task timeout (default 1 h), for the families of a registry (default: the registry).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: { readonly timeout?: Duration.DurationInput; readonly families?: Family.Registry } = {}
): Layer.Layer<Planner, never, PriceBook | Estimates> =>
  Layer.effect(
    Planner,
    Effect.gen(function*() {
      const table = yield* PriceBook
      const estimates = yield* Estimates
      const families = options.families ?? Families.registry
      const price = Pricing.priceOf(families)
      const timeoutMs = Duration.toMillis(options.timeout ?? "1 hour")
      // on every accept: a plain function in a span of its own (`Effect.fn` builds an Error per call)
      const span = Tracing.span("VendorPlanner.plan")
      return Planner.of({
        plan: (endpoint, request) => {
          const info = Family.findEndpoint(families, endpoint)
          if (info === undefined) return Effect.dieMessage(`no family has the endpoint ${endpoint}`)
          return span(
            Effect.map(estimates.estimate(request.model, info.estimateSeconds(request)), (estimatedSeconds) => ({
              priceMicros: price(endpoint, request, table),
              estimatedSeconds,
              timeoutMs: request.input["off_peak"] === true ? offPeakTimeoutMs : timeoutMs,
              mediaType: info.mediaType
            }))
          )
        }
      })
    })
  )

/**
 * The planner with `MEDIAGATE_TASK_TIMEOUT` (default `1h`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Planner, ConfigError.ConfigError, PriceBook | Estimates> = Layer.unwrapEffect(
  Effect.map(durationConfig("MEDIAGATE_TASK_TIMEOUT", "1h"), (timeout) => layer({ timeout }))
)
