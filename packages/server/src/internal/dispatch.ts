/**
 * The API's own dispatch of a request to its endpoint's handler: the work `HttpApiBuilder`'s router does per
 * request (match the route, run the group's security middleware, decode the path, headers and JSON payload with the
 * endpoint's Schemas, call the handler, encode its success with the endpoint's success Schema), done in as few fiber
 * steps and allocations as that takes.
 *
 * Why: `HttpApiBuilder` runs every request through a chain of per-request wrappers (a copy of the request fiber's
 * context and a `locally` for the route, an `interruptible` region, a context merge with the group's services for
 * the handler, one `provideServiceEffect` per middleware, a generator for the decoding). A request that waits for
 * its database commit keeps all of it alive, so the young generation copies it and part of it is promoted, which
 * is what makes the server's old generation grow and its mark-compacts frequent under load (docs/performance.md,
 * "Where a request's allocation goes"). The same handlers, Schemas and security implementations run here; only
 * the plumbing is Mediagate's.
 *
 * Endpoints are registered by `Envelope.group` as their group is built, with the group's services (the security
 * middleware's implementation among them; handlers run in the request's context, see {@link dispatchOf}); the
 * envelope dispatches the requests of registered endpoints itself
 * and leaves the rest to the `HttpApiBuilder` app. An endpoint is registered only in the shape implemented here —
 * JSON payload (if any) on a method with a body, no query-string Schema, one JSON success Schema (or an empty one),
 * bearer security or none — and every other endpoint is served by `HttpApiBuilder` as before.
 *
 * @internal
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiError from "@effect/platform/HttpApiError"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpMethod from "@effect/platform/HttpMethod"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as FindMyWay from "find-my-way-ts"
import * as FiberLocal from "./fiberLocal.js"

/** Services by key, to add to a fiber's context. */
type Services = ReadonlyArray<readonly [key: string, service: unknown]>

