/**
 * The API-level middleware that makes every failure an envelope (decisions.md §1): decode failures and malformed
 * JSON → 400 `VALIDATION_ERROR`, unknown routes → 404 `NOT_FOUND`, wrong methods → 405 `METHOD_NOT_ALLOWED`, bodies
 * over the limit → 413 `PAYLOAD_TOO_LARGE`, anything unexpected → 500 `INTERNAL_ERROR` with no internals. Declared
 * API errors pass through and are encoded by the HttpApi. It also sets the request's address policy.
 *
 * Before any route runs (decisions.md §11): a path that is not canonical, or that no route matches exactly, is
 * answered here (404/405) and never routed; a NUL in the query is a 400; a body is read under the limit (chunked
 * too: a 413 the client can read) and checked in one pass for nesting deeper than 64 levels and NUL characters in
 * its strings (400), so nothing deeper or with a NUL reaches a Schema or a database.
 *
 * Request ids (`RequestContext.ts`): every request gets one (its valid `X-Request-Id`, or a new one) as it
 * arrives, with the route template it matched; the answer carries it in `X-Request-Id` (every answer: success,
 * error, 404/405, files, health, docs), error envelopes in `error.request_id`, and every log line of the request in
 * the `request_id` annotation. Declared API errors are rendered here too (the same envelope HttpApi's encoder
 * writes, plus the id), so no error answer leaves without its id. Every answer under `/api/v1` and `/admin/v1`
 * carries `Cache-Control: no-store` ({@link isNoStore}).
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiError from "@effect/platform/HttpApiError"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Address, Api, Errors, Metrics, ValidationMessage } from "@mediagate/contract"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import * as FindMyWay from "find-my-way-ts"
import * as DirectPath from "./internal/directPath.js"
import * as FiberLocal from "./internal/fiberLocal.js"
import * as RequestBody from "./internal/requestBody.js"
import * as RequestContext from "./RequestContext.js"
import { ServerConfig } from "./ServerConfig.js"

/**
 * An error response in the API envelope; with the request's id in `error.request_id` when given.
 *
 * @since 0.1.0
 * @category utils
 */
