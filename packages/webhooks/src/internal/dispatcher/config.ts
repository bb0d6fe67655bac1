/**
 * The webhook settings from the environment (Effect `Config`): the retry schedule, the attempt's time limit and
 * whether private addresses may be called, with the parsers of their durations.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import type * as Duration from "effect/Duration"
import * as Either from "effect/Either"

/** Parses `500ms`, `2s`, `1m`, `1h` (decisions.md §10) into ms, or undefined. */
export const parseDurationMs = (text: string): number | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(text)
  if (match === null) return undefined
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"]
  return Math.round(Number(match[1]) * unit)
}

/** Parses a comma-separated retry schedule (`1m,5m,30m`; empty for no retries). */
export const parseSchedule = (text: string): Either.Either<ReadonlyArray<number>, string> => {
  if (text.trim() === "") return Either.right([])
  const parts = text.split(",").map(parseDurationMs)
  return parts.every((n): n is number => n !== undefined)
    ? Either.right(parts)
    : Either.left("must be comma-separated durations like 1m,5m,30m")
}

/** Webhook settings from the environment. */
export interface WebhookSettings {
  readonly retrySchedule: ReadonlyArray<Duration.DurationInput>
  readonly timeout: Duration.DurationInput
  readonly allowPrivate: boolean
}

/**
 * `MEDIAGATE_WEBHOOK_RETRY_SCHEDULE` (default `1m,5m,30m`), `MEDIAGATE_WEBHOOK_TIMEOUT` (default `10s`),
 * `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE` (default false).
 */
export const config: Config.Config<WebhookSettings> = Config.all({
  retrySchedule: Config.string("MEDIAGATE_WEBHOOK_RETRY_SCHEDULE").pipe(
    Config.withDefault("1m,5m,30m"),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseSchedule(text), (m) => ConfigError.InvalidData(["MEDIAGATE_WEBHOOK_RETRY_SCHEDULE"], m))
    )
  ),
  timeout: Config.string("MEDIAGATE_WEBHOOK_TIMEOUT").pipe(
    Config.withDefault("10s"),
    Config.mapOrFail((text) => {
      const ms = parseDurationMs(text)
      return ms === undefined || ms <= 0
        ? Either.left(ConfigError.InvalidData(["MEDIAGATE_WEBHOOK_TIMEOUT"], "must be a duration like 10s"))
        : Either.right(ms)
    })
  ),
  allowPrivate: Config.boolean("MEDIAGATE_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false))
})
