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
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
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
  readonly path: string
}

/** Answers 405 with `Allow` when the path exists for other methods, else 404. */
export const makeRouteTable = (extra: ReadonlyArray<ExtraRoute>) => {
  const routers = new Map<string, FindMyWay.Router<true>>()
  const add = (method: string, path: string) => {
    let router = routers.get(method)
    if (router === undefined) {
      router = FindMyWay.make<true>()
      routers.set(method, router)
    }
    router.on(method as "GET", path as `/${string}`, true)
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
      .filter(([method, router]) => router.find(method as "GET", path) !== undefined)
      .map(([method]) => method)
    return allowed.length > 0
      ? errorResponse(405, "METHOD_NOT_ALLOWED", `${request.method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`, {
        allow: allowed.join(", ")
      })
      : errorResponse(404, "NOT_FOUND", `no route for ${request.method} ${path}`)
  }
}

/**
 * Set when a request reaches its handler: a decode failure after that point comes from encoding the handler's
 * answer, which is a server fault (500), not a client's (400).
 */
const handlerStarted: FiberRef.FiberRef<{ started: boolean }> = FiberRef.unsafeMake<{ started: boolean }>({ started: false })

const markHandlerStarted: Effect.Effect<void> = Effect.map(FiberRef.get(handlerStarted), (flag) => {
  flag.started = true
})

/** The handlers builder with `handle` (and `handleRaw`) wrapped so that every handler marks its start first. */
const marking = <H extends object>(handlers: H): H =>
  new Proxy(handlers, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if ((property !== "handle" && property !== "handleRaw") || typeof value !== "function") return value
      return (name: string, handler: (request: unknown) => Effect.Effect<unknown, unknown, unknown>, options?: unknown) =>
        marking(Reflect.apply(value, target, [
          name,
          (request: unknown) => Effect.zipRight(markHandlerStarted, handler(request)),
          options
        ]))
    }
  })

/**
 * `HttpApiBuilder.group` for the groups served behind the envelope {@link layer}: every handler it registers
 * marks the request as having reached its handler, so the envelope tells an answer that failed to encode (500)
 * from a request that failed to decode (400) by itself — no handler has to remember anything.
 */
export const group: typeof HttpApiBuilder.group = (api, name, build) =>
  HttpApiBuilder.group(api, name, (handlers) => build(marking(handlers)))

const isMaxBytesDefect = (defect: HttpServerError.RequestError) =>
  String((defect.cause as { message?: unknown } | undefined)?.message ?? "").includes("maxBytes")

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
    const tooLarge = () =>
      errorResponse(413, "PAYLOAD_TOO_LARGE", `request body is larger than ${config.maxBodyBytes} bytes`)

    return (app) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const length = request.headers["content-length"]
        if (length !== undefined && Number(length) > config.maxBodyBytes) return tooLarge()
        if (hasBody(request) && !isJsonContentType(request.headers["content-type"])) {
          return errorResponse(400, "VALIDATION_ERROR", "body: Content-Type must be application/json")
        }
        const flag = { started: false }
        return yield* app.pipe(
          HttpIncomingMessage.withMaxBodySize(Option.some(config.maxBodyBytes)),
          Effect.locally(Address.currentAddressPolicy, policy),
          Effect.locally(handlerStarted, flag),
          Effect.catchAllCause((cause) =>
            Effect.gen(function*() {
              const failure = Cause.failureOption(cause)
              if (Option.isSome(failure)) {
                const error: unknown = failure.value
                if (error instanceof HttpApiError.HttpApiDecodeError) {
                  if (flag.started) {
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
          )
        )
      })
  }))
