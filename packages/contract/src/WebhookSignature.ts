/**
 * Webhook signatures (decisions.md §6): signing for the sender, verification for receivers.
 *
 * - Spec header: `X-Webhook-Signature: sha256=<hex HMAC-SHA256 over "<timestamp>.<raw body>">`, keyed with the
 *   secret string's UTF-8 bytes; `X-Webhook-Timestamp` in Unix seconds.
 * - Standard Webhooks headers: `webhook-signature: v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<body>">`, keyed
 *   with the base64-decoded part of the secret after `whsec_`.
 *
 * Receivers verify the raw body (the exact bytes received, before any JSON parsing): {@link verify} in Effect (the
 * time from Effect's `Clock`), {@link verifyAt} elsewhere (the receiver's clock passed in).
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHmac, timingSafeEqual } from "node:crypto"

/**
 * Receivers reject timestamps further than this from their clock (seconds).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultToleranceSeconds = 300

/**
 * Why a delivery failed verification.
 *
 * @since 0.1.0
 * @category errors
 */
export class WebhookVerificationError extends Schema.TaggedError<WebhookVerificationError>()(
  "WebhookVerificationError",
  {
    reason: Schema.Literal("missing_header", "bad_signature", "timestamp_out_of_range", "invalid_body"),
    message: Schema.String
  }
) {}

const hmac = (key: Uint8Array | string, payload: string) => createHmac("sha256", key).update(payload, "utf8")

/**
 * The spec's signature header value for a timestamp (Unix seconds) and raw body.
 *
 * @since 0.1.0
 * @category utils
 */
export const sign = (secret: string, timestamp: number, body: string): string =>
  `sha256=${hmac(secret, `${timestamp}.${body}`).digest("hex")}`

const standardKey = (secret: string): Buffer => Buffer.from(secret.replace(/^whsec_/, ""), "base64")

/**
 * The Standard Webhooks `webhook-signature` value for an event id, timestamp and raw body.
 *
 * @since 0.1.0
 * @category utils
 */
export const signStandard = (secret: string, id: string, timestamp: number, body: string): string =>
  `v1,${hmac(standardKey(secret), `${id}.${timestamp}.${body}`).digest("base64")}`

const safeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  // compare equal-length buffers only; a length mismatch is a mismatch, decided without an early byte exit
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Headers as a receiver sees them (any case; arrays take their first value).
 *
 * @since 0.1.0
 * @category models
 */
export type IncomingHeaders =
  | Headers
  | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const header = (headers: IncomingHeaders, name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : headers[key]
  return typeof value === "string" ? value : value?.[0]
}

/**
 * Options of {@link verify} and {@link verifyAt}.
 *
 * @since 0.1.0
 * @category models
 */
export interface VerifyOptions {
  /** The webhook's secret (`whsec_…`), as shown at registration. */
  readonly secret: string
  /** The request headers. */
  readonly headers: IncomingHeaders
  /** The raw request body, exactly as received. */
  readonly body: string
  /** Allowed clock difference in seconds (default 300). */
  readonly toleranceSeconds?: number
}

/**
 * Verifies a configured-webhook delivery at `now` (epoch ms): the `X-Webhook-Signature` HMAC (constant-time compare)
 * and a timestamp no further than the tolerance from `now`. Answers the parsed event body, or why it was rejected.
 *
 * @since 0.1.0
 * @category utils
 */
export const verifyAt = (
  options: VerifyOptions & { readonly now: number }
): Either.Either<unknown, WebhookVerificationError> => {
  const fail = (reason: WebhookVerificationError["reason"], message: string) =>
    Either.left(new WebhookVerificationError({ reason, message }))
  const signature = header(options.headers, "x-webhook-signature")
  const timestampText = header(options.headers, "x-webhook-timestamp")
  if (signature === undefined || timestampText === undefined) {
    return fail("missing_header", "X-Webhook-Signature and X-Webhook-Timestamp are required")
  }
  if (!/^\d{1,12}$/.test(timestampText)) {
    return fail("timestamp_out_of_range", "X-Webhook-Timestamp is not Unix seconds")
  }
  const timestamp = Number(timestampText)
  const tolerance = options.toleranceSeconds ?? defaultToleranceSeconds
  const nowSeconds = Math.floor(options.now / 1000)
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    return fail("timestamp_out_of_range", `timestamp is more than ${tolerance} s away from now`)
  }
  if (!safeEqual(signature, sign(options.secret, timestamp, options.body))) {
    return fail("bad_signature", "signature does not match")
  }
  return Either.try({
    try: () => JSON.parse(options.body),
    catch: () => new WebhookVerificationError({ reason: "invalid_body", message: "body is not JSON" })
  })
}

/**
 * {@link verifyAt} at the time of Effect's `Clock`.
 *
 * @since 0.1.0
 * @category utils
 */
export const verify = (options: VerifyOptions): Effect.Effect<unknown, WebhookVerificationError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => verifyAt({ ...options, now }))
