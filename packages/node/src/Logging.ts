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
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import type * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as List from "effect/List"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as LogSpan from "effect/LogSpan"
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

/**
 * A message with fields of its own, for lines logged often (the access log's, one per request; log them with
 * {@link logInfoWithFields}): the `text` and `json` loggers of {@link layer} write its fields as annotations, after
 * the fiber's, without building an annotation map per line (what `Effect.annotateLogs` does).
 *
 * @since 0.1.0
 * @category models
 */
export class FieldsMessage {
  constructor(
    /** The message. */
    readonly text: string,
    /** The fields, in the order they are written; a field of the fiber's annotations with the same name yields. */
    readonly fields: ReadonlyArray<readonly [name: string, value: string | number]>
  ) {}
  /**
   * The text.
   *
   * @since 0.1.0
   */
  toString(): string {
    return this.text
  }
  /**
   * The text.
   *
   * @since 0.1.0
   */
  toJSON(): string {
    return this.text
  }
}

/** The message of a line when it is one {@link FieldsMessage}. */
const fieldsMessage = (message: unknown): FieldsMessage | undefined => {
  const single = Array.isArray(message) && message.length === 1 ? message[0] : message
  return single instanceof FieldsMessage ? single : undefined
}

/** A logfmt value as Effect's `logfmtLogger` writes it: as is without whitespace, quotes or `=`, else quoted. */
const logfmtValue = (value: string) => /^[^\s"=]*$/.test(value) ? value : JSON.stringify(value)

/** A field's value as Effect's `logfmtLogger` writes it; a number never needs quotes. */
const logfmtField = (value: string | number) => typeof value === "number" ? String(value) : logfmtValue(value)

/** A fiber's name in a line (`#12`), as `FiberId.threadName` gives it, without its general case for a fiber's own. */
const threadName = (id: FiberId.FiberId) => id._tag === "Runtime" ? `#${id.id}` : FiberId.threadName(id)

/** An annotation's value as text, as Effect's `logfmtLogger` renders it. */
const logfmtText = (value: unknown): string =>
  typeof value === "string"
    ? value
    : typeof value === "object" && value !== null
    ? JSON.stringify(value)
    : String(value)

/** What marks a logger that writes a {@link FieldsMessage}'s fields (the loggers of {@link layer}). */
const fieldsAware = Symbol.for("@mediagate/node/Logging/fieldsAware")

/** `logger`, marked as writing a {@link FieldsMessage}'s fields. */
const markFieldsAware = <Message, Output>(logger: Logger.Logger<Message, Output>): Logger.Logger<Message, Output> =>
  Object.assign(logger, { [fieldsAware]: true })

/** What marks {@link layer}'s default logger when it writes `text` or `json` lines to a writer of its own. */
const directLines = Symbol.for("@mediagate/node/Logging/directLines")

/** The format and writer of {@link layer}'s default logger (see {@link directLines}). */
interface DirectLines {
  readonly format: "text" | "json"
  readonly write: (line: string) => void
}

/** What a fiber's logger set (`FiberRef.currentLoggers`) allows a line of a {@link FieldsMessage}. */
interface LoggerSet {
  /**
   * Whether every logger writes a {@link FieldsMessage}'s fields: the loggers of {@link layer} do; a logger of an
   * embedding app's own would see the message object without them.
   */
  readonly writesFields: boolean
  /** The lines' format and writer, when the loggers are exactly {@link layer}'s (lines to a writer, span events). */
  readonly direct: DirectLines | undefined
}

/** The logger set read last, and what it allows: the set is the same from one line to the next (a layer changes it). */
let lastLoggers: HashSet.HashSet<Logger.Logger<unknown, unknown>> | undefined
let lastSet: LoggerSet = { writesFields: false, direct: undefined }

/** What `loggers` allow (see {@link LoggerSet}), read once per set. */
const loggerSet = (loggers: HashSet.HashSet<Logger.Logger<unknown, unknown>>): LoggerSet => {
  if (loggers === lastLoggers) return lastSet
  let writesFields = true
  let direct: DirectLines | undefined
  let others = false
  for (const logger of loggers) {
    if (!(fieldsAware in logger)) writesFields = false
    if (directLines in logger) direct = (logger as unknown as Record<typeof directLines, DirectLines>)[directLines]
    else if (logger !== spanEvents) others = true
  }
  lastLoggers = loggers
  lastSet = { writesFields, direct: others ? undefined : direct }
  return lastSet
}

/**
 * Logs `text` at `Info` with `fields` as its annotations: as a {@link FieldsMessage} where every logger of the
 * fiber writes its fields (no annotation map per line), else with `Effect.annotateLogs`.
 *
 * @since 0.1.0
 * @category utils
 */
export const logInfoWithFields = (
  text: string,
  fields: ReadonlyArray<readonly [name: string, value: string | number]>
): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) =>
    loggerSet(fiber.getFiberRef(FiberRef.currentLoggers)).writesFields
      ? Effect.logInfo(new FieldsMessage(text, fields))
      : Effect.logInfo(text).pipe(Effect.annotateLogs(Object.fromEntries(fields)))
  )

