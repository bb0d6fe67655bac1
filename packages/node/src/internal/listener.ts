/**
 * The `node:http` listener of a Mediagate service (`Service.listener`). The requests of the endpoints the server's
 * envelope dispatches itself (`Http.Served.dispatched`: the generation endpoints, a task by id, ...) start their
 * fiber here, with the request in the fiber's first context, and their answer is written here when the fiber has it;
 * every other request goes to the platform's listener (`NodeHttpServer.makeHandler`) as before.
 *
 * Why: the platform's listener wraps every request in a chain of per-request work that Mediagate's answers do not
 * need — a copy of the runtime's context to provide the request, a `Scope` opened and closed per request, the
 * error handling of `HttpApp.toHandled`, the tracer middleware (even with tracing off it is a step per request),
 * the `HttpApiBuilder` app's error encoder around the envelope. A request waiting for its database commit keeps all
 * of it alive, and what lives across a young-generation collection is copied and promoted: measured, the platform's
 * path is ~50 KB of the ~180 KB a POST allocates (docs/performance.md, "Where a request's allocation goes").
 *
 * What stays the same as the platform's listener, so that both answer alike (`test/Listener.test.ts`):
 * - the request (`NodeRequest`): the same `HttpServerRequest` over the Node request — URL, method, headers, the
 *   socket's address, cookies, the body read under `HttpIncomingMessage.MaxBodySize`, multipart;
 * - the fiber runs uninterruptible but where the app says otherwise (a dispatched handler that is interruptible),
 *   and a client that goes away before its answer interrupts it (`clientAbortFiberId`: the access log's 499);
 * - the handlers registered for the answer (`HttpApp.appendPreResponseHandler`: the rate-limit fields) run before
 *   it is written; a failure (only an interruption reaches here) is answered by `HttpServerError.causeResponse`;
 * - the access log's line and the HTTP metric ({@link AccessLog.middleware}, the same measurement);
 * - the answer is written as the platform writes it: status, headers, cookies, no body for `HEAD`.
 *
 * What differs: a dispatched request's fiber has no request `Scope` (no Mediagate handler takes one; a handler that
 * needed it would fail loudly, with a defect, in every test of its endpoint), and no `http.server` span — while
 * tracing is on for a request (the tracer is enabled and the platform's `currentTracerDisabledWhen` does not
 * exempt the request) it goes to the platform's listener, whose tracer middleware makes the span and honours
 * `traceparent`.
 *
 * @internal
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeMultipart from "@effect/platform-node/NodeMultipart"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Cookies from "@effect/platform/Cookies"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Headers from "@effect/platform/Headers"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as Multipart from "@effect/platform/Multipart"
import type * as Path from "@effect/platform/Path"
import type * as Socket from "@effect/platform/Socket"
import * as UrlParams from "@effect/platform/UrlParams"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import * as AccessLog from "../AccessLog.js"

/** An `HttpServerRequest` over a Node request, as the platform's listener makes it (see the module's comment). */
export class NodeRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId

  constructor(
    /** The Node request (`NodeHttpServerRequest.toIncomingMessage` answers it, as for the platform's requests). */
    readonly source: IncomingMessage,
    /** The Node response (`NodeHttpServerRequest.toServerResponse`). */
    readonly response: ServerResponse,
    readonly url: string = source.url ?? "/",
    private readonly headersOverride?: Headers.Headers,
    private readonly remoteAddressOverride?: string
  ) {
    super()
  }

  get originalUrl(): string {
    return this.source.url ?? "/"
  }

  get method(): HttpMethod {
    return (this.source.method ?? "GET").toUpperCase() as HttpMethod
  }

  get headers(): Headers.Headers {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }

  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket.remoteAddress)
  }

  private cookiesRead: Record<string, string> | undefined
  get cookies(): Record<string, string> {
    return (this.cookiesRead ??= Cookies.parseHeader(this.headers.cookie ?? ""))
  }

  /** A body that cannot be read, as the platform reports it. */
  private decodeError(cause: unknown): HttpServerError.RequestError {
    return new HttpServerError.RequestError({ request: this, reason: "Decode", cause })
  }

  private textRead: Effect.Effect<string, HttpServerError.RequestError> | undefined
  /** The body as text, read once (later reads answer the same text), under the fiber's `MaxBodySize`. */
  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    return (this.textRead ??= Effect.runSync(Effect.cached(Effect.flatMap(
      HttpIncomingMessage.MaxBodySize,
      (maxBytes) =>
        NodeStream.toString(() => this.source, {
          onFailure: (cause) => this.decodeError(cause),
          maxBytes: Option.getOrUndefined(maxBytes)
        })
    ))))
  }

  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    return Effect.tryMap(this.text, {
      try: (text) => text === "" ? null : JSON.parse(text) as unknown,
      catch: (cause) => this.decodeError(cause)
    })
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({
        try: () => UrlParams.fromInput(new URLSearchParams(text)),
        catch: (cause) => this.decodeError(cause)
      }))
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    return Effect.flatMap(HttpIncomingMessage.MaxBodySize, (maxBytes) =>
      Effect.map(
        NodeStream.toUint8Array(() => this.source, {
          onFailure: (cause) => this.decodeError(cause),
          maxBytes: Option.getOrUndefined(maxBytes)
        }),
        (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
      ))
  }

  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return NodeStream.fromReadable(() => this.source, (cause) => this.decodeError(cause))
  }

  private multipartRead:
    | Effect.Effect<Multipart.Persisted, Multipart.MultipartError, Scope.Scope | FileSystem.FileSystem | Path.Path>
    | undefined
  get multipart(): Effect.Effect<
    Multipart.Persisted,
    Multipart.MultipartError,
    Scope.Scope | FileSystem.FileSystem | Path.Path
  > {
    return (this.multipartRead ??= Effect.runSync(
      Effect.cached(NodeMultipart.persisted(this.source, this.source.headers))
    ))
  }

  get multipartStream(): Stream.Stream<Multipart.Part, Multipart.MultipartError> {
    return NodeMultipart.stream(this.source, this.source.headers)
  }

  /** Upgrades arrive as the server's `upgrade` event, which the platform's listener serves: never here. */
  get upgrade(): Effect.Effect<Socket.Socket, HttpServerError.RequestError> {
    return Effect.fail(
      new HttpServerError.RequestError({
        request: this,
        reason: "Decode",
        description: "not an upgradeable ServerRequest"
      })
    )
  }

  modify(options: {
    readonly url?: string
    readonly headers?: Headers.Headers
    readonly remoteAddress?: string
  }): HttpServerRequest.HttpServerRequest {
    return new NodeRequest(
      this.source,
      this.response,
      options.url ?? this.url,
      options.headers ?? this.headersOverride,
      options.remoteAddress ?? this.remoteAddressOverride
    )
  }

  toJSON(): unknown {
    return HttpIncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpServerRequest",
      method: this.method,
      url: this.originalUrl
    })
  }
}

