/**
 * The tracer switch of the processes Mediagate runs itself: the production server (`Server.runMain`) and the
 * plain-Node handle (`Mediagate.make`). Embedding Effect apps keep their own setting.
 *
 * Spans are worth their cost only when something exports them, and no trace exporter exists yet: the tracer is off,
 * so the spans of Mediagate's operations (`Tracing.span` of the contract, the store operations) cost nothing — not
 * even no-op spans. The issue that adds OpenTelemetry export turns it on here when the `OTEL_*` variables configure
 * an exporter (and provides the exporter's layer beside it).
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"

/** Whether spans are recorded: only with a configured trace exporter (none exists yet). */
export const enabled: Config.Config<boolean> = Config.succeed(false)

/** A program with the tracer off, and the HTTP server's request spans off too. */
const untraced = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  // the server's tracer middleware does not look at the tracer switch: without this it would still parse each
  // request's URL, redact its headers and fill a no-op span with them
  Effect.withTracerEnabled(HttpMiddleware.withTracerDisabledWhenEffect(self, () => true), false)

/** Runs `self` with the tracer on or off as {@link enabled} says; fibers it forks (request fibers too) inherit it. */
export const apply = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.orElseSucceed(enabled, () => false), (on) => on ? self : untraced(self))