export const errorResponse = (
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>,
  requestId?: string
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(
    { success: false, error: requestId === undefined ? { code, message } : { code, message, request_id: requestId } },
    headers === undefined ? { status } : { status, headers }
  )

/**
 * {@link errorResponse} for a request the envelope saw: with its id (see `RequestContext.ts`).
 *
 * @since 0.1.0
 * @category utils
 */
export const errorResponseFor = (
  request: object,
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>
): HttpServerResponse.HttpServerResponse =>
  errorResponse(status, code, message, headers, RequestContext.get(request)?.id)

/**
 * The success answer of an endpoint whose success Schema is `schema`, for a value, encoded once per value (by
 * identity) and answered as it is again for the same value: for reads whose value is made once per state of what
 * it shows (a polled task's API view, which `TaskService` makes once per stored record), so that polling an
 * unchanged task encodes nothing. The answer
 * is what the HttpApi would encode (the endpoint's success Schema, its success status, JSON); a value that fails to
 * encode is answered as it is, for the HttpApi to encode and report as it reports every encoding failure. Answers
 * are held in a `WeakMap`: they live as long as their values.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodedOnce = <Success extends object, I>(schema: Schema.Schema<Success, I>) => {
  const encode = Schema.encodeEither(schema)
  const status = HttpApiSchema.getStatusSuccess(schema)
  const answers = new WeakMap<Success, HttpServerResponse.HttpServerResponse>()
  return (value: Success): Success | HttpServerResponse.HttpServerResponse => {
    const known = answers.get(value)
    if (known !== undefined) return known
    const encoded = encode(value)
    if (Either.isLeft(encoded)) return value
    const answer = HttpServerResponse.unsafeJson(encoded.right, { status })
    answers.set(value, answer)
    return answer
  }
}

/**
 * Routes outside the HttpApi groups that the server also answers (documentation).
 *
 * @since 0.1.0
 * @category routing
 */
export interface ExtraRoute {
  readonly method: string
  readonly path: `/${string}`
}

/** The path of a request target (before `?`). */
const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/**
 * Whether an answer to this request target is never to be stored by a cache: every answer under `/api/v1` and
 * `/admin/v1`, errors and the OpenAPI documents included (keys, webhook secrets, balances, tasks). Result files
 * (`/files/...`), the docs page and the dashboard set their own caching.
 *
 * @since 0.1.0
 * @category guards
 */
export const isNoStore = (url: string): boolean => {
  const path = pathOf(url)
  return path === "/api/v1" || path.startsWith("/api/v1/") || path === "/admin/v1" || path.startsWith("/admin/v1/")
}

/** The `Cache-Control` of the answers of {@link isNoStore}. */
const noStore = "no-store"

const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
const hexValue = (c: number) => c <= 57 ? c - 48 : (c | 32) - 87

/**
 * Whether a byte is one a canonical path never percent-encodes: RFC 3986 unreserved, `/` or `\` — or one it never
 * holds at all: NUL (no id contains it; decisions.md §12 answers an impossible id with 404).
 */
const mustNotBeEncoded = (b: number) =>
  (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) ||
  b === 45 || b === 46 || b === 95 || b === 126 || b === 47 || b === 92 || b === 0

/**
 * Whether a request path is in canonical form: absolute (`/` first, no scheme or authority), no empty segment
 * (`//`, a trailing `/`), no `.` or `..` segment, no `;`, `#` or `\`, and percent-escapes only of characters that
 * need them (never of letters, digits, `-._~`, `/` or `\`, never `%00`; each escape well formed). One pass over
 * the path.
 *
 * @since 0.1.0
 * @category guards
 */
export const isCanonicalPath = (path: string): boolean => {
  const length = path.length
  if (length === 0 || path.charCodeAt(0) !== 47) return false
  if (length === 1) return true
  if (path.charCodeAt(length - 1) === 47) return false
  let segmentStart = 1
  for (let i = 1; i <= length; i++) {
    const c = i === length ? 47 : path.charCodeAt(i)
    if (c === 47) {
      const segment = i - segmentStart
      if (segment === 0) return false
      if (
        path.charCodeAt(segmentStart) === 46 &&
        (segment === 1 || (segment === 2 && path.charCodeAt(segmentStart + 1) === 46))
      ) {
        return false
      }
      segmentStart = i + 1
    } else if (c === 59 || c === 35 || c === 92) {
      return false
    } else if (c === 37) {
      const high = path.charCodeAt(i + 1)
      const low = path.charCodeAt(i + 2)
      if (!isHex(high) || !isHex(low) || mustNotBeEncoded(hexValue(high) * 16 + hexValue(low))) return false
      i += 2
    }
  }
  return true
}

/**
 * The route table of the API and the extra routes, matched exactly as written (`DirectPath.strictMatching`): the
 * envelope answers every path this table does not match itself, so a variant such as `/ADMIN/V1/...` or
 * `//admin/v1/...` never reaches the platform's lenient router.
 *
 * @since 0.1.0
 * @category routing
 */
export interface RouteTable {
  /** Whether a route matches the method (`HEAD` also by `GET`) and path exactly. */
  readonly matches: (method: string, path: string) => boolean
  /** The template of the route that matches the method (`HEAD` also by `GET`) and path exactly, if any. */
  readonly route: (method: string, path: string) => string | undefined
  /**
   * The answer to a path no route matches: 405 with `Allow` when the path exists for other methods, else 404 (with
   * `requestId` in the envelope when given).
   */
  readonly notFound: (
    request: HttpServerRequest.HttpServerRequest,
    requestId?: string
  ) => HttpServerResponse.HttpServerResponse
}

/**
 * The routes of an HttpApi's endpoints.
 *
 * @since 0.1.0
 * @category routing
 */
export const routesOf = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlyArray<ExtraRoute> => {
  const routes: Array<ExtraRoute> = []
  HttpApi.reflect(api, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      routes.push({ method: endpoint.method, path: endpoint.path })
    }
  })
  return routes
}

/**
 * The route table of the API's routes (default: the shipped API's) and `extra` (see {@link RouteTable}).
 *
 * @since 0.1.0
 * @category routing
 */
export const makeRouteTable = (
  extra: ReadonlyArray<ExtraRoute>,
  api: ReadonlyArray<ExtraRoute> = routesOf(Api.MediagateApi)
): RouteTable => {
  // each route's handler is its template: the route label of metrics and logs, found by the one match
  const routers = new Map<string, FindMyWay.Router<string>>()
  const add = (method: string, path: `/${string}`) => {
    const router = routers.get(method) ?? FindMyWay.make<string>(DirectPath.strictMatching)
    routers.set(method, router)
    router.on(method, path, path)
  }
  for (const route of [...api, ...extra]) add(route.method, route.path)
  const find = (method: string, path: string) => routers.get(method)?.find(method, path)?.handler
  const route = (method: string, path: string) =>
    find(method, path) ?? (method === "HEAD" ? find("GET", path) : undefined)
  return {
    matches: (method, path) => route(method, path) !== undefined,
    route,
    notFound: (request, requestId) => {
      const path = pathOf(request.url)
      const allowed = isCanonicalPath(path)
        ? [...routers].filter(([method, router]) => router.find(method, path) !== undefined).map(([method]) => method)
        : []
      return allowed.length > 0
        ? errorResponse(
          405,
          "METHOD_NOT_ALLOWED",
          `${request.method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`,
          { allow: allowed.join(", ") },
          requestId
        )
        : errorResponse(404, "NOT_FOUND", `no route for ${request.method} ${path}`, undefined, requestId)
    }
  }
}

