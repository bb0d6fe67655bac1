/**
 * The transport: one `fetch` per attempt, the envelope read into data or a {@link MediagateError}, retries of
 * idempotent calls on 429/503 (and connection failures) honouring `Retry-After`, one deadline per call. A creating
 * call always sends an `Idempotency-Key` (the caller's, or one made per call), the same on each of its attempts.
 */
import { MediagateError } from "../MediagateError.js"

/** Settings shared by every call of a client. */
export interface Transport {
  readonly baseUrl: string
  readonly apiKey: string | undefined
  readonly fetch: typeof globalThis.fetch
  readonly maxRetries: number
  readonly timeout: number
  readonly headers: Readonly<Record<string, string>>
}

/** Options of one call. */
export interface CallOptions {
  /** Cancels the call. */
  readonly signal?: AbortSignal | undefined
  /** Milliseconds for the whole call, retries included (default: the client's `timeout`). */
  readonly timeout?: number | undefined
  /** Sent as `Idempotency-Key` on creating calls (default: a new random key per call). */
  readonly idempotencyKey?: string | undefined
}

/** What a call sends. */
export interface Call {
  readonly method: string
  readonly path: string
  readonly params?: Readonly<Record<string, string>> | undefined
  readonly query?: object | undefined
  readonly body?: unknown
  /** Creates something (a task, a key, a webhook): sent with an `Idempotency-Key`, and so safe to retry. */
  readonly creates?: boolean | undefined
}

/**
 * A new `Idempotency-Key`: a random UUID (`crypto.randomUUID`; where it is missing, as on a page served over plain
 * HTTP, version-4 bits over `crypto.getRandomValues`, or `Math.random` without Web Crypto).
 */
export const newIdempotencyKey = (): string => {
  const crypto = globalThis.crypto as Crypto | undefined
  if (typeof crypto?.randomUUID === "function") return crypto.randomUUID()
  const bytes = new Uint8Array(16)
  if (typeof crypto?.getRandomValues === "function") crypto.getRandomValues(bytes)
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256)
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

const timeoutReason = Symbol("timeout")

/** A signal that fires on the caller's signal or after `timeout` ms, and how to tell which fired. */
export interface Deadline {
  readonly signal: AbortSignal
  readonly error: () => MediagateError
  readonly clear: () => void
}

/** Links the caller's signal with a timer. */
export const deadline = (signal: AbortSignal | undefined, timeout: number): Deadline => {
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal?.reason)
  if (signal?.aborted === true) controller.abort(signal.reason)
  else signal?.addEventListener("abort", onAbort, { once: true })
  const timer = Number.isFinite(timeout) ? setTimeout(() => controller.abort(timeoutReason), timeout) : undefined
  return {
    signal: controller.signal,
    error: () =>
      controller.signal.reason === timeoutReason
        ? new MediagateError({ code: "TIMEOUT", message: `no answer within ${timeout} ms`, status: 0 })
        : new MediagateError({ code: "ABORTED", message: "aborted", status: 0, cause: controller.signal.reason }),
    clear: () => {
      if (timer !== undefined) clearTimeout(timer)
      signal?.removeEventListener("abort", onAbort)
    }
  }
}

/** Waits `ms`, or rejects when `signal` fires. */
export const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal.addEventListener("abort", onAbort, { once: true })
  })

/** `Retry-After` in seconds (delta-seconds or an HTTP date), if given. */
export const retryAfterSeconds = (value: string | null, now = Date.now()): number | undefined => {
  if (value === null) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

/** The URL of a call. */
export const urlOf = (baseUrl: string, call: Call): string => {
  const path = call.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = call.params?.[name]
    if (value === undefined) throw new TypeError(`missing path parameter ${name}`)
    return encodeURIComponent(value)
  })
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(call.query ?? {})) {
    if (value !== undefined && value !== null) search.append(name, String(value))
  }
  const query = search.toString()
  return `${baseUrl}${path}${query === "" ? "" : `?${query}`}`
}

const retryable = (status: number) => status === 429 || status === 503

