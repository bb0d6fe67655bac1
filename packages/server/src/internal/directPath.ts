/**
 * The direct path: requests of the API's plain JSON endpoints answered without `HttpApiBuilder`'s router and, on
 * Node, without the platform's per-request listener work; 1.54× the requests per second of the platform's path on
 * SQLite `GET` (docs/performance-notes.md "The direct path"), because a request waiting for its commit keeps every
 * per-request wrapper alive into the old generation. One switch turns it off (`Http.Options.dispatch`,
 * `MEDIAGATE_HTTP_DISPATCH=false`); one conformance corpus checks both answer alike (node/test/Listener.test.ts).
 *
 * - **Dispatch**: `Envelope.group` registers each endpoint of the shape handled here (JSON payload or none, no
 *   query Schema, one JSON or empty success Schema, bearer security or none). Its requests run what the router
 *   runs (security middleware, Schemas, handler) in the request's context, without its context copies.
 * - **Listener** ({@link listener}): such a request starts its fiber with the request in its first context and is
 *   written here, with the platform's semantics (pre-response handlers, `clientAbortFiberId` when the client goes,
 *   headers and cookies, no body for `HEAD`); while tracing is on for it, the platform's listener makes its span.
 *
 * @internal
 */
import * as Cookies from "@effect/platform/Cookies"
import type * as Headers from "@effect/platform/Headers"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiError from "@effect/platform/HttpApiError"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpMethod from "@effect/platform/HttpMethod"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Multipart from "@effect/platform/Multipart"
import * as UrlParams from "@effect/platform/UrlParams"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as FindMyWay from "find-my-way-ts"
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import * as FiberLocal from "./fiberLocal.js"

type Services = FiberLocal.Services
type Params = Readonly<Record<string, string | undefined>>
type Response = HttpServerResponse.HttpServerResponse
type Request = HttpServerRequest.HttpServerRequest
type NodeListener = (request: IncomingMessage, response: ServerResponse) => void
type Any = Effect.Effect<unknown, unknown, unknown>

/** What a group's build answers (`HttpApiBuilder`'s handlers builder): its group and handled endpoints. */
export type Handled = Pick<HttpApiBuilder.Handlers<unknown, unknown, unknown>, "group" | "handlers">
type Item = HttpApiBuilder.Handlers.Item<unknown, unknown>

/** An endpoint's answer given its path parameters; `undefined` for a body that is not JSON (the router's then). */
export type Dispatch = (request: Request, params: Params) => Effect.Effect<Response, unknown> | undefined

/** Routes match exactly as written, unlike the platform's router (decisions.md §11 "Canonical paths"). */
export const strictMatching = { caseSensitive: true, ignoreDuplicateSlashes: false, ignoreTrailingSlash: false }

/** The registered endpoints by method and path; a disabled registry (the switch off) registers none. */
export class Registry {
  constructor(readonly enabled: boolean = true) {}
  private readonly router = FindMyWay.make<{ readonly dispatch: Dispatch; readonly route: string }>(strictMatching)
  /** Set by the envelope: its whole answer to a registered endpoint's request (fails only if interrupted). */
  answer: (request: Request) => Effect.Effect<Response, unknown, unknown> | undefined = () => undefined
  add(method: string, path: `/${string}`, dispatch: Dispatch): void {
    if (this.enabled) this.router.on(method, path, { dispatch, route: path })
  }
  /** The endpoint a method and path (no query) match: its dispatch, path parameters and path template. */
  find(method: string, path: string): { dispatch: Dispatch; params: Params; route: string } | undefined {
    const found = this.router.find(method, path)
    return found && { dispatch: found.handler.dispatch, params: found.params, route: found.handler.route }
  }
}

/** The registry of a built API (`Http.apiFor` provides it to the groups and to the envelope). */
export class Dispatcher extends Context.Tag("@mediagate/server/Dispatcher")<Dispatcher, Registry>() {}