/**
 * The requests that reached their handler: a decode failure after that point comes from encoding the handler's
 * answer, which is a server fault (500), not a client's (400). Keyed by the request object, which the router hands
 * to the handler as it is (`{ request }`): marking costs no fiber work.
 */
const handlerStarted = new WeakSet<object>()

/** Marks the request a handler was called with (its argument's `request`). */
const markHandlerStarted = (argument: unknown): void => {
  if (Predicate.hasProperty(argument, "request") && Predicate.isObject(argument.request)) {
    handlerStarted.add(argument.request)
  }
}

/**
 * How the routes of {@link group} run unless a handler says otherwise: to their end, even when the client goes
 * away. Interrupting a request's database work gains nothing (a transaction commits whole or not at all) and costs
 * a query cancellation, which on PostgreSQL takes a pool connection of its own: a burst of disconnects (a load
 * balancer's timeout, a benchmark's end) could hold every connection waiting for one, and stall the pool for the
 * driver's 5 s cancellation timeout.
 */
const runToEnd = { uninterruptible: true }

/**
 * The handlers builder with `handle` (and `handleRaw`) wrapped so that every handler marks its start first, and
 * runs to its end ({@link runToEnd}) unless its options say otherwise.
 */
const marking = <H extends object>(handlers: H): H =>
  new Proxy(handlers, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if ((property !== "handle" && property !== "handleRaw") || typeof value !== "function") return value
      return (
        name: string,
        handler: (request: unknown) => Effect.Effect<unknown, unknown, unknown>,
        options?: unknown
      ) =>
        marking(Reflect.apply(value, target, [
          name,
          (request: unknown) => {
            markHandlerStarted(request)
            return handler(request)
          },
          options ?? runToEnd
        ]))
    }
  })

/**
 * `HttpApiBuilder.group` for the groups served behind the envelope {@link layer}: every handler it registers
 * marks the request as having reached its handler, so the envelope tells an answer that failed to encode (500)
 * from a request that failed to decode (400) by itself — no handler has to remember anything; and runs to its end
 * once started, even when the client goes away ({@link runToEnd}). Built where a dispatch registry is provided
 * (`Http.apiFor`), its endpoints are registered there too, and the envelope dispatches their requests itself
 * (`internal/directPath.ts`).
 *
 * @since 0.1.0
 * @category api
 */
export const group: typeof HttpApiBuilder.group = (api, name, build) =>
  HttpApiBuilder.group(api, name, (handlers) => {
    // the build answers the handlers builder, or an effect of it; its type is HttpApiBuilder's to check
    const built: unknown = build(marking(handlers))
    const handled = (Effect.isEffect(built) ? built : Effect.succeed(built)) as Effect.Effect<DirectPath.Handled>
    return Effect.flatMap(Effect.context<never>(), (context) =>
      Effect.tap(handled, (registered) => DirectPath.register(registered, context))) as never
  })

/** A request's registered endpoint, if any (`internal/directPath.ts`). */
type Found = ReturnType<DirectPath.Registry["find"]>

const isMaxBytesDefect = ({ cause }: HttpServerError.RequestError) =>
  Predicate.hasProperty(cause, "message") && String(cause.message).includes("maxBytes")

const isJsonContentType = (value: string | undefined) =>
  value === undefined || /^application\/(?:[\w.+-]+\+)?json\b/i.test(value.trim())