/** `options` with a {@link FieldsMessage} as its text, its fields set as annotations over the fiber's. */
const asAnnotations = <Message>(options: Logger.Logger.Options<Message>, message: FieldsMessage) => {
  let annotations = options.annotations
  for (const [name, value] of message.fields) annotations = HashMap.set(annotations, name, value)
  return { ...options, message: message.text as Message, annotations }
}

/**
 * `logger` for lines of a {@link FieldsMessage}: with `format` (the logger is Effect's `logfmtLogger` or
 * `jsonLogger`) such a line is formatted here, the same line the logger writes for the text with the fields as
 * annotations; without (any other logger: `pretty`, the tracer's span events) the logger gets that text and those
 * annotations. A line with a cause always goes to the logger.
 */
const withFieldsMessages = <Output>(
  logger: Logger.Logger<unknown, Output>,
  format?: "text" | "json"
): Logger.Logger<unknown, Output> =>
  Logger.make((options) => {
    const message = fieldsMessage(options.message)
    if (message === undefined) return logger.log(options)
    if (format === undefined || options.cause._tag !== "Empty") return logger.log(asAnnotations(options, message))
    return fieldsLine(format, options, message) as Output
  })

/** What a line of a {@link FieldsMessage} is written from. */
type LineOptions = Pick<Logger.Logger.Options<unknown>, "date" | "logLevel" | "fiberId" | "spans" | "annotations">

/**
 * The line of a {@link FieldsMessage} in `format`: the line Effect's `logfmtLogger` or `jsonLogger` writes for its
 * text with its fields as annotations after the fiber's.
 */
const fieldsLine = (format: "text" | "json", options: LineOptions, message: FieldsMessage): string => {
  // the fiber's annotations and spans, read only where there are any (an access-log line usually has none)
  const annotated = HashMap.size(options.annotations) > 0
  const own = (name: string) => message.fields.some(([field]) => field === name)
  const now = options.date.getTime()
  if (format === "json") {
    const annotations: Record<string, unknown> = {}
    if (annotated) { for (const [name, value] of options.annotations) if (!own(name)) annotations[name] = value }
    for (const [name, value] of message.fields) annotations[name] = value
    const spans: Record<string, number> = {}
    if (List.isCons(options.spans)) { for (const span of options.spans) spans[span.label] = now - span.startTime }
    return JSON.stringify({
      message: message.text,
      logLevel: options.logLevel.label,
      timestamp: options.date.toISOString(),
      annotations,
      spans,
      fiberId: threadName(options.fiberId)
    })
  }
  let line = `timestamp=${options.date.toISOString()} level=${options.logLevel.label} fiber=${
    threadName(options.fiberId)
  } message=${logfmtValue(message.text)}`
  if (List.isCons(options.spans)) { for (const span of options.spans) line += " " + LogSpan.render(now)(span) }
  if (annotated) {
    for (const [name, value] of options.annotations) {
      if (!own(name)) line += ` ${name.replace(/[\s="]/g, "_")}=${logfmtValue(logfmtText(value))}`
    }
  }
  for (const [name, value] of message.fields) line += ` ${name}=${logfmtField(value)}`
  return line
}

