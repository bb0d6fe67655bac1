/**
 * Log output of the Mediagate process, one line per event: `text` (the default: logfmt, `key=value` pairs) or
 * `json` (one JSON object per line, for log collectors); `pretty` is Effect's coloured multi-line logger for
 * development. Events at `MEDIAGATE_LOG_LEVEL` and above (default `Info`) are written to stdout.
 *
 * Every line of a request carries its `request_id` (set by the server's envelope); while a span is current (tracing
 * on), every line also carries its `trace_id` and `span_id`, to find the trace of a log line and the other way round.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Tracer from "effect/Tracer"
import { strip } from "./internal/terminal.js"

/**
 * Log settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface LogSettings {
  readonly format: "text" | "json" | "pretty"
  readonly level: LogLevel.LogLevel
  /**
   * Whether the `pretty` logger colours its lines (`Server.runMain` decides by `NO_COLOR`, `FORCE_COLOR` and whether
   * stdout is a TTY); default: when stdout is a TTY.
   */
  readonly colors?: boolean | undefined
}

/**
 * `MEDIAGATE_LOG_FORMAT` (`text` | `json` | `pretty`) and `MEDIAGATE_LOG_LEVEL` (`Debug`, `Info`, `Warning`, `Error`,
 * ...).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<LogSettings> = Config.all({
  format: Config.literal("text", "json", "pretty")("MEDIAGATE_LOG_FORMAT").pipe(Config.withDefault("text" as const)),
  level: Config.logLevel("MEDIAGATE_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))
})

/**
 * `logger` with the `trace_id` and `span_id` of the current span added to a line's annotations, when a span is
 * current and recorded (not the no-op span of a disabled tracer). Without a span a line costs one context lookup more.
 *
 * @since 0.1.0
 * @category utils
 */
export const withTraceIds = <Message, Output>(logger: Logger.Logger<Message, Output>): Logger.Logger<Message, Output> =>
  Logger.mapInputOptions(logger, (options: Logger.Logger.Options<Message>) => {
    const context = FiberRefs.getOrDefault(options.context, FiberRef.currentContext)
    const span = Context.getOption(context, Tracer.ParentSpan)
    if (span._tag === "None" || span.value.traceId === "noop" || span.value.traceId === "") return options
    return {
      ...options,
      annotations: HashMap.set(
        HashMap.set(options.annotations, "trace_id", span.value.traceId),
        "span_id",
        span.value.spanId
      )
    }
  })

/** The lines not written yet, and whether a write of them is scheduled. */
let pending: Array<string> = []
let pendingBytes = 0
let scheduled = false
let exitHooked = false

/** Writes the pending lines to stdout in one call (synchronous on a pipe or a file, as Node writes stdout there). */
const flushLines = () => {
  scheduled = false
  if (pending.length === 0) return
  const text = pending.join("")
  pending = []
  pendingBytes = 0
  process.stdout.write(text)
}

/**
 * A line writer for {@link layer}: whole lines to stdout, those of one turn of the event loop written together (one
 * system call for a burst of access-log lines instead of one each; at most 64 KiB wait), and whatever is left when
 * the process exits. ANSI escape sequences are taken out unless stdout is a terminal. Lines of the last turn before a
 * process is killed (`SIGKILL`) are lost; an exit, also on a signal the server handles, writes them.
 *
 * @since 0.1.0
 * @category utils
 */
export const stdoutLines = (line: string): void => {
  const text = process.stdout.isTTY === true ? line : strip(line)
  pending.push(text, "\n")
  pendingBytes += text.length + 1
  if (pendingBytes >= 64 * 1024) return flushLines()
  if (!scheduled) {
    scheduled = true
    setImmediate(flushLines)
  }
  if (!exitHooked) {
    exitHooked = true
    process.on("exit", flushLines)
  }
}

/**
 * Replaces the default logger (the only one: run the program with `NodeRuntime.runMain(..., { disablePrettyLogger:
 * true })` so that no second logger prints every line again). A `text` or `json` line goes to `write` when given
 * (the production server's is {@link stdoutLines}), else to the fiber's `Console`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: LogSettings, write?: (line: string) => void): Layer.Layer<never> => {
  const lines = settings.format === "json" ? Logger.jsonLogger : Logger.logfmtLogger
  return Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      withTraceIds(
        settings.format === "pretty"
          ? settings.colors === undefined
            ? Logger.prettyLoggerDefault
            : Logger.prettyLogger({ colors: settings.colors })
          : write === undefined
          ? Logger.withConsoleLog(lines)
          : Logger.map(lines, write)
      )
    ),
    Logger.minimumLogLevel(settings.level)
  )
}

/**
 * {@link layer} from {@link config}.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(Effect.map(config, layer))
