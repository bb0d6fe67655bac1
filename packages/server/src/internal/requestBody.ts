/**
 * The request body as the envelope middleware reads it before any route runs (decisions.md §11 "Request bodies"):
 * read once under the size limit, checked in one pass for nesting depth and NUL characters, then handed to the
 * HttpApi through a view of the request whose `text`/`json` answer what was read.
 *
 * On Node the body is read from the `IncomingMessage` directly rather than through the platform, whose reader
 * destroys the request (and with it the socket) at the limit: the client then sees a reset instead of the 413.
 * Here the rest of an oversized body is discarded while the 413 is sent, and the connection is closed only if the
 * client keeps sending after {@link drainGrace}.
 *
 * @internal
 */
import * as HttpServerError from "@effect/platform/HttpServerError"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/** How deep arrays and objects may nest in a request body. No request of the API needs more than a handful. */
export const maxJsonDepth = 64

/** How long an oversized body is still read (and discarded) after the 413, before the connection is closed. */
export const drainGrace = 5_000

/** What a body check found wrong, as the `VALIDATION_ERROR` message. */
export const tooDeepMessage = `body: arrays and objects must not nest deeper than ${maxJsonDepth} levels`
/** The message for a NUL character in a string of the body. */
export const nulMessage = "body: strings must not contain the NUL character (\\u0000)"

/**
 * The message for an unpaired surrogate (`\ud800` without its low half, or a low half alone) in a string of the body:
 * such a string is no Unicode text, and neither UTF-8 nor PostgreSQL's `jsonb` can hold it.
 */
export const surrogateMessage = (escape: string) =>
  `body: strings must be valid Unicode text: ${escape} is an unpaired surrogate`

/** The code unit of the 4 hex digits at `at`, or -1 when they are not 4 hex digits. */
const hexUnit = (text: string, at: number): number => {
  const digits = text.slice(at, at + 4)
  return /^[0-9a-fA-F]{4}$/.test(digits) ? parseInt(digits, 16) : -1
}

/**
 * Checks a JSON text in one pass without parsing it: `undefined` when fine, else the `VALIDATION_ERROR` message —
 * arrays and objects nested deeper than `maxDepth`, a NUL character (`\u0000`) or an unpaired surrogate escape
 * (`\ud800`) in any string, keys included. Both can only be written as escapes: JSON forbids raw control characters
 * in strings, and UTF-8 holds no surrogates. Syntax errors are left to `JSON.parse`.
 */
export const inspectJson = (text: string, maxDepth: number = maxJsonDepth): string | undefined => {
  const length = text.length
  let depth = 0
  // the next backslash at or after the cursor, `length` when there is none (strings jump from quote to quote; only
  // escapes need a closer look): every character is looked at a bounded number of times
  let backslash = -1
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    if (c === 34) { // a string: find its closing quote
      let from = i + 1
      for (;;) {
        const quote = text.indexOf("\"", from)
        if (quote === -1) return undefined // unterminated: JSON.parse says so
        if (backslash < from) {
          backslash = text.indexOf("\\", from)
          if (backslash === -1) backslash = length // none left: never looked for again
        }
        if (backslash > quote) {
          i = quote
          break
        }
        if (text.charCodeAt(backslash + 1) === 117) { // \uXXXX
          const unit = hexUnit(text, backslash + 2)
          if (unit === 0) return nulMessage
          if (unit >= 0xdc00 && unit <= 0xdfff) return surrogateMessage(text.slice(backslash, backslash + 6))
          if (unit >= 0xd800 && unit <= 0xdbff) {
            // a high surrogate must be followed by a low one, escaped too (raw text holds no lone surrogates)
            const low = text.charCodeAt(backslash + 6) === 92 && text.charCodeAt(backslash + 7) === 117
              ? hexUnit(text, backslash + 8)
              : -1
            if (low < 0xdc00 || low > 0xdfff) return surrogateMessage(text.slice(backslash, backslash + 6))
            from = backslash + 12
            continue
          }
        }
        from = backslash + 2 // the escaped character (a quote or a backslash included) is skipped
      }
    } else if (c === 91 || c === 123) {
      if (++depth > maxDepth) return tooDeepMessage
    } else if (c === 93 || c === 125) {
      depth--
    }
  }
  return undefined
}

/** The part of a Node `IncomingMessage` the reader uses (the server package does not depend on `node:http`). */
interface NodeBody {
  on(event: "data", listener: (chunk: Uint8Array | string) => void): unknown
  on(event: "end", listener: () => void): unknown
  on(event: "error", listener: (error: unknown) => void): unknown
  off(event: string, listener: (...args: Array<any>) => void): unknown
  resume(): unknown
  destroy(): unknown
  readonly readableEnded: boolean
}

const isNodeBody = (source: unknown): source is NodeBody =>
  typeof source === "object" && source !== null && "readableEnded" in source && "socket" in source &&
  typeof (source as { on?: unknown }).on === "function" && typeof (source as { resume?: unknown }).resume === "function"

