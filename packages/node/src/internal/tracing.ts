/**
 * The tracer switch of the processes Mediagate runs itself: the production server (`Server.runMain`) and the
 * plain-Node handle (`Mediagate.make`). Embedding Effect apps keep their own setting (and their own tracer).
 *
 * - **Off** (the default: no OTLP endpoint configured, or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`):
 *   the tracer is disabled, so the spans of Mediagate's operations (`Tracing.span` of the contract, the store
 *   operations, `@effect/sql`'s statements) cost nothing — not even no-op spans — and the HTTP server's request
 *   spans are off too. This is the path measured in docs/performance-notes.md ("HTTP hot paths").
 * - **On** when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set: spans are exported
 *   over OTLP/HTTP by `@effect/opentelemetry`'s `OtlpTracer` (batched, every `OTEL_BSP_SCHEDULE_DELAY`, flushed at
 *   shutdown) through the platform's fetch `HttpClient`, JSON by default (`http/protobuf` on request). No
 *   OpenTelemetry SDK runs. See docs/operations.md "Traces" and docs/configuration.md.
 * - `@effect/opentelemetry` is an optional peer dependency ({@link otlpPackage}), imported only when tracing is on.
 *   Without it the production server stops at start with a `MissingPackage` naming the install line;
 *   `Mediagate.make` logs it and runs untraced (as with invalid settings).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import { OptionalPackage } from "@mediagate/contract"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import type * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"

/** The package of the OTLP exporter: an optional peer dependency of `@mediagate/node`. */
export const otlpPackage: OptionalPackage.Spec = {
  feature: "Trace export (OTEL_EXPORTER_OTLP_ENDPOINT)",
  name: "@effect/opentelemetry",
  range: "^0.64"
}

/** The OTLP tracer and its body encodings, loaded on first use. */
const loadOtlp = OptionalPackage.load(
  otlpPackage,
  () => Promise.all([import("@effect/opentelemetry/OtlpTracer"), import("@effect/opentelemetry/OtlpSerialization")])
)

/** The OTLP trace export settings (from the standard `OTEL_*` variables). */
export interface Settings {
  /** Where spans are posted (`.../v1/traces`). */
  readonly url: string
  /** Extra request headers (authentication of a hosted collector). */
  readonly headers: Readonly<Record<string, string>>
  /** `service.name` of the resource. */
  readonly serviceName: string
  /** Other resource attributes. */
  readonly attributes: Readonly<Record<string, string>>
  /** OTLP/HTTP body encoding. */
  readonly protocol: "http/json" | "http/protobuf"
  /** How often batched spans are sent, in ms. */
  readonly exportIntervalMs: number
  /** A batch is sent at once when it reaches this many spans. */
  readonly maxBatchSize: number
}

/** The service name when neither `OTEL_SERVICE_NAME` nor a `service.name` resource attribute names one. */
export const defaultServiceName = "mediagate"

const optional = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.map(Option.filter((value) => value.trim() !== ""))
  )

/** `k1=v1,k2=v2` (W3C Baggage-like, values percent-encoded) as a record; an entry without `=` is an error. */
export const parsePairs = (
  name: string,
  text: string
): Either.Either<Record<string, string>, ConfigError.ConfigError> => {
  const out: Record<string, string> = {}
  for (const entry of text.split(",")) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    const key = at < 0 ? "" : entry.slice(0, at).trim()
    if (key === "") return Either.left(ConfigError.InvalidData([name], "must be comma-separated key=value pairs"))
    try {
      out[key] = decodeURIComponent(entry.slice(at + 1).trim())
    } catch {
      return Either.left(ConfigError.InvalidData([name], `the value of ${key} is not valid percent-encoding`))
    }
  }
  return Either.right(out)
}

const pairs = (name: string): Config.Config<Record<string, string>> =>
  optional(name).pipe(Config.mapOrFail((value) =>
    Option.match(value, {
      onNone: (): Either.Either<Record<string, string>, ConfigError.ConfigError> => Either.right({}),
      onSome: (text) => parsePairs(name, text)
    })
  ))

const positiveInteger = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

/** The exporters `OTEL_TRACES_EXPORTER` names (a comma-separated list). */
const exporterNames = (text: string): ReadonlyArray<string> =>
  text.split(",").map((part) => part.trim().toLowerCase()).filter((part) => part !== "")

/** The URL of the traces endpoint: the signal-specific one as given, else the base one + `/v1/traces`. */
export const tracesUrl = (traces: Option.Option<string>, base: Option.Option<string>): Option.Option<string> =>
  Option.orElse(
    Option.map(traces, (url) => url.trim()),
    () => Option.map(base, (url) => `${url.trim().replace(/\/+$/, "")}/v1/traces`)
  )

/**
 * The export settings from the standard variables, or none when tracing is off: `OTEL_SDK_DISABLED`,
 * `OTEL_TRACES_EXPORTER` (`otlp` or `none`), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`, `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (`http/json`, the default here, or
 * `http/protobuf`), `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_SCHEDULE_DELAY`,
 * `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
 */
