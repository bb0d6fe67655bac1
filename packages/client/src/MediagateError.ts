/**
 * The one error class of the client: every failure (an API error envelope, a network failure, a timeout, a
 * download or a webhook verification failure) is a {@link MediagateError} with a `code`.
 *
 * @since 0.1.0
 */
import type { ApiErrorCode } from "./Types.js"

/**
 * Codes of failures that are not an API error envelope (`status` is then the HTTP status seen, or 0).
 *
 * @since 0.1.0
 * @category errors
 */
export type ClientErrorCode =
  /** No answer: the connection failed. */
  | "NETWORK_ERROR"
  /** The call (or `run` / `waitFor`) took longer than its `timeout`. */
  | "TIMEOUT"
  /** The caller's `AbortSignal` fired. */
  | "ABORTED"
  /** An answer that is not the API's envelope (e.g. a proxy's HTML error page). */
  | "INVALID_RESPONSE"
  /** `tasks.stream`: no event stream to read (a `fetch` without response streams, or an answer of another type). */
  | "STREAM_UNSUPPORTED"
  /** A download answered fewer or more bytes than the result item's `size_bytes`. */
  | "DOWNLOAD_SIZE_MISMATCH"
  /** `webhooks.verify`: a signature or timestamp header is missing. */
  | "WEBHOOK_MISSING_HEADER"
  /** `webhooks.verify`: the signature does not match the body and secret. */
  | "WEBHOOK_BAD_SIGNATURE"
  /** `webhooks.verify`: the timestamp is further than the tolerance from now. */
  | "WEBHOOK_TIMESTAMP_OUT_OF_RANGE"
  /** `webhooks.verify`: the signed body is not JSON. */
  | "WEBHOOK_INVALID_BODY"

/**
 * Every code a {@link MediagateError} carries: the API's codes, the client's own, and codes of newer servers.
 *
 * @since 0.1.0
 * @category errors
 */
export type ErrorCode = ApiErrorCode | ClientErrorCode | (string & {})

/**
 * Fields of a {@link MediagateError}.
 *
 * @since 0.1.0
 * @category models
 */
export interface MediagateErrorFields {
  readonly code: ErrorCode
  readonly message: string
  /** The HTTP status of the answer; 0 when there was none (network, timeout, abort, webhook verification). */
  readonly status: number
  /** The server's request id (`error.request_id` or the `X-Request-Id` header): quote it when reporting a problem. */
  readonly requestId?: string | undefined
  /** Seconds the server asked to wait (`Retry-After` of a 429 or 503). */
  readonly retryAfter?: number | undefined
  /** What caused it (a network error, the abort reason). */
  readonly cause?: unknown
}

/**
 * A failed call. `code` is the API envelope's `error.code` or one of {@link ClientErrorCode}.
 *
 * @since 0.1.0
 * @category errors
 */
export class MediagateError extends Error {
  /**
   * Always `"MediagateError"` (what {@link MediagateError.is} checks across copies of the package).
   *
   * @since 0.1.0
   */
  override readonly name = "MediagateError"
  /**
   * The API envelope's `error.code`, or one of {@link ClientErrorCode}.
   *
   * @since 0.1.0
   */
  readonly code: ErrorCode
  /**
   * The HTTP status of the answer; 0 when there was none (network, timeout, abort, webhook verification).
   *
   * @since 0.1.0
   */
  readonly status: number
  /**
   * The server's request id (`error.request_id` or the `X-Request-Id` header): quote it when reporting a problem.
   *
   * @since 0.1.0
   */
  readonly requestId: string | undefined
  /**
   * Seconds the server asked to wait (`Retry-After` of a 429 or 503).
   *
   * @since 0.1.0
   */
  readonly retryAfter: number | undefined

  constructor(fields: MediagateErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause })
    this.code = fields.code
    this.status = fields.status
    this.requestId = fields.requestId
    this.retryAfter = fields.retryAfter
  }

  /**
   * Whether `u` is a {@link MediagateError} (also across copies of the package).
   *
   * @since 0.1.0
   */
  static is(u: unknown): u is MediagateError {
    return u instanceof MediagateError || (u instanceof Error && u.name === "MediagateError" && "code" in u)
  }
}
