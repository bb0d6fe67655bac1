/**
 * Mediagate on plain Node servers: the `503` answer before the stack is ready, and an Express/Connect middleware
 * around a `node:http` listener.
 *
 * The middleware computes Mediagate's path from `originalUrl` minus the mount path (`baseUrl`), so it works
 * mounted anywhere (`app.use("/media", mediagate.middleware)`; set `publicBaseUrl` to include the prefix); hosts
 * that pass the full URL on (`node:http`, Fastify, Hono) take Mediagate's URL from {@link urlBelow}. It
 * reads the raw body itself; when a body parser such as `express.json()` already consumed the stream, the body
 * is replayed from what the parser kept (`rawBody` when an app saves it, else the parsed value re-encoded as
 * JSON), so Mediagate validates exactly what the client sent. Mount it before body parsers when you can: a
 * parser's own limits and errors apply first otherwise.
 *
 * @since 0.1.0
 */
import { Errors } from "@mediagate/contract"
import * as Schema from "effect/Schema"
import { IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"

/**
 * A `node:http` request listener.
 *
 * @since 0.1.0
 * @category models
 */
export type Listener = (request: IncomingMessage, response: ServerResponse) => void

/**
 * An Express/Connect middleware.
 *
 * @since 0.1.0
 * @category models
 */
export type Middleware = (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => void

/**
 * The paths Mediagate serves (each with everything below it).
 *
 * @since 0.1.0
 * @category constants
 */
export const paths: ReadonlyArray<string> = [
  "/api/v1",
  "/admin/v1",
  "/files",
  "/docs",
  "/healthz",
  "/readyz",
  "/dashboard"
]

/**
 * Whether a request path (without query) is one of Mediagate's.
 *
 * @since 0.1.0
 * @category guards
 */
export const isMediagatePath = (path: string): boolean =>
  paths.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))

/**
 * The URL Mediagate serves for a request of a host that mounts it under `prefix` and passes the full URL on
 * (`node:http`, Fastify, Hono): below `/media`, `/media/api/v1/tasks?limit=5` is `/api/v1/tasks?limit=5`.
 * `undefined` when the request is not below `prefix` or not one of Mediagate's {@link paths}. `prefix` is a path
 * (`/media`; `""` for none).
 *
 * @since 0.1.0
 * @category utils
 */
export const urlBelow = (prefix: string, url: string): string | undefined => {
  const mount = prefix.replace(/\/+$/, "")
  if (mount !== "" && url !== mount && !url.startsWith(`${mount}/`) && !url.startsWith(`${mount}?`)) return undefined
  const below = url.slice(mount.length)
  const path = below.startsWith("/") ? below : `/${below}`
  return isMediagatePath(path.split("?", 1)[0]!) ? path : undefined
}

/** The contract's envelope of `SERVICE_UNAVAILABLE`. */
const encodeUnavailable = Schema.encodeSync(Errors.ServiceUnavailable.wire)

/**
 * Answers `503 SERVICE_UNAVAILABLE` in the error envelope with `Retry-After`, and discards the request body.
 *
 * @since 0.1.0
 * @category utils
 */
export const unavailable = (request: IncomingMessage, response: ServerResponse, message: string): void => {
  const body = JSON.stringify(encodeUnavailable(new Errors.ServiceUnavailable({ message })))
  response.writeHead(Errors.ServiceUnavailable.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "retry-after": "1",
    "cache-control": "no-store"
  })
  response.end(body)
  request.resume()
}

/** The envelope answer to a request Node's HTTP parser refused, by the parser's error code. */
const clientErrorAnswer = (code: string | undefined): readonly [number, string, string] => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [431, "REQUEST_HEADERS_TOO_LARGE", "request headers are larger than the server accepts (16 KB in all)"]
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return [413, "PAYLOAD_TOO_LARGE", "chunk extensions are larger than the server accepts"]
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, "REQUEST_TIMEOUT", "the request was not received in time"]
    default:
      return [400, "VALIDATION_ERROR", `malformed HTTP request${code === undefined ? "" : ` (${code})`}`]
  }
}

/**
 * A `node:http` server's `clientError` listener (`server.on("clientError", NodeAdapters.clientError)`): a request
 * that Node's parser refuses before any handler runs (headers over the limit, malformed syntax, a request that
 * took too long) is answered in the error envelope — 431 `REQUEST_HEADERS_TOO_LARGE`, 400 `VALIDATION_ERROR`,
 * 408 `REQUEST_TIMEOUT` — instead of Node's bare status line, then the connection is closed. A socket that is gone,
 * or already carries a response, is only closed.
 *
 * @since 0.1.0
 * @category utils
 */
export const clientError = (error: Error & { readonly code?: string }, socket: Duplex): void => {
  const inFlight: unknown = Reflect.get(socket, "_httpMessage")
  const headersSent = typeof inFlight === "object" && inFlight !== null && Reflect.get(inFlight, "headersSent") === true
  if (error.code === "ECONNRESET" || !socket.writable || headersSent) {
    socket.destroy()
    return
  }
  const [status, code, message] = clientErrorAnswer(error.code)
  const body = JSON.stringify({ success: false, error: { code, message } })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n` +
      "Content-Type: application/json\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Cache-Control: no-store\r\n" +
      "Connection: close\r\n\r\n" +
      body
  )
}

/** A field that frameworks and body parsers add to the request (`originalUrl`, `baseUrl`, `body`, ...). */
const field = (request: IncomingMessage, name: string): unknown => Reflect.get(request, name)

const text = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** What a body parser kept of the body it read: `rawBody` when the app saves it, else the parsed value as JSON. */
const bodyOf = (request: IncomingMessage): Buffer => {
  const kept = field(request, "rawBody") ?? field(request, "body")
  if (kept instanceof Uint8Array) return Buffer.from(kept)
  if (typeof kept === "string") return Buffer.from(kept)
  if (kept === undefined || kept === null) return Buffer.alloc(0)
  return Buffer.from(JSON.stringify(kept))
}

/** A stand-in for a request whose body stream a parser already read: the same request, its body replayed. */
const replay = (request: IncomingMessage, url: string, body: Buffer): IncomingMessage => {
  const copy = new IncomingMessage(request.socket)
  copy.url = url
  copy.method = request.method ?? "GET"
  copy.httpVersion = request.httpVersion
  copy.headers = { ...request.headers, "content-length": String(body.length) }
  delete copy.headers["transfer-encoding"]
  copy.rawHeaders = request.rawHeaders
  if (body.length > 0) copy.push(body)
  copy.push(null)
  copy.complete = true
  return copy
}

/**
 * Serves Mediagate's paths with `listener` and passes every other request to `next()`.
 *
 * @since 0.1.0
 * @category utils
 */
export const middleware = (listener: Listener): Middleware => (request, response, next) => {
  const full = text(field(request, "originalUrl")) ?? request.url ?? "/"
  const base = text(field(request, "baseUrl")) ?? ""
  let url = base !== "" && full.startsWith(base) ? full.slice(base.length) : full
  if (!url.startsWith("/")) url = `/${url}`
  const path = url.split("?", 1)[0]!
  if (!isMediagatePath(path)) return next()
  try {
    if (field(request, "_body") === true || request.readableEnded) {
      listener(replay(request, url, bodyOf(request)), response)
    } else {
      request.url = url
      listener(request, response)
    }
  } catch (error) {
    next(error)
  }
}