/** A fresh registry (`enabled: false`: the switch off). */
export const layer = (enabled = true): Layer.Layer<Dispatcher> => Layer.sync(Dispatcher, () => new Registry(enabled))

type MiddlewareTag = HttpApiMiddleware.TagClassAny & {
  readonly optional?: boolean
  readonly provides?: Context.Tag<unknown, unknown>
  readonly security?: Record<string, { readonly _tag: string }>
}
type Middleware = { readonly effect: Any; readonly tag: MiddlewareTag }

/** An endpoint's middleware as `HttpApiBuilder` runs them, or `undefined` if one is not handled here. */
const middlewareOf = (tags: ReadonlyArray<MiddlewareTag>, context: Context.Context<never>) => {
  const entries: Array<Middleware> = []
  for (const tag of tags) {
    const implementation = Context.getOption(context, tag as unknown as Context.Tag<unknown, unknown>)
    if (Option.isNone(implementation)) return undefined
    if (!(HttpApiMiddleware.SecurityTypeId in tag) || tag.security === undefined) {
      entries.push({ tag, effect: implementation.value as Any })
      continue
    }
    const handlers = implementation.value as Record<string, ((credential: unknown) => Any) | undefined>
    let effect: Any | undefined
    for (const [key, security] of Object.entries(tag.security)) {
      const handler = handlers[key]
      // only the bearer scheme reads nothing but the request (the others may read the parsed query)
      if (security._tag !== "Bearer" || handler === undefined) return undefined
      const decoded = HttpApiBuilder.securityDecode(security as Parameters<typeof HttpApiBuilder.securityDecode>[0])
      const attempt = Effect.flatMap(decoded, handler)
      effect = effect === undefined ? attempt : Effect.catchAll(effect, () => attempt)
    }
    entries.push({ tag, effect: effect ?? Effect.void })
  }
  return entries
}

/** The success encoder of an endpoint: one JSON (or empty) success Schema, else `undefined`. */
const successOf = (schema: Schema.Schema.Any) => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, schema)
  if (schemas.size !== 1) return undefined
  const only = [...schemas][0]! as Schema.Schema<unknown, unknown, never>
  const status = HttpApiSchema.getStatusSuccess(only)
  if (HttpApiSchema.isVoid(only.ast)) return () => Effect.succeed(HttpServerResponse.empty({ status }))
  const encoding = HttpApiSchema.getEncoding(only.ast)
  if (encoding.kind !== "Json") return undefined
  const encode = Schema.encode(only)
  const options = { status, contentType: encoding.contentType }
  const unencodable = (error: unknown) =>
    new ParseResult.ParseError({ issue: new ParseResult.Type(only.ast, error, "Could not encode to JSON") })
  return (value: unknown) =>
    Effect.flatMap(encode(value), (encoded) => Effect.mapError(HttpServerResponse.json(encoded, options), unencodable))
}

/** `HttpApiBuilder`'s translation of a decoding failure into `HttpApiDecodeError`. */
const refail = Effect.catchIf(ParseResult.isParseError, HttpApiError.HttpApiDecodeError.refailParseError)

/** A decoder of one request part, if the endpoint has a Schema for it. */
const decoderOf = (schema: Option.Option<Schema.Schema.Any>) =>
  Option.getOrUndefined(Option.map(schema, (s) => Schema.decodeUnknown(s as Schema.Schema<unknown, unknown, unknown>)))

/**
 * The dispatch of a handled endpoint, or `undefined` for a shape left to the router. `groupContext` holds the
 * middleware's implementations; the handler runs in the request's context with what its middleware provide (every
 * Mediagate handler takes its services when its group is built), not in a per-request copy of the group's.
 */
