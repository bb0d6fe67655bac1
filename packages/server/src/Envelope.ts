/**
 * The API-level middleware that makes every failure an envelope (decisions.md §1): decode failures and malformed
 * JSON → 400 `VALIDATION_ERROR`, unknown routes → 404 `NOT_FOUND`, wrong methods → 405 `METHOD_NOT_ALLOWED`, bodies
 * over the limit → 413 `PAYLOAD_TOO_LARGE`, anything unexpected → 500 `INTERNAL_ERROR` with no internals. Declared
 * API errors pass through and are encoded by the HttpApi. It also sets the request's address policy.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Address, Api, Errors, ValidationMessage } from "@mediagate/contract"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as FindMyWay from "find-my-way-ts"
import { ServerConfig } from "./ServerConfig.js"

/** An error response in the API envelope. */
export const errorResponse = (
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(
    { success: false, error: { code, message } },
    headers === undefined ? { status } : { status, headers }
  )

/** Routes outside the HttpApi groups that the server also answers (documentation). */
export interface ExtraRoute {
  readonly method: string
  readonly path: `/${string}`
}

/** Answers 405 with `Allow` when the path exists for other methods, else 404. */
export const makeRouteTable = (extra: ReadonlyArray<ExtraRoute>) => {
  const routers = new Map<string, FindMyWay.Router<true>>()
  const add = (method: string, path: `/${string}`) => {
    const router = routers.get(method) ?? FindMyWay.make<true>()
    routers.set(method, router)
    router.on(method, path, true)
  }
  HttpApi.reflect(Api.MediagateApi, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      add(endpoint.method, endpoint.path)
    }
  })
  for (const route of extra) add(route.method, route.path)
  return (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse => {
    const path = request.url.split("?")[0] ?? "/"
    const allowed = [...routers]
      .filter(([method, router]) => router.find(method, path) !== undefined)
      .map(([method]) => method)
    return allowed.length > 0
      ? errorResponse(405, "METHOD_NOT_ALLOWED", `${request.method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`, {
        allow: allowed.join(", ")
      })
      : errorResponse(404, "NOT_FOUND", `no route for ${request.method} ${path}`)
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
      return (name: string, handler: (request: unknown) => Effect.Effect<unknown, unknown, unknown>, options?: unknown) =>
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
 * once started, even when the client goes away ({@link runToEnd}).
 */
export const group: typeof HttpApiBuilder.group = (api, name, build) =>
  HttpApiBuilder.group(api, name, (handlers) => build(marking(handlers)))

const isMaxBytesDefect = ({ cause }: HttpServerError.RequestError) =>
  Predicate.hasProperty(cause, "message") && String(cause.message).includes("maxBytes")

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0

const isJsonContentType = (value: string | undefined) =>
  value === undefined || /^application\/(?:[\w.+-]+\+)?json\b/i.test(value.trim())

/** The envelope middleware as a layer for `HttpApiBuilder` (provide it to the served API). */
export const layer = (options: { readonly extraRoutes?: ReadonlyArray<ExtraRoute> } = {}) =>
  HttpApiBuilder.middleware(Effect.gen(function*() {
    const config = yield* ServerConfig
    const notFoundOr405 = makeRouteTable(options.extraRoutes ?? [])
    const policy: Address.AddressPolicy = { allowPrivate: config.allowPrivateAddresses }
    const maxBodySize = Option.some(config.maxBodyBytes)
    const tooLarge = () =>
      errorResponse(413, "PAYLOAD_TOO_LARGE", `request body is larger than ${config.maxBodyBytes} bytes`)

    /** The answer to a failure of the app (see the module's comment). */
    const recover = (request: HttpServerRequest.HttpServerRequest, cause: Cause.Cause<never>) =>
      Effect.gen(function*() {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          const error: unknown = failure.value
          if (error instanceof HttpApiError.HttpApiDecodeError) {
            if (handlerStarted.has(request)) {
              yield* Effect.logError("response encoding failed", error.message)
              return errorResponse(500, "INTERNAL_ERROR", "internal error")
            }
            const first = error.issues[0]
            return errorResponse(
              400,
              "VALIDATION_ERROR",
              first === undefined ? "request is invalid" : ValidationMessage.formatIssue(first)
            )
          }
          if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
            return notFoundOr405(error.request)
          }
          if (Errors.isApiError(error)) return yield* Effect.failCause(cause)
          yield* Effect.logError("unexpected failure", cause)
          return errorResponse(500, "INTERNAL_ERROR", "internal error")
        }
        const defect = Cause.dieOption(cause)
        if (Option.isNone(defect)) return yield* Effect.failCause(cause) // interruption
        const value = defect.value
        if (HttpServerError.isServerError(value) && value._tag === "RequestError" && value.reason === "Decode") {
          return isMaxBytesDefect(value)
            ? tooLarge()
            : errorResponse(400, "VALIDATION_ERROR", "body: must be valid JSON")
        }
        yield* Effect.logError("defect", cause)
        return errorResponse(500, "INTERNAL_ERROR", "internal error")
      })

    return (app) => {
      // built once: the address policy when the fiber's differs (by default it is the strict one: a request then
      // changes no fiber-local value for it), and the body limit for requests that may have a body
      const withPolicy = (self: typeof app): typeof app => {
        const local = Effect.locally(self, Address.currentAddressPolicy, policy)
        return Effect.withFiberRuntime((fiber) =>
          fiber.getFiberRef(Address.currentAddressPolicy).allowPrivate === policy.allowPrivate ? self : local
        )
      }
      const bodiless = withPolicy(app)
      const limited = withPolicy(HttpIncomingMessage.withMaxBodySize(app, maxBodySize))
      return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const length = request.headers["content-length"]
        if (length !== undefined && Number(length) > config.maxBodyBytes) return Effect.succeed(tooLarge())
        const body = hasBody(request)
        if (body && !isJsonContentType(request.headers["content-type"])) {
          return Effect.succeed(errorResponse(400, "VALIDATION_ERROR", "body: Content-Type must be application/json"))
        }
        // a GET or HEAD without Content-Length or Transfer-Encoding has no body to limit (a web request's never has one)
        const unlimited = !body && (request.method === "GET" || request.method === "HEAD")
        return Effect.catchAllCause(unlimited ? bodiless : limited, (cause) => recover(request, cause))
      })
    }
  }))