export const config: Config.Config<Option.Option<Settings>> = Config.all({
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  exporter: Config.string("OTEL_TRACES_EXPORTER").pipe(
    Config.validate({
      message: "must be otlp or none (only OTLP export is built in)",
      validation: (text) => exporterNames(text).every((n) => n === "otlp" || n === "none")
    }),
    Config.withDefault("otlp"),
    Config.map(exporterNames)
  ),
  traces: optional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  base: optional("OTEL_EXPORTER_OTLP_ENDPOINT"),
  headers: pairs("OTEL_EXPORTER_OTLP_HEADERS"),
  tracesHeaders: pairs("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
  protocol: Config.literal("http/json", "http/protobuf")("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").pipe(
    Config.orElse(() => Config.literal("http/json", "http/protobuf")("OTEL_EXPORTER_OTLP_PROTOCOL")),
    Config.withDefault("http/json" as const)
  ),
  serviceName: optional("OTEL_SERVICE_NAME"),
  attributes: pairs("OTEL_RESOURCE_ATTRIBUTES"),
  exportIntervalMs: positiveInteger("OTEL_BSP_SCHEDULE_DELAY", 5000),
  maxBatchSize: positiveInteger("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
}).pipe(Config.map((c) => {
  const url = tracesUrl(c.traces, c.base)
  if (c.disabled || !c.exporter.includes("otlp") || Option.isNone(url)) return Option.none()
  return Option.some(
    {
      url: url.value,
      headers: { ...c.headers, ...c.tracesHeaders },
      serviceName: Option.getOrElse(c.serviceName, () => c.attributes["service.name"] ?? defaultServiceName),
      attributes: c.attributes,
      protocol: c.protocol,
      exportIntervalMs: c.exportIntervalMs,
      maxBatchSize: c.maxBatchSize
    } satisfies Settings
  )
}))

/** Whether spans are recorded: only with a configured trace exporter. */
export const enabled: Config.Config<boolean> = Config.map(config, Option.isSome)

/** A program with the tracer off, and the HTTP server's request spans off too. */
const untraced = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  // the server's tracer middleware does not look at the tracer switch: without this it would still parse each
  // request's URL, redact its headers and fill a no-op span with them
  Effect.withTracerEnabled(HttpMiddleware.withTracerDisabledWhenEffect(self, () => true), false)

/** Paths whose requests make no span (probes: a span every few seconds would only be noise). */
const probePaths = new Set(["/healthz", "/readyz"])

/** Runs `self` with the OTLP tracer of `settings`, made with the loaded `@effect/opentelemetry` modules. */
const tracedWith = <A, E, R>(
  [OtlpTracer, OtlpSerialization]: Effect.Effect.Success<typeof loadOtlp>,
  self: Effect.Effect<A, E, R>,
  settings: Settings
): Effect.Effect<A, E, R | Scope.Scope> =>
  OtlpTracer.make({
    url: settings.url,
    headers: settings.headers,
    resource: { serviceName: settings.serviceName, attributes: settings.attributes },
    exportInterval: settings.exportIntervalMs,
    maxBatchSize: settings.maxBatchSize,
    shutdownTimeout: "3 seconds"
  }).pipe(
    Effect.provide(Layer.merge(
      FetchHttpClient.layer,
      settings.protocol === "http/protobuf" ? OtlpSerialization.layerProtobuf : OtlpSerialization.layerJson
    )),
    Effect.flatMap((tracer) =>
      HttpMiddleware.withTracerDisabledWhenEffect(self, (request) => probePaths.has(request.url.split("?")[0]!)).pipe(
        Effect.withTracerEnabled(true),
        Effect.withTracer(tracer)
      )
    )
  )

/**
 * Runs `self` with the OTLP tracer of `settings`; the exporter lives in the scope in context (its last spans are
 * sent when the scope closes). Fails with a `MissingPackage` when `@effect/opentelemetry` is not installed.
 */
export const traced = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  settings: Settings
): Effect.Effect<A, E | OptionalPackage.MissingPackage, R | Scope.Scope> =>
  Effect.flatMap(loadOtlp, (otlp) => tracedWith(otlp, self, settings))

/**
 * Runs a whole program (the production server) with the tracer on or off as {@link config} says; fibers it forks
 * (request fibers too) inherit it. Invalid `OTEL_*` settings fail it with the `ConfigError`, tracing on without
 * `@effect/opentelemetry` with the `MissingPackage`.
 */
export const apply = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E | ConfigError.ConfigError | OptionalPackage.MissingPackage, R> =>
  Effect.flatMap(
    config,
    (settings) => Option.isNone(settings) ? untraced(self) : Effect.scoped(traced(self, settings.value))
  )

/**
 * {@link apply} for an effect that starts background work in the scope in context (`Mediagate.make`): the exporter
 * lives as long as that scope. Settings come from `provider` (default: the current one); invalid ones, or tracing
 * on without `@effect/opentelemetry`, are logged and leave tracing off.
 */
export const applyScoped = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  provider?: ConfigProvider.ConfigProvider
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.flatMap(
    (provider === undefined ? config : Effect.withConfigProvider(config, provider)).pipe(
      Effect.tapError((error) => Effect.logWarning(`tracing stays off: invalid OTEL settings: ${String(error)}`)),
      Effect.orElseSucceed(() => Option.none<Settings>())
    ),
    (settings) =>
      Option.isNone(settings) ? untraced(self) : Effect.matchEffect(loadOtlp, {
        onFailure: (missing) =>
          Effect.zipRight(Effect.logWarning(`tracing stays off: ${missing.message}`), untraced(self)),
        onSuccess: (otlp) => tracedWith(otlp, self, settings.value)
      })
  )