const dispatchOf = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  item: Item,
  groupContext: Context.Context<never>
): Dispatch | undefined => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  if (item.withFullRequest || Option.isSome(endpoint.urlParamsSchema)) return undefined
  if (Option.isSome(endpoint.payloadSchema)) {
    const ast = endpoint.payloadSchema.value.ast
    if (!HttpMethod.hasBody(endpoint.method) || HttpApiSchema.getEncoding(ast).kind !== "Json") return undefined
    if (HttpApiSchema.getMultipart(ast) !== undefined || HttpApiSchema.getMultipartStream(ast) !== undefined) {
      return undefined
    }
  }
  const success = successOf(endpoint.successSchema)
  const tags = [...group.middlewares, ...endpoint.middlewares] as ReadonlyArray<MiddlewareTag>
  // outermost first, as HttpApiBuilder wraps them (the last one registered outermost)
  const middleware = middlewareOf(tags, groupContext)?.reverse()
  if (success === undefined || middleware === undefined) return undefined
  const decodePath = decoderOf(endpoint.pathSchema)
  const decodePayload = decoderOf(endpoint.payloadSchema)
  const decodeHeaders = decoderOf(endpoint.headersSchema)

  /** Decoding, the handler, the success's encoding (HttpApiBuilder's order). */
  const call = (request: Request, params: Params) => {
    const argument: Record<string, unknown> = { request }
    const set = (key: string, decode: Any) => (arg: Record<string, unknown>) =>
      Effect.map(decode, (value) => (arg[key] = value, arg))
    let decoded: Effect.Effect<Record<string, unknown>, unknown, unknown> = Effect.succeed(argument)
    if (decodePath) decoded = Effect.flatMap(decoded, set("path", decodePath(params)))
    const payload = decodePayload && Effect.flatMap(Effect.orDie(request.json), decodePayload)
    if (payload) decoded = Effect.flatMap(decoded, set("payload", payload))
    if (decodeHeaders) decoded = Effect.flatMap(decoded, set("headers", decodeHeaders(request.headers)))
    return refail(
      Effect.flatMap(
        Effect.flatMap(decoded, item.handler),
        (response) => HttpServerResponse.isServerResponse(response) ? Effect.succeed(response) : success(response)
      )
    )
  }

  /** The middleware from the outermost in, each with what the ones before provided; answers what they provide. */
  const secured = (index: number, services: Services): Effect.Effect<Services, unknown, unknown> => {
    if (index === middleware.length) return Effect.succeed(services)
    const { effect, tag } = middleware[index]!
    const next = (value: unknown) =>
      secured(index + 1, tag.provides === undefined ? services : [...services, [tag.provides.key, value]])
    const run = FiberLocal.withServices(services, effect)
    return tag.optional === true
      ? Effect.matchEffect(run, { onFailure: () => secured(index + 1, services), onSuccess: next })
      : Effect.flatMap(run, next)
  }
  const authenticated = secured(0, [])

  return (request, params) => {
    // HttpApiBuilder reads a body as JSON unless its Content-Type says otherwise (the envelope refuses other types)
    const type = request.headers["content-type"]
    if (decodePayload && type !== undefined && !type.toLowerCase().includes("application/json")) return undefined
    // the middleware and the handler find the request (the envelope's view, its body read) in the context
    const asRequest: Services = [[HttpServerRequest.HttpServerRequest.key, request]]
    const answer = Effect.withFiberRuntime<Response, unknown, unknown>((fiber) => {
      const inContext = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest) === request
      return Effect.flatMap(
        inContext ? authenticated : FiberLocal.withServices(asRequest, authenticated),
        (services) => FiberLocal.withServices(inContext ? services : [...asRequest, ...services], call(request, params))
      )
    })
    // the services the handler needs were provided when its group was built
    return (item.uninterruptible ? answer : Effect.interruptible(answer)) as Effect.Effect<Response, unknown>
  }
}

