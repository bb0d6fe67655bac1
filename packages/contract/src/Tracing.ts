/**
 * The spans of Mediagate's own operations (handlers, services, store operations): one helper, so that every span
 * costs the same and as little as a span can.
 *
 * - No stack capture: `Effect.withSpan` without `captureStackTrace: false` builds an `Error` on every call to
 *   point the span at its call site; span names say where they come from already.
 * - Nothing at all while the tracer is disabled (`Effect.withTracerEnabled(false)`, `Layer.setTracerEnabled(false)`):
 *   the production server runs so unless a trace exporter is configured, and then a request pays for no span, not
 *   even a no-op one (which still changes the fiber's context and adds a finalizer).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"

/** Options of a span (those of `Effect.withSpan`, stack capture excepted: it is always off). */
export type SpanOptions = Omit<Tracer.SpanOptions, "captureStackTrace">

/**
 * Runs an effect in a span named `name` when the tracer is enabled, and as it is otherwise. Build it once where
 * the name is fixed (`const span = Tracing.span("Tasks.get")`) or inline (`.pipe(Tracing.span("Tasks.get"))`).
 */
export const span = (name: string, options?: SpanOptions) => {
  const spanOptions: Tracer.SpanOptions = { ...options, captureStackTrace: false }
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(self, name, spanOptions) : self
    )
}