/** Backoff before retry `attempt` (1-based) when the server gave no `Retry-After`: 0.5 s, 1 s, 2 s … with jitter. */
const backoff = (attempt: number) => Math.min(8_000, 500 * 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4)

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The error of a non-2xx answer: the envelope's code and message, or `INVALID_RESPONSE`. */
export const errorOf = (response: Response, body: unknown): MediagateError => {
  const requestHeader = response.headers.get("x-request-id") ?? undefined
  const retryAfter = retryAfterSeconds(response.headers.get("retry-after"))
  const error = typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined
  if (typeof error === "object" && error !== null) {
    const { code, message, request_id } = error as { code?: unknown; message?: unknown; request_id?: unknown }
    if (typeof code === "string" && typeof message === "string") {
      return new MediagateError({
        code,
        message,
        status: response.status,
        requestId: typeof request_id === "string" ? request_id : requestHeader,
        retryAfter
      })
    }
  }
  return new MediagateError({
    code: "INVALID_RESPONSE",
    message: `HTTP ${response.status} without an error envelope`,
    status: response.status,
    requestId: requestHeader,
    retryAfter
  })
}

/** The headers of every request: `accept`, the client's own headers, and its API key. */
export const headersOf = (transport: Transport, accept: string): Record<string, string> => {
  const headers: Record<string, string> = { accept, ...transport.headers }
  if (transport.apiKey !== undefined) headers["authorization"] = `Bearer ${transport.apiKey}`
  return headers
}

/**
 * Sends a call and answers the success envelope. Retries (up to `maxRetries`) when the call is idempotent (GET,
 * DELETE, or with an idempotency key: every creating call) and the answer is 429 or 503 or the connection failed.
 */
export const send = async (transport: Transport, call: Call, options: CallOptions = {}): Promise<unknown> => {
  const url = urlOf(transport.baseUrl, call)
  const headers = headersOf(transport, "application/json")
  if (call.body !== undefined) headers["content-type"] = "application/json"
  // one key per call, kept by its retries: a retry after a lost answer is the same request, not a second one
  const key = options.idempotencyKey ?? (call.creates === true ? newIdempotencyKey() : undefined)
  if (key !== undefined) headers["idempotency-key"] = key
  const body = call.body === undefined ? undefined : JSON.stringify(call.body)
  const idempotent = call.method === "GET" || call.method === "DELETE" || key !== undefined
  const timeout = options.timeout ?? transport.timeout
  const started = Date.now()
  const limit = deadline(options.signal, timeout)
  try {
    for (let attempt = 0;; attempt++) {
      let response: Response
      try {
        response = await transport.fetch(url, {
          method: call.method,
          headers,
          signal: limit.signal,
          ...(body === undefined ? {} : { body })
        })
      } catch (cause) {
        if (limit.signal.aborted) throw limit.error()
        const failure = new MediagateError({ code: "NETWORK_ERROR", message: String(cause), status: 0, cause })
        if (!idempotent || attempt >= transport.maxRetries) throw failure
        await sleep(backoff(attempt + 1), limit.signal).catch(() => Promise.reject(limit.error()))
        continue
      }
      const text = await response.text().catch((cause) => {
        throw limit.signal.aborted
          ? limit.error()
          : new MediagateError({ code: "NETWORK_ERROR", message: String(cause), status: response.status, cause })
      })
      const parsed = parse(text)
      if (response.ok) {
        if (typeof parsed !== "object" || parsed === null) throw errorOf(response, parsed)
        return parsed
      }
      const error = errorOf(response, parsed)
      if (!idempotent || !retryable(response.status) || attempt >= transport.maxRetries) throw error
      const wait = error.retryAfter === undefined ? backoff(attempt + 1) : error.retryAfter * 1000
      // a wait past the call's deadline would only end in a timeout: the server's answer is the better error
      if (Date.now() + wait >= started + timeout) throw error
      await sleep(wait, limit.signal).catch(() => Promise.reject(limit.error()))
    }
  } finally {
    limit.clear()
  }
}
