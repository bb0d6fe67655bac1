/**
 * What the server knows of a request for its logs, metrics and error envelopes: its id, its route template and,
 * once authenticated, its account. The envelope middleware (`Envelope.ts`) attaches it as the request arrives;
 * authentication fills in the account; a node-level middleware (`@mediagate/node`'s access log) reads it when the
 * answer is sent.
 *
 * Request ids: an `X-Request-Id` header of 1–128 characters from `A–Z a–z 0–9 - _ . : + = @ /` is taken as it is
 * (a proxy's or client's id, so logs on both sides join); anything else is replaced by a new UUID. Every answer
 * carries it back in `X-Request-Id`, every error envelope in `error.request_id`, every log line of the request in
 * `request_id`.
 *
 * Kept in a `WeakMap` keyed by the request object (as the envelope keys its own per-request state): attaching and
 * reading cost a map operation, no fiber work.
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"

/**
 * The header of request ids (lower case, as Node hands headers over).
 *
 * @since 0.1.0
 * @category constants
 */
export const header = "x-request-id"

/**
 * The server's knowledge of one request.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestInfo {
  /** The request id (see the module's comment). */
  readonly id: string
  /** The route template (`/api/v1/tasks/:id`), or `Metrics.unmatchedRoute` when no route matches. */
  readonly route: string
  /** The account of the API key, once authenticated. */
  accountId: string | undefined
}

const byRequest = new WeakMap<object, RequestInfo>()

/** Whether a character code is one a request id may hold. */
const allowed = (c: number) =>
  (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ||
  c === 45 || c === 95 || c === 46 || c === 58 || c === 43 || c === 61 || c === 64 || c === 47

/**
 * Whether a client's `X-Request-Id` is taken as it is: 1–128 characters of the safe set.
 *
 * @since 0.1.0
 * @category guards
 */
export const isValidId = (value: string): boolean => {
  const length = value.length
  if (length === 0 || length > 128) return false
  for (let i = 0; i < length; i++) if (!allowed(value.charCodeAt(i))) return false
  return true
}

/**
 * A new request id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeId = (): string => randomUUID()

/**
 * The id of a request: its valid `X-Request-Id`, or a new one.
 *
 * @since 0.1.0
 * @category utils
 */
export const idOf = (headers: Readonly<Record<string, string | undefined>>): string => {
  const given = headers[header]
  return given !== undefined && isValidId(given) ? given : makeId()
}

/**
 * Attaches what is known of a request as it arrives; answers it.
 *
 * @since 0.1.0
 * @category utils
 */
export const attach = (
  request: { readonly headers: Readonly<Record<string, string | undefined>> },
  route: string
): RequestInfo => {
  const info: RequestInfo = { id: idOf(request.headers), route, accountId: undefined }
  byRequest.set(request, info)
  return info
}

/**
 * Makes `view` (a request rebuilt from `request`, e.g. with its body read) share the information of `request`.
 *
 * @since 0.1.0
 * @category utils
 */
export const alias = (view: object, info: RequestInfo): void => {
  byRequest.set(view, info)
}

/**
 * What is known of a request, if the envelope saw it.
 *
 * @since 0.1.0
 * @category utils
 */
export const get = (request: object): RequestInfo | undefined => byRequest.get(request)

/**
 * Records the account a request was authenticated for.
 *
 * @since 0.1.0
 * @category utils
 */
export const setAccount = (request: object, accountId: string): void => {
  const info = byRequest.get(request)
  if (info !== undefined) info.accountId = accountId
}