/**
 * The envelope middleware as a layer for `HttpApiBuilder` (provide it to the served API).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: {
    readonly extraRoutes?: ReadonlyArray<ExtraRoute>
    /** The API's own routes (default: the shipped API's; see {@link routesOf}). */
    readonly apiRoutes?: ReadonlyArray<ExtraRoute>
  } = {}
) =>
  HttpApiBuilder.middleware(Effect.gen(function*() {
    const config = yield* ServerConfig
    const registry = Option.getOrUndefined(yield* Effect.serviceOption(DirectPath.Dispatcher))
    const routes = makeRouteTable(options.extraRoutes ?? [], options.apiRoutes)
    /**
     * The registered routes that some static route's path also matches (read once every group has registered, at
     * the first request): a request they match is checked against the whole route table.
     */
    let shadowedRoutes: ReadonlySet<string> | undefined
    const shadowed = () =>
      shadowedRoutes ??= new Set(
        [...(options.apiRoutes ?? routesOf(Api.MediagateApi)), ...(options.extraRoutes ?? [])].flatMap(
          ({ method, path }) => {
            if (path.includes(":") || path.includes("*")) return []
            const match = registry?.find(method, path)
            return match !== undefined && match.route !== path ? [`${method} ${match.route}`] : []
          }
        )
      )
    const policy: Address.AddressPolicy = { allowPrivate: config.allowPrivateAddresses }
    const maxBodySize = Option.some(config.maxBodyBytes)
    /** An error envelope with the request's id (`id`). */
    const failed = (id: string, status: number, code: string, message: string) =>
      errorResponse(status, code, message, undefined, id)
    const tooLarge = (id: string) =>
      failed(id, 413, "PAYLOAD_TOO_LARGE", `request body is larger than ${config.maxBodyBytes} bytes`)
    const invalid = (id: string, message: string) => failed(id, 400, "VALIDATION_ERROR", message)

    /** The answer to a failure of the app (see the module's comment); `id`: the request's id. */
    const recover = (request: HttpServerRequest.HttpServerRequest, id: string, cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        /** A 500 without internals; what happened is logged. */
        const internal = (message: string, logged: unknown) =>
          Effect.as(Effect.logError(message, logged), failed(id, 500, "INTERNAL_ERROR", "internal error"))
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          const error: unknown = failure.value
          if (error instanceof HttpApiError.HttpApiDecodeError) {
            if (handlerStarted.has(request)) return yield* internal("response encoding failed", error.message)
            const first = error.issues[0]
            return invalid(id, first === undefined ? "request is invalid" : ValidationMessage.formatIssue(first))
          }
          if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
            return routes.notFound(error.request, id)
          }
          // the envelope HttpApi's encoder would write (`Errors.ts`), with the request's id
          if (Errors.isApiError(error)) return failed(id, error.status, error.code, error.message)
          return yield* internal("unexpected failure", cause)
        }
        const defect = Cause.dieOption(cause)
        // an interruption (the cause has neither a failure, see above, nor a defect)
        if (Option.isNone(defect)) return yield* Effect.failCause(cause as Cause.Cause<never>)
        const value = defect.value
        if (HttpServerError.isServerError(value) && value._tag === "RequestError" && value.reason === "Decode") {
          return isMaxBytesDefect(value) ? tooLarge(id) : invalid(id, "body: must be valid JSON")
        }
        return yield* internal("defect", cause)
      })

    return (app) => {
      /** Whether the fiber's address policy is already the server's (by default it is the strict one). */
      const policyIsSet = (fiber: { getFiberRef: <A>(ref: FiberRef.FiberRef<A>) => A }) =>
        fiber.getFiberRef(Address.currentAddressPolicy).allowPrivate === policy.allowPrivate
      /**
       * `self` under the server's address policy: a request whose fiber has it already changes no fiber-local value.
       */
      const withPolicy = (self: typeof app): typeof app => {
        const local = Effect.locally(self, Address.currentAddressPolicy, policy)
        return Effect.withFiberRuntime((fiber) => policyIsSet(fiber) ? self : local)
      }
      // built once: the app under the policy, and with the body limit for requests that may have a body
      const bodiless = withPolicy(app)
      const limited = withPolicy(HttpIncomingMessage.withMaxBodySize(app, maxBodySize))
      /**
       * What answers a request: its endpoint's dispatch when registered (`internal/directPath.ts`), else the app. A
       * dispatched request's span (while tracing is on) gets its route template as `http.route`, as the platform's
       * router gives the requests it routes.
       */
      const serve = (
        request: HttpServerRequest.HttpServerRequest,
        found: Found,
        unlimited: boolean,
        dispatched = found?.dispatch(request, found.params)
      ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, Effect.Effect.Context<typeof app>> => {
        if (dispatched === undefined || found === undefined) return unlimited ? bodiless : limited
        const limitedIfNeeded = unlimited ? dispatched : HttpIncomingMessage.withMaxBodySize(dispatched, maxBodySize)
        return Effect.withFiberRuntime((fiber) => {
          const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
          if (Option.isSome(span) && span.value._tag === "Span") span.value.attribute("http.route", found.route)
          return policyIsSet(fiber)
            ? limitedIfNeeded
            : Effect.locally(limitedIfNeeded, Address.currentAddressPolicy, policy)
        })
      }
      /** The answer to a request whose body was read and checked (see `internal/requestBody.ts`). */
      const withBody = (request: HttpServerRequest.HttpServerRequest, info: RequestContext.RequestInfo, found: Found) =>
        Effect.flatMap(Effect.orDie(RequestBody.read(request, config.maxBodyBytes)), (body) => {
          if (body === RequestBody.TooLarge) return Effect.succeed(tooLarge(info.id))
          const problem = RequestBody.inspectJson(body.text)
          if (problem !== undefined) return Effect.succeed(invalid(info.id, problem))
          const view = RequestBody.withBody(request, body)
          RequestContext.alias(view, info)
          // the body was read under the limit and the view answers from it: the platform's limit has nothing to read;
          // a dispatch puts the view in the context itself, the app finds it there
          const dispatched = found?.dispatch(view, found.params)
          return Effect.catchAllCause(
            dispatched === undefined
              ? FiberLocal.whileRunning(
                FiberRef.currentContext,
                Context.add(HttpServerRequest.HttpServerRequest, view),
                bodiless
              )
              : serve(view, found, true, dispatched),
            (cause) => recover(view, info.id, cause)
          )
        })
      /** The answer to a request (see the module's comment), before its id is set on it. */
      const answer = (
        request: HttpServerRequest.HttpServerRequest,
        matched: boolean,
        info: RequestContext.RequestInfo,
        found: Found
      ) => {
        const id = info.id
        // only canonical paths of a route reach the router (decisions.md §11 "Canonical paths")
        if (!matched) return Effect.succeed(routes.notFound(request, id))
        // the path has none (see isCanonicalPath): only the query can
        if (request.url.includes("%00")) {
          return Effect.succeed(invalid(id, "query: must not contain the NUL character (%00)"))
        }
        const length = request.headers["content-length"]
        if (length !== undefined && Number(length) > config.maxBodyBytes) return Effect.succeed(tooLarge(id))
        const body = RequestBody.present(request)
        if (body && !isJsonContentType(request.headers["content-type"])) {
          return Effect.succeed(invalid(id, "body: Content-Type must be application/json"))
        }
        if (body) return Effect.catchAllCause(withBody(request, info, found), (cause) => recover(request, id, cause))
        // a GET or HEAD without a body (see RequestBody.present) has none to limit
        const unlimited = request.method === "GET" || request.method === "HEAD"
        return Effect.catchAllCause(serve(request, found, unlimited), (cause) => recover(request, id, cause))
      }
      /** The answer to a request given its route (`undefined`: none matches) and its registered endpoint. */
      const respond = (request: HttpServerRequest.HttpServerRequest, route: string | undefined, found: Found) => {
        const info = RequestContext.attach(request, route ?? Metrics.unmatchedRoute)
        return FiberLocal.whileRunning(
          FiberRef.currentLogAnnotations,
          HashMap.set<string, unknown>("request_id", info.id),
          answer(request, route !== undefined, info, found)
        ).pipe(
          Effect.map((response) => {
            const withId = HttpServerResponse.setHeader(response, RequestContext.header, info.id)
            return isNoStore(request.url) ? HttpServerResponse.setHeader(withId, "cache-control", noStore) : withId
          })
        )
      }
      /**
       * A request's registered endpoint (`found`) and route: a registered endpoint's match is its route's too (both
       * tables match alike), so the route table is asked only for the others; `undefined` route: none matches.
       */
      const locate = (request: HttpServerRequest.HttpServerRequest, registeredOnly: boolean) => {
        const path = pathOf(request.url)
        if (!isCanonicalPath(path)) return { found: undefined, route: undefined }
        let found = registry?.find(request.method, path)
        // a registered route with parameters may also match the path of a static route that is not registered
        // (`/channels/:id` and `/channels/usage`): the route table, which holds both, decides for those alone
        if (found !== undefined && shadowed().has(`${request.method} ${found.route}`)) {
          if (routes.route(request.method, path) !== found.route) found = undefined
        }
        return { found, route: found?.route ?? (registeredOnly ? undefined : routes.route(request.method, path)) }
      }
      // a listener that starts a request's fiber itself answers a registered endpoint's request from here, without
      // the app around the envelope (Registry.answer)
      if (registry !== undefined) {
        registry.answer = (request) => {
          const { found, route } = locate(request, true)
          return found === undefined ? undefined : respond(request, route, found)
        }
      }
      return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const { found, route } = locate(request, false)
        return respond(request, route, found)
      })
    }
  }))