/**
 * Writes an `Info` line of `text` with `fields` at once, on the fiber that would log it, when that gives the line
 * Effect's logging would: the fiber's loggers are exactly {@link layer}'s with a writer, `Info` passes the minimum
 * level, and the fiber has no log annotations, no log spans and no recorded span (whose ids and events the loggers
 * would add). Answers whether the line was dealt with (written, or below the minimum level); when not, log it with
 * {@link logInfoWithFields}. The access log's path: one line per request without an effect, a fiber log and the
 * loggers' wrappers.
 *
 * @since 0.1.0
 * @category utils
 */
export const writeInfoLine = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  date: Date,
  text: string,
  fields: ReadonlyArray<readonly [name: string, value: string | number]>
): boolean => {
  const direct = loggerSet(fiber.getFiberRef(FiberRef.currentLoggers)).direct
  if (direct === undefined) return false
  if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return true
  const annotations = fiber.getFiberRef(FiberRef.currentLogAnnotations)
  const spans = fiber.getFiberRef(FiberRef.currentLogSpan)
  if (HashMap.size(annotations) > 0 || List.isCons(spans)) return false
  const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
  if (span._tag === "Some" && span.value.traceId !== "noop" && span.value.traceId !== "") return false
  const options = { date, logLevel: LogLevel.Info, fiberId: fiber.id(), spans, annotations }
  direct.write(fieldsLine(direct.format, options, new FieldsMessage(text, fields)))
  return true
}

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

/** How long a line waits at most before it is written (with fewer than 64 KiB waiting). */
const flushAfterMs = 20

/**
 * A line writer for {@link layer}: whole lines to stdout, written together every 20 ms (one system call, and one
 * wake-up of the process reading the pipe, for all the access-log lines of a busy moment instead of one per turn
 * of the event loop; at most 64 KiB wait), and whatever is left when the process exits. ANSI escape sequences are
 * taken out unless stdout is a terminal. Lines of the last 20 ms before a process is killed (`SIGKILL`) are lost;
 * an exit, also on a signal the server handles, writes them.
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
    // unref'd: waiting lines do not keep the process alive; its exit writes them
    setTimeout(flushLines, flushAfterMs).unref()
  }
  if (!exitHooked) {
    exitHooked = true
    process.on("exit", flushLines)
  }
}

/**
 * Effect's tracer logger (a line logged while a span is current becomes an event of the span), with a
 * {@link FieldsMessage}'s text as the event and its fields as attributes; without a current span nothing is done,
 * as the tracer logger does.
 */
const spanEvents: Logger.Logger<unknown, void> = Logger.make((options) => {
  const message = fieldsMessage(options.message)
  if (message === undefined) return Logger.tracerLogger.log(options)
  const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
  if (span._tag === "None" || span.value._tag === "ExternalSpan") return
  return Logger.tracerLogger.log(asAnnotations(options, message))
})

/**
 * Replaces the default logger (the only one: run the program with `NodeRuntime.runMain(..., { disablePrettyLogger:
 * true })` so that no second logger prints every line again). A `text` or `json` line goes to `write` when given
 * (the production server's is {@link stdoutLines}), else to the fiber's `Console`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: LogSettings, write?: (line: string) => void): Layer.Layer<never> => {
  const lines = settings.format === "json"
    ? withFieldsMessages(Logger.jsonLogger, "json")
    : withFieldsMessages(Logger.logfmtLogger, "text")
  const main = markFieldsAware(withTraceIds(
    settings.format === "pretty"
      ? withFieldsMessages(
        settings.colors === undefined
          ? Logger.prettyLoggerDefault
          : Logger.prettyLogger({ colors: settings.colors })
      )
      : write === undefined
      ? Logger.withConsoleLog(lines)
      : Logger.map(lines, write)
  ))
  const direct: DirectLines | undefined = settings.format === "pretty" || write === undefined
    ? undefined
    : { format: settings.format, write }
  return Layer.mergeAll(
    Logger.replace(Logger.defaultLogger, direct === undefined ? main : Object.assign(main, { [directLines]: direct })),
    // span events of lines logged while a span is current: the text, the fields as attributes
    Logger.replace(Logger.tracerLogger, markFieldsAware(spanEvents)),
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