/** A body over the limit. */
export const TooLarge: unique symbol = Symbol.for("@mediagate/server/RequestBody/TooLarge")

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A body as read: its bytes and their UTF-8 text. */
export interface Body {
  readonly bytes: Uint8Array
  readonly text: string
}

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.length
  }
  return bytes
}

/** Reads a Node request body up to `limit` bytes; beyond, stops keeping it, drains the rest and answers TooLarge. */
const readNode = (request: HttpServerRequest.HttpServerRequest, source: NodeBody, limit: number) =>
  Effect.async<Body | typeof TooLarge, HttpServerError.RequestError>((resume) => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    const stop = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    function onData(chunk: Uint8Array | string) {
      const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk
      size += bytes.length
      if (size <= limit) return void chunks.push(bytes)
      stop()
      // the rest is read and dropped while the 413 goes out, so the client can read it; a client that is still
      // sending after the grace period loses the connection
      const timer = setTimeout(() => source.destroy(), drainGrace)
      timer.unref?.()
      source.on("end", () => clearTimeout(timer))
      source.on("error", () => clearTimeout(timer))
      source.resume()
      resume(Effect.succeed(TooLarge))
    }
    function onEnd() {
      stop()
      const bytes = concat(chunks, size)
      resume(Effect.succeed({ bytes, text: decoder.decode(bytes) }))
    }
    function onError(cause: unknown) {
      stop()
      resume(Effect.fail(new HttpServerError.RequestError({ request, reason: "Decode", cause })))
    }
    source.on("data", onData)
    source.on("end", onEnd)
    source.on("error", onError)
    return Effect.sync(stop)
  })

/**
 * Reads a web request's body (`Http.toWebHandler`) chunk by chunk up to `limit` bytes: beyond, it stops reading
 * (the stream is cancelled) and answers TooLarge, so an endless chunked body is never held in memory. A request
 * without a body reads as empty.
 */
const readWeb = (request: HttpServerRequest.HttpServerRequest, source: Request, limit: number) => {
  if (source.body === null) return Effect.succeed<Body>({ bytes: new Uint8Array(0), text: "" })
  const read = { size: 0, chunks: [] as Array<Uint8Array> }
  return Effect.map(
    Stream.runFoldWhile(request.stream, read, (state) => state.size <= limit, (state, chunk) => {
      state.size += chunk.length
      if (state.size <= limit) state.chunks.push(chunk)
      return state
    }),
    ({ chunks, size }): Body | typeof TooLarge => {
      if (size > limit) return TooLarge
      const bytes = concat(chunks, size)
      return { bytes, text: decoder.decode(bytes) }
    }
  )
}

const isWebRequest = (source: unknown): source is Request => typeof Request === "function" && source instanceof Request

/**
 * Whether a request comes with a body: on Node, announced by `Content-Length` (above 0) or `Transfer-Encoding`; a
 * web request (`Http.toWebHandler`) says it by its `body` (a streamed one announces no length).
 */
export const present = (request: HttpServerRequest.HttpServerRequest): boolean =>
  isWebRequest(request.source)
    ? request.source.body !== null
    : request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0

/**
 * Reads the body of a request under `limit` bytes. Node requests are read as described in the module's comment,
 * web requests by {@link readWeb}; any other source through the platform.
 */
export const read = (
  request: HttpServerRequest.HttpServerRequest,
  limit: number
): Effect.Effect<Body | typeof TooLarge, HttpServerError.RequestError> => {
  const source = request.source
  if (isNodeBody(source) && !source.readableEnded) return readNode(request, source, limit)
  if (isWebRequest(source)) return readWeb(request, source, limit)
  return Effect.map(request.text, (text) => {
    const bytes = encoder.encode(text)
    return bytes.length > limit ? TooLarge : { bytes, text }
  })
}

/**
 * The request as the HttpApi sees it once the body is read: the same request, with `text`, `json`, `arrayBuffer`
 * and `stream` answering the body read (the source stream is consumed), also after `modify`.
 */
export const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  body: Body
): HttpServerRequest.HttpServerRequest => {
  const onError = (cause: unknown) => new HttpServerError.RequestError({ request, reason: "Decode", cause })
  // each made when asked for (the HttpApi asks for `json` only)
  return Object.create(request, {
    text: { get: () => Effect.succeed(body.text) },
    json: {
      get: () => Effect.try({ try: (): unknown => body.text === "" ? null : JSON.parse(body.text), catch: onError })
    },
    arrayBuffer: {
      get: () =>
        Effect.sync(() => body.bytes.buffer.slice(body.bytes.byteOffset, body.bytes.byteOffset + body.bytes.length))
    },
    stream: { get: () => Stream.succeed(body.bytes) },
    modify: {
      value: (options: Parameters<HttpServerRequest.HttpServerRequest["modify"]>[0]) =>
        withBody(request.modify(options), body)
    }
  })
}
