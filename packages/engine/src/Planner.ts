/**
 * The planning port: what a validated request costs, how long it should take, when it expires and what media it
 * makes (the endpoint's declaration in the families registry the planner serves). The vendor layers implement it
 * (price tables, estimates from recent durations); `layerFixed` serves tests and benchmarks.
 *
 * @since 0.1.0
 */
import { type Catalog, Families, Family, type Generation } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * The plan of a task.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan {
  /** Price charged at accept, in integer micro-dollars (before the test-key exemption). */
  readonly priceMicros: number
  readonly estimatedSeconds: number
  /** Time from creation to the deadline, in milliseconds. */
  readonly timeoutMs: number
  /** The media the endpoint makes, as its family declares it. */
  readonly mediaType: Catalog.MediaType
}

/**
 * The planning port.
 *
 * @since 0.1.0
 * @category services
 */
export class Planner extends Context.Tag("@mediagate/engine/Planner")<Planner, {
  readonly plan: (endpoint: Catalog.EndpointKey, request: Generation.AnyGenerationRequest) => Effect.Effect<Plan>
}>() {}

/**
 * Default deadline of a task (decisions.md §3).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTimeoutMs = 60 * 60 * 1000
/**
 * Deadline of an `off_peak` task.
 *
 * @since 0.1.0
 * @category constants
 */
export const offPeakTimeoutMs = 48 * 60 * 60 * 1000

/**
 * A planner with one price and estimate for everything (`off_peak` still gets 48 h), for the endpoints of a registry
 * (default: the registry): an endpoint it does not declare is a defect.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFixed = (options: {
  readonly priceMicros: number
  readonly estimatedSeconds: number
  readonly timeout?: Duration.DurationInput
  readonly families?: Family.Registry
}): Layer.Layer<Planner> =>
  Layer.succeed(Planner, {
    plan: (endpoint, request) => {
      const info = Family.findEndpoint(options.families ?? Families.registry, endpoint)
      if (info === undefined) return Effect.dieMessage(`no family has the endpoint ${endpoint}`)
      const timeoutMs = Duration.toMillis(options.timeout ?? defaultTimeoutMs)
      return Effect.succeed({
        priceMicros: options.priceMicros,
        estimatedSeconds: options.estimatedSeconds,
        timeoutMs: request.input["off_peak"] === true ? offPeakTimeoutMs : timeoutMs,
        mediaType: info.mediaType
      })
    }
  })
