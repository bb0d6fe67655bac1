/**
 * The worker's settings from Effect `Config`, durations written as `10ms`, `30s` or `1m`.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import type { WorkerOptions } from "../../Worker.js"

/** `500ms`, `2s`, `1m`: a duration in ms, or undefined. */
const parseMs = (text: string): number | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)\s*$/.exec(text)
  return match === null
    ? undefined
    : Math.round(Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] as "ms" | "s" | "m"])
}

/** A duration setting (`10ms`, `30s`, `1m`) with a default, valid when it parses and `valid` accepts its milliseconds. */
const durationSetting = (name: string, fallback: string, message: string, valid: (ms: number) => boolean) =>
  Config.string(name).pipe(
    Config.validate({
      message,
      validation: (text) => {
        const ms = parseMs(text)
        return ms !== undefined && valid(ms)
      }
    }),
    Config.withDefault(fallback),
    Config.map((text) => Duration.millis(parseMs(text)!))
  )

/**
 * Worker settings from Effect `Config` (decisions.md §10): `MEDIAGATE_WORKER_CONCURRENCY` (default 32),
 * `MEDIAGATE_WORKER_LEASE` (default `30s`, at least `1s`: how long a task claimed by a process that died stays
 * unclaimed) and `MEDIAGATE_WORKER_CLAIM_INTERVAL` (default `10ms`, at most `1s`: {@link WorkerOptions.claimInterval}).
 */
export const config: Config.Config<WorkerOptions> = Config.all({
  concurrency: Config.integer("MEDIAGATE_WORKER_CONCURRENCY").pipe(
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(32)
  ),
  lease: durationSetting(
    "MEDIAGATE_WORKER_LEASE",
    "30s",
    "must be a duration of at least 1s, like 30s or 1m",
    (ms) => ms >= 1000
  ),
  claimInterval: durationSetting(
    "MEDIAGATE_WORKER_CLAIM_INTERVAL",
    "10ms",
    "must be a duration from 0ms to 1s, like 10ms",
    (ms) => ms >= 0 && ms <= 1000
  )
})
