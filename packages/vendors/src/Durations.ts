/**
 * Durations as the configuration writes them (decisions.md §10): `500ms`, `2s`, `1m`, `1h` (and `1d`).
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"

const units: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * Milliseconds of a duration such as `1h` or `500ms`, or the reason it is not one.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseDuration = (text: string): Either.Either<number, string> => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/i.exec(text)
  if (match === null) return Either.left(`"${text}" is not a duration (write e.g. 500ms, 2s, 1m, 1h)`)
  const ms = Number(match[1]) * units[match[2]!.toLowerCase()]!
  return ms > 0 ? Either.right(Math.round(ms)) : Either.left(`"${text}" must be more than zero`)
}

/**
 * A duration variable in milliseconds, with a default.
 *
 * @since 0.1.0
 * @category config
 */
export const durationConfig = (name: string, fallback: string): Config.Config<number> =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseDuration(text), (message) => ConfigError.InvalidData([name], message))
    )
  )
