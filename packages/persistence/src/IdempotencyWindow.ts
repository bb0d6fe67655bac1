/**
 * The one `Idempotency-Key` rule, shared by the three stores that remember keys (tasks, API keys, webhooks), each
 * in its own table: a key is remembered for {@link duration} (24 h) from the request that used it first. Within
 * that window the same key with the same fingerprint (a digest of the request) replays the original answer and
 * another fingerprint is refused; a record as old as the window, or older, has expired and the key is free again.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import { createHash } from "node:crypto"

/**
 * How long an `Idempotency-Key` is remembered: 24 hours.
 *
 * @since 0.1.0
 * @category constants
 */
export const duration: Duration.Duration = Duration.hours(24)

/**
 * {@link duration} in milliseconds.
 *
 * @since 0.1.0
 * @category constants
 */
export const millis: number = Duration.toMillis(duration)

/**
 * The start of the window at `now` (epoch ms): records created at or before it have expired.
 *
 * @since 0.1.0
 * @category utils
 */
export const start = (now: number): number => now - millis

/**
 * Whether a record created at `createdAt` is inside the window that starts at `windowStart` (see {@link start}).
 *
 * @since 0.1.0
 * @category utils
 */
export const isLive = (createdAt: number, windowStart: number): boolean => createdAt > windowStart

/**
 * An `Idempotency-Key` claim: the same key with the same fingerprint replays, another fingerprint is refused.
 *
 * @since 0.1.0
 * @category models
 */
export interface Claim {
  readonly key: string
  /** A digest of what the key was sent with (endpoint and body). */
  readonly fingerprint: string
  /** The start of the window ({@link start} of the request's time): older records are forgotten. */
  readonly notBefore: number
}

/**
 * A claim of `key` at `now` (epoch ms) for a request made of `parts` (fingerprint: SHA-256 of their JSON).
 *
 * @since 0.1.0
 * @category utils
 */
export const claim = (key: string, parts: ReadonlyArray<unknown>, now: number): Claim => ({
  key,
  fingerprint: createHash("sha256").update(JSON.stringify(parts)).digest("base64url"),
  notBefore: start(now)
})

/**
 * What a stored record means for a claim: none or expired, the same request again, or another request.
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict = "Fresh" | "Replay" | "Reused"

/**
 * Judges the record a key holds (if any) against a claim of that key.
 *
 * @since 0.1.0
 * @category utils
 */
export const judge = (
  record: { readonly fingerprint: string; readonly createdAt: number } | undefined,
  claim: { readonly fingerprint: string; readonly notBefore: number }
): Verdict =>
  record === undefined || !isLive(record.createdAt, claim.notBefore)
    ? "Fresh"
    : record.fingerprint === claim.fingerprint
    ? "Replay"
    : "Reused"

/**
 * The message of a refused reuse (`409 IDEMPOTENCY_KEY_REUSED`).
 *
 * @since 0.1.0
 * @category constants
 */
export const reusedMessage = "Idempotency-Key was already used with a different request"