/** The response's headers with its cookies as `Set-Cookie`, as the platform writes them. */
const headersOf = (response: HttpServerResponse.HttpServerResponse): OutgoingHttpHeaders => {
  if (Cookies.isEmpty(response.cookies)) return response.headers
  const cookies = Cookies.toSetCookieHeaders(response.cookies)
  const existing = response.headers["set-cookie"]
  return { ...response.headers, "set-cookie": existing === undefined ? cookies : [...cookies, existing] }
}

/** Pipes a body into the Node response until it ends; a failing body ends the response abruptly. */
const pipeInto = (out: ServerResponse, body: Readable): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    body
      .on("error", (cause) => {
        out.destroy(cause)
        resume(Effect.void)
      })
      .pipe(out)
      .once("close", () => resume(Effect.void))
  })

const isReadable = (body: unknown): body is Readable =>
  typeof body === "object" && body !== null && "pipe" in body && typeof body.pipe === "function"

/**
 * Writes an answer to the Node response (nothing when it has ended already): a JSON, bytes, text or empty body at
 * once; a Node stream piped; a stream or form body through its web form (`HttpServerResponse.toWeb`), until it ends.
 */
const writeAnswer = (
  request: NodeRequest,
  response: HttpServerResponse.HttpServerResponse,
  runtime: Runtime.Runtime<never>
): Effect.Effect<void> => {
  const out = request.response
  const body = response.body
  if (request.method === "HEAD" || body._tag === "Empty") {
    out.writeHead(response.status, headersOf(response)).end()
    return Effect.void
  }
  if (
    body._tag === "Uint8Array" ||
    (body._tag === "Raw" && (typeof body.body === "string" || body.body instanceof Uint8Array))
  ) {
    out.writeHead(response.status, headersOf(response)).end(body.body)
    return Effect.void
  }
  if (body._tag === "Raw" && isReadable(body.body)) {
    out.writeHead(response.status, headersOf(response))
    return pipeInto(out, body.body)
  }
  const web = HttpServerResponse.toWeb(response, { runtime })
  const headers: OutgoingHttpHeaders = headersOf(response)
  web.headers.forEach((value, name) => (headers[name] = value))
  out.writeHead(web.status, headers)
  if (web.body === null) {
    out.end()
    return Effect.void
  }
  return pipeInto(out, Readable.fromWeb(web.body as Parameters<typeof Readable.fromWeb>[0]))
}

