/**
 * Log output of the Mediagate process, one line per event: `text` (the default: logfmt, `key=value` pairs) or
 * `json` (one JSON object per line, for log collectors); `pretty` is Effect's coloured multi-line logger for
 * development. Events at `MEDIAGATE_LOG_LEVEL` and above (default `Info`) are written to stdout.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

/** Log settings. */
export interface LogSettings {
  readonly format: "text" | "json" | "pretty"
  readonly level: LogLevel.LogLevel
}

/** `MEDIAGATE_LOG_FORMAT` (`text` | `json` | `pretty`) and `MEDIAGATE_LOG_LEVEL` (`Debug`, `Info`, `Warning`, `Error`, ...). */
export const config: Config.Config<LogSettings> = Config.all({
  format: Config.literal("text", "json", "pretty")("MEDIAGATE_LOG_FORMAT").pipe(Config.withDefault("text" as const)),
  level: Config.logLevel("MEDIAGATE_LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))
})

/**
 * Replaces the default logger (the only one: run the program with `NodeRuntime.runMain(..., { disablePrettyLogger:
 * true })` so that no second logger prints every line again).
 */
export const layer = (settings: LogSettings): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      settings.format === "pretty"
        ? Logger.prettyLoggerDefault
        : Logger.withConsoleLog(settings.format === "json" ? Logger.jsonLogger : Logger.logfmtLogger)
    ),
    Logger.minimumLogLevel(settings.level)
  )

/** {@link layer} from {@link config}. */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(Effect.map(config, layer))