/** Registers a built group's handled endpoints with the registry in its `context`, if there is one. */
export const register = (handled: Handled, context: Context.Context<never>): void => {
  const registry = Context.getOption(context, Dispatcher)
  if (Option.isNone(registry)) return
  for (const item of handled.handlers) {
    const { method, path } = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
    const dispatch = dispatchOf(handled.group, item, context)
    if (dispatch) registry.value.add(method, path, dispatch)
  }
}

// The Node listener

const noMultipart = new Multipart.MultipartError({ reason: "Parse", cause: "no multipart body" })
/** The members of an empty body, shared by every direct request (none allocates its own). */
const empty = {
  text: Effect.succeed(""),
  json: Effect.succeed<unknown>(null),
  urlParamsBody: Effect.succeed(UrlParams.empty),
  arrayBuffer: Effect.sync(() => new ArrayBuffer(0)),
  stream: Stream.empty,
  multipart: Effect.fail(noMultipart),
  multipartStream: Stream.fail(noMultipart)
}

/** A direct request over a Node request, its body empty: the envelope reads any body first (`RequestBody.read`). */
class NodeRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  readonly text = empty.text
  readonly json = empty.json
  readonly urlParamsBody = empty.urlParamsBody
  readonly arrayBuffer = empty.arrayBuffer
  readonly stream = empty.stream
  readonly multipart = empty.multipart
  readonly multipartStream = empty.multipartStream
  private cookiesRead: Record<string, string> | undefined
  constructor(
    readonly source: IncomingMessage,
    readonly response: ServerResponse,
    readonly url: string = source.url ?? "/",
    private readonly headersOverride?: Headers.Headers,
    private readonly remoteAddressOverride?: string
  ) {
    super()
  }
  get originalUrl() {
    return this.source.url ?? "/"
  }
  get method() {
    return (this.source.method ?? "GET").toUpperCase() as HttpMethod.HttpMethod
  }
  get headers() {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }
  get remoteAddress() {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket.remoteAddress)
  }
  get cookies() {
    return (this.cookiesRead ??= Cookies.parseHeader(this.headers.cookie ?? ""))
  }
  get upgrade(): Effect.Effect<never, HttpServerError.RequestError> {
    const description = "not an upgradeable ServerRequest"
    return Effect.fail(new HttpServerError.RequestError({ request: this, reason: "Decode", description }))
  }
  modify(options: { readonly url?: string; readonly headers?: Headers.Headers; readonly remoteAddress?: string }) {
    const { headers = this.headersOverride, remoteAddress = this.remoteAddressOverride, url = this.url } = options
    return new NodeRequest(this.source, this.response, url, headers, remoteAddress)
  }
  toJSON(): unknown {
    const fields = { _id: "@effect/platform/HttpServerRequest", method: this.method, url: this.originalUrl }
    return HttpIncomingMessage.inspect(this, fields)
  }
}

/** The response's headers with its cookies as `Set-Cookie`, as the platform writes them. */
const headersOf = (answer: Response): OutgoingHttpHeaders => {
  if (Cookies.isEmpty(answer.cookies)) return answer.headers
  const cookies = Cookies.toSetCookieHeaders(answer.cookies)
  const existing = answer.headers["set-cookie"]
  return { ...answer.headers, "set-cookie": existing === undefined ? cookies : [...cookies, existing] }
}

/** Pipes a Node stream into the response until it ends or the client goes; a failing body ends it abruptly. */
const pipe = (out: ServerResponse, body: Readable): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    body.on("error", (cause) => out.destroy(cause)).pipe(out).once("close", () => resume(Effect.void))
  })