/**
 * {@link writeAnswer}, unless the response has ended already. An answer Node refuses to write (a header value it
 * rejects) is a 500 when nothing was sent yet, else the connection is ended abruptly; either way it is logged,
 * and the client is not left waiting.
 */
const write = (
  request: NodeRequest,
  response: HttpServerResponse.HttpServerResponse,
  runtime: Runtime.Runtime<never>
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const out = request.response
    if (out.writableEnded) return Effect.void
    try {
      return writeAnswer(request, response, runtime)
    } catch (cause) {
      if (out.headersSent) out.destroy()
      else out.writeHead(500, { "content-length": "0" }).end()
      return Effect.logError("the answer could not be written", cause)
    }
  })

/** The answer with the handlers registered for it applied (`HttpApp.appendPreResponseHandler`). */
const prepared = (
  request: NodeRequest,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> =>
  Effect.withFiberRuntime((fiber) => {
    const handler = fiber.getFiberRef(HttpApp.currentPreResponseHandlers)
    return handler._tag === "None" ? Effect.succeed(response) : handler.value(request, response)
  })

/**
 * The listener (see the module's comment): `app` serves every request the platform's way; `dispatched` answers
 * the requests of the endpoints the envelope dispatches (`Http.Served.dispatched`); `accessLog` is what
 * {@link AccessLog.middleware} records for them (the same options as around `app`).
 */
export const make = <R>(
  app: HttpApp.Default<never, R>,
  dispatched: (request: HttpServerRequest.HttpServerRequest) => HttpApp.Default<never, R> | undefined,
  accessLog: AccessLog.Options
): Effect.Effect<
  (request: IncomingMessage, response: ServerResponse) => void,
  never,
  Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>
> =>
  Effect.gen(function*() {
    const platform = yield* NodeHttpServer.makeHandler(app)
    const runtime = yield* Effect.runtime<never>()
    // the platform's listener makes a request's `http.server` span unless the tracer is off, or off for the request
    const tracing = FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentTracerEnabled)
    const tracerDisabledWhen = FiberRefs.getOrDefault(runtime.fiberRefs, HttpMiddleware.currentTracerDisabledWhen)

    /** A dispatched request's whole run: its answer (logged), the pre-response handlers, the write. */
    const run = (request: NodeRequest, answer: HttpApp.Default<never, R>) =>
      Effect.uninterruptible(Effect.matchCauseEffect(
        Effect.flatMap(AccessLog.middleware(answer, accessLog), (response) => prepared(request, response)),
        {
          onSuccess: (response) => write(request, response, runtime),
          // the envelope answers every failure, so only an interruption (or a pre-response handler's failure) is here
          onFailure: (cause) =>
            Effect.flatMap(HttpServerError.causeResponse(cause), ([response]) =>
              Effect.zipRight(
                Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("request failed", cause),
                Effect.flatMap(Effect.orElseSucceed(prepared(request, response), () => response), (answer) =>
                  write(request, answer, runtime))
              ))
        }
      ))

    /** The envelope's answer to a dispatched request; `undefined` for the others (or if finding it threw). */
    const answerOf = (request: NodeRequest) => {
      if (tracing && !tracerDisabledWhen(request)) {
        return undefined
      }
      try {
        return dispatched(request)
      } catch {
        // the platform's listener runs the same code in an effect, where a throw is answered in the envelope
        return undefined
      }
    }

    return (source: IncomingMessage, response: ServerResponse) => {
      const request = new NodeRequest(source, response)
      const answer = answerOf(request)
      if (answer === undefined) {
        return platform(source, response)
      }
      const fiber = Runtime.runFork(Runtime.make({
        context: Context.add(runtime.context, HttpServerRequest.HttpServerRequest, request),
        fiberRefs: runtime.fiberRefs,
        runtimeFlags: runtime.runtimeFlags
      }))(run(request, answer) as Effect.Effect<void>)
      response.on("close", () => {
        if (!response.writableEnded) {
          fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
        }
      })
    }
  })
