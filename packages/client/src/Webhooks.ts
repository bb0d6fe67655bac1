/**
 * Receiver-side verification of webhook deliveries with Web Crypto (Node 20+, Deno, Bun, browsers, edge runtimes),
 * for both signature schemes the server sends on every configured-webhook delivery (docs/webhooks.md):
 *
 * - Mediagate's: `X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<X-Webhook-Timestamp>.<raw body>">`, keyed with
 *   the secret string's UTF-8 bytes;
 * - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`
 *   (a space-separated list), keyed with the base64-decoded part of the secret after `whsec_`.
 *
 * The signature is checked with `crypto.subtle.verify` (constant time), then the timestamp against the tolerance.
 *
 * @since 0.1.0
 */
import { MediagateError } from "./MediagateError.js"
import type { WebhookEvent } from "./Types.js"

/**
 * Headers as a receiver sees them: a `Headers` object or a plain record (any case; arrays take their first value).
 *
 * @since 0.1.0
 * @category webhooks
 */
export type IncomingHeaders = Headers | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/**
 * Options of {@link verifyWebhook}.
 *
 * @since 0.1.0
 * @category webhooks
 */
export interface VerifyOptions {
  /** Allowed clock difference in seconds (default 300). */
  readonly toleranceSeconds?: number | undefined
  /** The receiver's time in epoch ms (default `Date.now()`). */
  readonly now?: number | undefined
  /**
   * Which scheme to check: `"auto"` (default) checks Mediagate's when its header is present, else Standard Webhooks.
   */
  readonly scheme?: "auto" | "mediagate" | "standard" | undefined
}

/**
 * Receivers reject timestamps further than this from their clock (seconds).
 *
 * @since 0.1.0
 * @category webhooks
 */
export const defaultToleranceSeconds = 300

const header = (headers: IncomingHeaders, name: string): string | undefined => {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return headers.get(name) ?? undefined
  const record = headers as Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  const key = Object.keys(record).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : record[key]
  return typeof value === "string" ? value : value?.[0]
}

const encoder = new TextEncoder()

const bytesOf = (body: string | Uint8Array | ArrayBuffer): Uint8Array =>
  typeof body === "string" ? encoder.encode(body) : body instanceof Uint8Array ? body : new Uint8Array(body)

const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array<ArrayBuffer> => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.byteLength
  }
  return out
}

const fromHex = (hex: string): Uint8Array<ArrayBuffer> | undefined => {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return undefined
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return out
}

const fromBase64 = (text: string): Uint8Array<ArrayBuffer> | undefined => {
  try {
    const binary = atob(text)
    const out = new Uint8Array(binary.length)
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i)
    return out
  } catch {
    return undefined
  }
}

const hmacVerify = async (
  key: Uint8Array<ArrayBuffer>,
  signature: Uint8Array<ArrayBuffer>,
  data: Uint8Array<ArrayBuffer>
) => {
  const cryptoKey = await globalThis.crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify"
  ])
  return globalThis.crypto.subtle.verify("HMAC", cryptoKey, signature, data)
}

const fail = (
  code: "WEBHOOK_MISSING_HEADER" | "WEBHOOK_BAD_SIGNATURE" | "WEBHOOK_TIMESTAMP_OUT_OF_RANGE" | "WEBHOOK_INVALID_BODY",
  message: string
) => new MediagateError({ code, message, status: 0 })

/**
 * Verifies a webhook delivery: `rawBody` exactly as received (before any JSON parsing), its headers and the
 * webhook's secret (`whsec_…`, shown when it was registered). Resolves with the parsed event; rejects with a
 * {@link MediagateError} whose code starts with `WEBHOOK_`.
 *
 * @since 0.1.0
 * @category webhooks
 */
export const verifyWebhook = async (
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: IncomingHeaders,
  secret: string,
  options: VerifyOptions = {}
): Promise<WebhookEvent> => {
  const body = bytesOf(rawBody)
  const scheme = options.scheme ?? "auto"
  const useMediagate = scheme === "mediagate" ||
    (scheme === "auto" && header(headers, "x-webhook-signature") !== undefined)
  const timestampName = useMediagate ? "x-webhook-timestamp" : "webhook-timestamp"
  const signatureName = useMediagate ? "x-webhook-signature" : "webhook-signature"
  const timestampText = header(headers, timestampName)
  const signature = header(headers, signatureName)
  if (timestampText === undefined || signature === undefined) {
    throw fail("WEBHOOK_MISSING_HEADER", `${signatureName} and ${timestampName} are required`)
  }
  if (!/^\d{1,12}$/.test(timestampText)) {
    throw fail("WEBHOOK_TIMESTAMP_OUT_OF_RANGE", `${timestampName} is not Unix seconds`)
  }
  let valid = false
  if (useMediagate) {
    const hex = /^sha256=(.+)$/.exec(signature)?.[1]
    const expected = hex === undefined ? undefined : fromHex(hex)
    valid = expected !== undefined &&
      await hmacVerify(concat(encoder.encode(secret)), expected, concat(encoder.encode(`${timestampText}.`), body))
  } else {
    const id = header(headers, "webhook-id")
    if (id === undefined) throw fail("WEBHOOK_MISSING_HEADER", "webhook-id is required")
    const key = fromBase64(secret.replace(/^whsec_/, ""))
    if (key === undefined) throw fail("WEBHOOK_BAD_SIGNATURE", "the secret is not whsec_ + base64")
    const data = concat(encoder.encode(`${id}.${timestampText}.`), body)
    for (const candidate of signature.split(" ")) {
      const [version, value] = candidate.split(",", 2)
      const expected = version === "v1" && value !== undefined ? fromBase64(value) : undefined
      if (expected !== undefined && await hmacVerify(key, expected, data)) {
        valid = true
        break
      }
    }
  }
  if (!valid) throw fail("WEBHOOK_BAD_SIGNATURE", "signature does not match")
  const tolerance = options.toleranceSeconds ?? defaultToleranceSeconds
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000)
  if (Math.abs(nowSeconds - Number(timestampText)) > tolerance) {
    throw fail("WEBHOOK_TIMESTAMP_OUT_OF_RANGE", `timestamp is more than ${tolerance} s away from now`)
  }
  try {
    return JSON.parse(new TextDecoder().decode(body)) as WebhookEvent
  } catch {
    throw fail("WEBHOOK_INVALID_BODY", "body is not JSON")
  }
}