/** `effect` with `services` added to the fiber's context while it runs (one copy of the context). */
const within = <A, E, R>(services: Services, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  services.length === 0 ? effect : FiberLocal.whileRunning(FiberRef.currentContext, (context) => {
    const map = new Map(context.unsafeMap)
    for (const [key, service] of services) map.set(key, service)
    return Context.unsafeMake(map)
  }, effect)

/** What a group's build answers (`HttpApiBuilder`'s handlers builder): its handled endpoints. */
export interface Handled {
  readonly handlers: Iterable<HandlerItem>
}

/** What `HttpApiBuilder`'s handlers builder holds per handled endpoint. */
interface HandlerItem {
  readonly endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  readonly handler: (request: Record<string, unknown>) => Effect.Effect<unknown, unknown, unknown>
  readonly withFullRequest: boolean
  readonly uninterruptible: boolean
}

/**
 * An endpoint's dispatch: answers the request (in the request fiber's context) given its path parameters, or
 * `undefined` for a request whose body is not JSON (`HttpApiBuilder` reads such a body its own way).
 */
export type Dispatch = (
  request: HttpServerRequest.HttpServerRequest,
  params: Readonly<Record<string, string | undefined>>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> | undefined

/**
 * How routes match: exactly as they are written (the platform's router is lenient: any case, `//` and a trailing
 * `/` ignored). The envelope's route table and the dispatch registry match alike (decisions.md §11 "Canonical paths").
 */
export const strictMatching = {
  caseSensitive: true,
  ignoreDuplicateSlashes: false,
  ignoreTrailingSlash: false
} as const

/**
 * The endpoints registered for dispatch, by method and path (matched as the envelope's route table matches). A
 * disabled registry registers nothing: every request then goes through `HttpApiBuilder`.
 */
export class Registry {
  private readonly routers = new Map<
    string,
    FindMyWay.Router<{ readonly dispatch: Dispatch; readonly route: string }>
  >()

  private direct: ((request: HttpServerRequest.HttpServerRequest) => Answer | undefined) | undefined

  constructor(readonly enabled: boolean = true) {}

  /**
   * Set by the envelope as it is built: its whole answer to a request of a registered endpoint (see {@link answer}),
   * or `undefined` for any other request.
   */
  answerWith(answer: (request: HttpServerRequest.HttpServerRequest) => Answer | undefined): void {
    this.direct = answer
  }

  /**
   * The envelope's answer to a request of a registered endpoint — everything the served app does for it (request
   * id, body limit and checks, the dispatch, every failure as an envelope; it fails only when interrupted) — to run
   * in a fiber whose context holds the request; `undefined` for a request of any other route, or before the
   * envelope is built. For a listener that starts the fiber of such a request itself (`Http.makeServed`).
   */
  answer(request: HttpServerRequest.HttpServerRequest): Answer | undefined {
    return this.direct?.(request)
  }

  /** Registers an endpoint's dispatch. */
  add(method: string, path: `/${string}`, dispatch: Dispatch): void {
    if (!this.enabled) return
    let router = this.routers.get(method)
    if (router === undefined) {
      router = FindMyWay.make(strictMatching)
      this.routers.set(method, router)
    }
    router.on(method, path, { dispatch, route: path })
  }

  /**
   * The dispatch of the endpoint a method and path (without query) match, with the path's parameters and the
   * endpoint's path template (`route`).
   */
  find(method: string, path: string): {
    readonly dispatch: Dispatch
    readonly params: Readonly<Record<string, string | undefined>>
    readonly route: string
  } | undefined {
    const found = this.routers.get(method)?.find(method, path)
    return found === undefined
      ? undefined
      : { dispatch: found.handler.dispatch, params: found.params, route: found.handler.route }
  }
}

/** The envelope's answer to a request (see {@link Registry.answer}). */
export type Answer = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>

/** The registry of a served API (one per built API: `Http.apiFor` provides it to the groups and to the envelope). */
export class Dispatcher extends Context.Tag("@mediagate/server/Dispatcher")<Dispatcher, Registry>() {}

/** A fresh registry (`enabled: false`: one that registers nothing). */
export const layer = (enabled: boolean = true): Layer.Layer<Dispatcher> =>
  Layer.sync(Dispatcher, () => new Registry(enabled))

/** A middleware tag as the group carries it. */
type MiddlewareTag = HttpApiMiddleware.TagClassAny & {
  readonly optional?: boolean
  readonly provides?: Context.Tag<unknown, unknown>
  readonly security?: Record<string, { readonly _tag: string }>
}

/** The middleware of an endpoint (its group's, then its own) as `HttpApiBuilder` runs them, or `undefined` if unsupported. */
const middlewareOf = (
  tags: ReadonlyArray<MiddlewareTag>,
  context: Context.Context<never>
):
  | ReadonlyArray<{ readonly effect: Effect.Effect<unknown, unknown, unknown>; readonly tag: MiddlewareTag }>
  | undefined =>
{
  const entries: Array<{ readonly effect: Effect.Effect<unknown, unknown, unknown>; readonly tag: MiddlewareTag }> = []
  for (const tag of tags) {
    const implementation = Context.getOption(context, tag as unknown as Context.Tag<unknown, unknown>)
    if (Option.isNone(implementation)) return undefined
    if (!(HttpApiMiddleware.SecurityTypeId in tag) || tag.security === undefined) {
      entries.push({ tag, effect: implementation.value as Effect.Effect<unknown, unknown, unknown> })
      continue
    }
    const handlers = implementation.value as Record<
      string,
      (credential: unknown) => Effect.Effect<unknown, unknown, unknown>
    >
    let effect: Effect.Effect<unknown, unknown, unknown> | undefined
    for (const [key, security] of Object.entries(tag.security)) {
      // only the bearer scheme reads nothing but the request (the others may read the parsed query)
      if (security._tag !== "Bearer") return undefined
      const handler = handlers[key]
      if (handler === undefined) return undefined
      const attempt = Effect.flatMap(
        HttpApiBuilder.securityDecode(security as Parameters<typeof HttpApiBuilder.securityDecode>[0]),
        handler
      )
      effect = effect === undefined ? attempt : Effect.catchAll(effect, () => attempt)
    }
    entries.push({ tag, effect: effect ?? Effect.void })
  }
  return entries
}

/** The success encoder of an endpoint: one JSON (or empty) success Schema, else `undefined`. */
const successOf = (
  schema: Schema.Schema.Any
): ((value: unknown) => Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError>) | undefined => {
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
  return (value) =>
    Effect.flatMap(encode(value), (encoded) =>
      Effect.mapError(
        HttpServerResponse.json(encoded, options),
        (error) =>
          new ParseResult.ParseError({ issue: new ParseResult.Type(only.ast, error, "Could not encode to JSON") })
      ))
}

/** `HttpApiBuilder`'s translation of a decoding failure (a `ParseError`) into `HttpApiDecodeError`. */
const refail = Effect.catchIf(ParseResult.isParseError, HttpApiError.HttpApiDecodeError.refailParseError)

/**
 * The dispatch of a handled endpoint, or `undefined` when its shape is one this module leaves to `HttpApiBuilder`.
 * `groupContext`: the services the group was built with, where its middleware's implementations are. Unlike
 * `HttpApiBuilder`, which merges them into every handler's context (a copy of the group's services per request), the
 * handler runs in the request's context and what its middleware provide: a handler takes the services it needs
 * when its group is built, as every Mediagate group does.
 */
const dispatchOf = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  item: HandlerItem,
  groupContext: Context.Context<never>
): Dispatch | undefined => {
  const endpoint = item.endpoint
  if (item.withFullRequest || Option.isSome(endpoint.urlParamsSchema)) return undefined
  if (Option.isSome(endpoint.payloadSchema)) {
    if (!HttpMethod.hasBody(endpoint.method)) return undefined
    const ast = endpoint.payloadSchema.value.ast
    if (HttpApiSchema.getMultipart(ast) !== undefined || HttpApiSchema.getMultipartStream(ast) !== undefined) {
      return undefined
    }
    if (HttpApiSchema.getEncoding(ast).kind !== "Json") return undefined
  }
  const success = successOf(endpoint.successSchema)
  const middleware = middlewareOf(
    [...(group.middlewares as ReadonlySet<MiddlewareTag>), ...(endpoint.middlewares as ReadonlySet<MiddlewareTag>)],
    groupContext
  )
  if (success === undefined || middleware === undefined) return undefined
  const decodePath = Option.getOrUndefined(Option.map(endpoint.pathSchema, Schema.decodeUnknown))
  const decodePayload = Option.getOrUndefined(Option.map(endpoint.payloadSchema, Schema.decodeUnknown))
  const decodeHeaders = Option.getOrUndefined(Option.map(endpoint.headersSchema, Schema.decodeUnknown))
  const handler = item.handler
  // the middleware run outermost first, as HttpApiBuilder wraps them (the last one registered outermost)
  const outermostFirst = [...middleware].reverse()

  /** The handler's call: decoding, the handler, the success's encoding (HttpApiBuilder's order). */
  const call = (request: HttpServerRequest.HttpServerRequest, params: Readonly<Record<string, string | undefined>>) => {
    const argument: Record<string, unknown> = { request }
    let decoded: Effect.Effect<Record<string, unknown>, unknown, unknown> = Effect.succeed(argument)
    if (decodePath !== undefined) {
      decoded = Effect.flatMap(decoded, (arg) => Effect.map(decodePath(params), (path) => (arg.path = path, arg)))
    }
    if (decodePayload !== undefined) {
      decoded = Effect.flatMap(
        decoded,
        (arg) =>
          Effect.map(
            Effect.flatMap(Effect.orDie(request.json), decodePayload),
            (payload) => (arg.payload = payload, arg)
          )
      )
    }
    if (decodeHeaders !== undefined) {
      decoded = Effect.flatMap(
        decoded,
        (arg) => Effect.map(decodeHeaders(request.headers), (headers) => (arg.headers = headers, arg))
      )
    }
    return refail(
      Effect.flatMap(
        Effect.flatMap(decoded, handler),
        (response) => HttpServerResponse.isServerResponse(response) ? Effect.succeed(response) : success(response)
      )
    )
  }

  /**
   * The middleware from the outermost in, each with the services the ones before it provided; answers the services
   * they provide, for the handler.
   */
  const secured = (index: number, services: Services): Effect.Effect<Services, unknown, unknown> => {
    if (index === outermostFirst.length) return Effect.succeed(services)
    const { effect, tag } = outermostFirst[index]!
    const run = services.length === 0 ? effect : within(services, effect)
    const next = (value: unknown) =>
      secured(index + 1, tag.provides === undefined ? services : [...services, [tag.provides.key, value]])
    if (tag.optional === true) {
      return Effect.matchEffect(run, { onFailure: () => secured(index + 1, services), onSuccess: next })
    }
    return Effect.flatMap(run, next)
  }
  const authenticated = outermostFirst.length === 0 ? Effect.succeed<Services>([]) : secured(0, [])

  const uninterruptible = item.uninterruptible
  const readsBody = decodePayload !== undefined
  return (request, params) => {
    // HttpApiBuilder reads a body as JSON unless its Content-Type says otherwise (the envelope refuses other types of
    // a body that is present; an absent body with another type is read the platform's way)
    const type = request.headers["content-type"]
    if (readsBody && type !== undefined && !type.toLowerCase().includes("application/json")) return undefined
    // the middleware read the request from the context: a request with its body read (the envelope's view of it)
    // is put there for them, and for the handler with what they provide
    const asRequest: Services = [[HttpServerRequest.HttpServerRequest.key, request]]
    const answer = Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, unknown, unknown>((fiber) => {
      const inContext = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest) === request
      return Effect.flatMap(
        inContext ? authenticated : within(asRequest, authenticated),
        (services) => within(inContext ? services : [...asRequest, ...services], call(request, params))
      )
    })
    return (uninterruptible ? answer : Effect.interruptible(answer)) as Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      unknown
    >
  }
}

/**
 * Registers the handled endpoints of a built group (`handlers`: what the group's build answered) with the registry
 * in `context`, if there is one; `context` is the group's.
 */
export const register = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  handlers: Handled,
  context: Context.Context<never>
): void => {
  const registry = Context.getOption(context, Dispatcher)
  if (Option.isNone(registry)) return
  for (const item of handlers.handlers) {
    const dispatch = dispatchOf(group, item, context)
    if (dispatch !== undefined) registry.value.add(item.endpoint.method, item.endpoint.path, dispatch)
  }
}
