/**
 * The spans of Mediagate's own operations (handlers, services, store operations): one helper, so that every span
 * costs the same and as little as a span can.
 *
 * - No stack capture: `Effect.withSpan` without `captureStackTrace: false` builds an `Error` on every call to
 *   point the span at its call site; span names say where they come from already.
 * - Nothing at all while the tracer is disabled (`Effect.withTracerEnabled(false)`, `Layer.setTracerEnabled(false)`):
 *   the production server runs so unless a trace exporter is configured, and then a request pays for no span, not
 *   even a no-op one (which still changes the fiber's context and adds a finalizer).
 * - Work done later on another fiber (a task's worker steps, its webhook deliveries) continues the trace of the
 *   request that caused it: the request's {@link traceparent} is stored with the task, and {@link parentOf} turns it
 *   back into a parent span.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Tracer from "effect/Tracer"

/**
 * Options of a span (those of `Effect.withSpan`, stack capture excepted: it is always off).
 *
 * @since 0.1.0
 * @category models
 */
export type SpanOptions = Omit<Tracer.SpanOptions, "captureStackTrace">

/**
 * Runs an effect in a span named `name` when the tracer is enabled, and as it is otherwise. Build it once where
 * the name is fixed (`const span = Tracing.span("Tasks.get")`) or inline (`.pipe(Tracing.span("Tasks.get"))`).
 *
 * @since 0.1.0
 * @category utils
 */
export const span = (name: string, options?: SpanOptions) => {
  const spanOptions: Tracer.SpanOptions = { ...options, captureStackTrace: false }
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(self, name, spanOptions) : self
    )
}

/**
 * Runs an effect in a span named `name` when the tracer is enabled, with options built only then (`options` is
 * not called while tracing is off: nothing is allocated for a span that is not made).
 *
 * @since 0.1.0
 * @category utils
 */
export const spanWith =
  (name: string, options: () => SpanOptions) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled)
        ? Effect.withSpan(self, name, { ...options(), captureStackTrace: false })
        : self
    )

/**
 * Whether the tracer is enabled on the current fiber.
 *
 * @since 0.1.0
 * @category constants
 */
export const enabled: Effect.Effect<boolean> = FiberRef.get(FiberRef.currentTracerEnabled)

/**
 * Sets an attribute on the current span when there is one. Unlike `Effect.annotateCurrentSpan`, which fails
 * (building an exception, stack trace included) when no span is current and then ignores it, this reads the
 * context and does nothing more while the tracer is off: it runs on every request (the account id).
 *
 * @since 0.1.0
 * @category utils
 */
export const annotate = (key: string, value: unknown): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
    if (span._tag === "Some" && span.value._tag === "Span") span.value.attribute(key, value)
    return Effect.void
  })

/**
 * The W3C `traceparent` of the current span (`00-<trace id>-<span id>-<flags>`) while the tracer is enabled and a
 * span is current; undefined otherwise (then it costs a fiber-ref read).
 *
 * @since 0.1.0
 * @category constants
 */
export const traceparent: Effect.Effect<string | undefined> = Effect.withFiberRuntime((fiber) => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled)) return Effect.succeed(undefined)
  const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
  return Effect.succeed(span._tag === "None" ? undefined : format(span.value))
})

/**
 * A span as a W3C `traceparent` header value.
 *
 * @since 0.1.0
 * @category encoding
 */
export const format = (span: Tracer.AnySpan): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

const traceparentPattern = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/

/**
 * The span a W3C `traceparent` value names, as a parent for spans made elsewhere (a task's worker steps continue
 * the trace of the request that created it); undefined for none or an invalid value.
 *
 * @since 0.1.0
 * @category utils
 */
export const parentOf = (traceparent: string | null | undefined): Tracer.ExternalSpan | undefined => {
  if (traceparent === null || traceparent === undefined) return undefined
  const match = traceparentPattern.exec(traceparent.trim())
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined
  return Tracer.externalSpan({ traceId: match[1]!, spanId: match[2]!, sampled: (parseInt(match[3]!, 16) & 1) === 1 })
}