/** Writes an answer as the platform does; an answer Node refuses is a 500 (or an abrupt end), logged. */
const write = (request: NodeRequest, answer: Response, runtime: Runtime.Runtime<never>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const out = request.response
    if (out.writableEnded) return Effect.void
    try {
      const body = answer.body
      const raw = body._tag === "Raw" ? body.body : undefined
      if (request.method === "HEAD" || body._tag === "Empty") {
        out.writeHead(answer.status, headersOf(answer)).end()
      } else if (body._tag === "Uint8Array" || typeof raw === "string" || raw instanceof Uint8Array) {
        out.writeHead(answer.status, headersOf(answer)).end(body._tag === "Uint8Array" ? body.body : raw)
      } else if (raw instanceof Readable) {
        out.writeHead(answer.status, headersOf(answer))
        return pipe(out, raw)
      } else {
        // any other body (an Effect stream, a form) through its web form
        const web = HttpServerResponse.toWeb(answer, { runtime })
        const headers = { ...headersOf(answer) }
        web.headers.forEach((value, name) => (headers[name] = value))
        out.writeHead(web.status, headers)
        if (web.body !== null) return pipe(out, Readable.fromWeb(web.body as Parameters<typeof Readable.fromWeb>[0]))
        out.end()
      }
      return Effect.void
    } catch (cause) {
      if (out.headersSent) out.destroy()
      else out.writeHead(500, { "content-length": "0" }).end()
      return Effect.logError("the answer could not be written", cause)
    }
  })

/** The answer with the handlers registered for it applied (`HttpApp.appendPreResponseHandler`). */
const prepared = (request: NodeRequest, response: Response): Effect.Effect<Response, unknown> =>
  Effect.withFiberRuntime((fiber) => {
    const handler = fiber.getFiberRef(HttpApp.currentPreResponseHandlers)
    return handler._tag === "None" ? Effect.succeed(response) : handler.value(request, response)
  })

/**
 * A `node:http` listener (see the module's comment): the requests `direct` answers (`Http.Served.dispatched`, the
 * answer wrapped by `around`: the access log) start their fiber here; every other request goes to `platform` (the
 * platform's listener, `NodeHttpServer.makeHandler`).
 */
export const listener = <R>(
  platform: NodeListener,
  direct: (request: Request) => HttpApp.Default<never, R> | undefined,
  around: (answer: HttpApp.Default<never, R>) => HttpApp.Default<never, R>
): Effect.Effect<NodeListener, never, Exclude<R, Request | Scope.Scope>> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    const tracing = FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentTracerEnabled)
    const tracerDisabledWhen = FiberRefs.getOrDefault(runtime.fiberRefs, HttpMiddleware.currentTracerDisabledWhen)
    /** A direct request's whole run: its answer (logged), the pre-response handlers, the write. */
    const run = (request: NodeRequest, answer: HttpApp.Default<never, R>) =>
      Effect.uninterruptible(Effect.matchCauseEffect(Effect.flatMap(around(answer), (r) => prepared(request, r)), {
        onSuccess: (response) => write(request, response, runtime),
        // the envelope answers every failure: only an interruption (or a pre-response handler's failure) is here
        onFailure: (cause) =>
          Effect.zipRight(
            Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("request failed", cause),
            Effect.flatMap(HttpServerError.causeResponse(cause), ([response]) =>
              Effect.flatMap(
                Effect.orElseSucceed(prepared(request, response), () => response),
                (answer) => write(request, answer, runtime)
              ))
          )
      }))
    return (source, response) => {
      const request = new NodeRequest(source, response)
      let answer: HttpApp.Default<never, R> | undefined
      try {
        answer = tracing && !tracerDisabledWhen(request) ? undefined : direct(request)
      } catch {
        // the platform's listener runs the same code in an effect, where the envelope answers a throw
      }
      if (answer === undefined) return platform(source, response)
      const fiber = Runtime.runFork(Runtime.make({
        context: Context.add(runtime.context, HttpServerRequest.HttpServerRequest, request),
        fiberRefs: runtime.fiberRefs,
        runtimeFlags: runtime.runtimeFlags
      }))(run(request, answer) as Effect.Effect<void>)
      response.on("close", () => {
        if (!response.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
      })
    }
  })
