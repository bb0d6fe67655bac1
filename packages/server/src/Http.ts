/**
 * The composed HTTP layer: the HttpApi implemented against the application ports, with the envelope middleware,
 * the OpenAPI documents (`/api/v1/openapi.json`, `/admin/v1/openapi.json`) and the interactive docs at `/docs`
 * (`Docs.ts`). Three ways to run it:
 *
 * - {@link layer}: serve it on an `HttpServer` (e.g. `NodeHttpServer.layer`);
 * - {@link makeHttpApp}: an `HttpApp` to mount into another Effect HTTP app;
 * - {@link toWebHandler}: a `(Request) => Promise<Response>` handler for any server that speaks web requests.
 *
 * All three also serve the signed result files at `GET /files/*` (see `Files.ts`) through `Services.FileService`.
 *
 * @since 0.1.0
 */
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Api, Families, type Family, type RateLimit as Counters, type Services } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Authentication from "./Authentication.js"
import * as Callbacks from "./Callbacks.js"
import { withRemoteAddress } from "./ClientAddress.js"
import * as Docs from "./Docs.js"
import * as Envelope from "./Envelope.js"
import * as Files from "./Files.js"
import * as Health from "./Health.js"
import * as AdminHttp from "./http/Admin.js"
import * as ApiKeysHttp from "./http/ApiKeys.js"
import * as BalanceHttp from "./http/Balance.js"
import * as ChannelsHttp from "./http/Channels.js"
import * as GenerationHttp from "./http/Generation.js"
import * as TasksHttp from "./http/Tasks.js"
import * as VoicesHttp from "./http/Voices.js"
import * as WebhooksHttp from "./http/Webhooks.js"
import * as DirectPath from "./internal/directPath.js"
import * as RateLimit from "./RateLimit.js"
import type { ServerConfig } from "./ServerConfig.js"

/**
 * Where the public API's OpenAPI document is served (`Docs.ts`).
 *
 * @since 0.1.0
 * @category constants
 */
export const openApiPath = Docs.openApiPath
/**
 * Where the operator API's OpenAPI document is served (`Docs.ts`).
 *
 * @since 0.1.0
 * @category constants
 */
export const adminOpenApiPath = Docs.adminOpenApiPath
/**
 * Where the interactive documentation is served (`Docs.ts`).
 *
 * @since 0.1.0
 * @category constants
 */
export const docsPath = Docs.docsPath

/**
 * Every port the HTTP layer calls, plus its settings.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements =
  | Services.TaskService
  | Services.BillingService
  | Services.KeyService
  | Services.WebhookService
  | Services.VoiceService
  | Services.AdminService
  | Services.AdminChannels
  | Services.FileService
  | Health.Readiness
  | ServerConfig
  // the rate limits' counters: `RateLimit.layerMemory` for one process, a shared store for several nodes
  | Counters.RateWindows

/**
 * How the API is served.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * Whether the envelope dispatches each request to its endpoint's handler itself (default), or every request goes
   * through `HttpApiBuilder`'s router (`false`; the same answers, more work per request:
   * docs/performance-notes.md). For comparisons, e.g. the dispatch's tests and benchmarks.
   */
  readonly dispatch?: boolean | undefined
}

/**
 * The HttpApi of a registry (`Api.make(families)`) with every group implemented, and the registry of its endpoints
 * that the envelope dispatches itself (`internal/directPath.ts`; see {@link Options}).
 *
 * @since 0.1.0
 * @category api
 */
export const apiFor = (
  families: Family.Registry,
  options: Options = {}
): Layer.Layer<HttpApi.Api | DirectPath.Dispatcher, never, Requirements> =>
  HttpApiBuilder.api(Api.make(families)).pipe(
    Layer.provide([
      GenerationHttp.layerFor(families),
      GenerationHttp.estimatesFor(families),
      TasksHttp.layer,
      BalanceHttp.layer,
      VoicesHttp.layer,
      ApiKeysHttp.layer,
      WebhooksHttp.layer,
      AdminHttp.layer,
      ChannelsHttp.layer
    ]),
    Layer.provide([Authentication.layer, Authentication.adminLayer]),
    // a limiter of its own per built API (its memo of full counters belongs to this server; the counts are the store's)
    Layer.provide(Layer.effect(RateLimit.RateLimiter, RateLimit.make)),
    // a registry per built API: its groups register their endpoints, its envelope dispatches them
    Layer.provideMerge(DirectPath.layer(options.dispatch !== false))
  )

/**
 * The HttpApi of the registry with every group implemented.
 *
 * @since 0.1.0
 * @category api
 */
export const ApiLive = apiFor(Families.registry)

/**
 * The OpenAPI documents, the docs page, the signed result files (`GET /files/*`) and the envelope middleware (whose
 * route table is the registry's API).
 */
const extrasFor = (families: Family.Registry) =>
  Layer.mergeAll(
    Docs.layer,
    Files.layer,
    Callbacks.layer,
    Health.layer,
    Envelope.layer({
      apiRoutes: Envelope.routesOf(Api.make(families)),
      extraRoutes: [
        ...Docs.routes,
        ...Files.routes,
        ...Callbacks.routes,
        ...Health.routes
      ]
    })
  )

/** The extras of the shipped registry. */
const Extras = extrasFor(Families.registry)

/**
 * Serves the API of a registry on the `HttpServer` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFor = (families: Family.Registry, options: Options = {}): Layer.Layer<
  never,
  never,
  HttpServer.HttpServer | HttpRouter.HttpRouter.DefaultServices | Requirements
> => HttpApiBuilder.serve().pipe(Layer.provide(extrasFor(families)), Layer.provide(apiFor(families, options)))

/**
 * Serves the API on the `HttpServer` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = layerFor(Families.registry)

/**
 * The API built as an `HttpApp` ({@link makeServed}).
 *
 * @since 0.1.0
 * @category models
 */
export interface Served {
  /** The API, to mount or serve (see {@link makeHttpApp}). */
  readonly httpApp: HttpApp.Default<never, HttpRouter.HttpRouter.DefaultServices>
  /**
   * What `httpApp` answers a request of an endpoint the envelope dispatches itself (`internal/directPath.ts`), without
   * the app around the envelope: to run in a fiber whose context holds the request (`HttpServerRequest`), and the
   * platform's services `httpApp` needs; it fails only when interrupted. `undefined` for every other request, which
   * `httpApp` serves. For a listener that starts the fibers of such requests itself (`@mediagate/node`'s
   * listener; docs/architecture.md "The request path"): a handler it runs gets no request `Scope`.
   */
  readonly dispatched: (
    request: HttpServerRequest.HttpServerRequest
  ) => HttpApp.Default<never, HttpRouter.HttpRouter.DefaultServices> | undefined
}

/**
 * Builds the API as an `HttpApp`, with the envelope's direct answer to the requests it dispatches ({@link Served});
 * with `dispatch: false`, `dispatched` answers none and every request goes through `HttpApiBuilder`'s router.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeServedWith = (options: Options): Effect.Effect<Served, never, Scope.Scope | Requirements> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Layer.mergeAll(Extras, HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer).pipe(
        Layer.provideMerge(options.dispatch === false ? apiFor(Families.registry, options) : ApiLive)
      )
    )
    // building the app builds the envelope, which hands the registry its answer
    const httpApp = yield* Effect.provide(HttpApiBuilder.httpApp, context)
    const registry = Context.get(context, DirectPath.Dispatcher)
    return {
      httpApp,
      dispatched: (request) =>
        registry.answer(request) as HttpApp.Default<never, HttpRouter.HttpRouter.DefaultServices> | undefined
    }
  })

/**
 * A `node:http` request listener over a served API (`@mediagate/node` serves with it): the requests the envelope
 * answers directly ({@link Served.dispatched}) start their fiber in the listener and are written by it, with
 * `around` (the access log) around their answer; every other request, and every request while tracing is on, goes
 * to `platform`, the platform's listener (`NodeHttpServer.makeHandler`). Answers are alike either way.
 *
 * @since 0.1.0
 * @category utils
 */
export const nodeListener: <R>(
  platform: (request: IncomingMessage, response: ServerResponse) => void,
  direct: (request: HttpServerRequest.HttpServerRequest) => HttpApp.Default<never, R> | undefined,
  around: (answer: HttpApp.Default<never, R>) => HttpApp.Default<never, R>
) => Effect.Effect<
  (request: IncomingMessage, response: ServerResponse) => void,
  never,
  Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>
> = DirectPath.listener

/**
 * Builds the API as an `HttpApp`, with the envelope's direct answer to the requests it dispatches ({@link Served}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeServed: Effect.Effect<Served, never, Scope.Scope | Requirements> = makeServedWith({})

/**
 * Builds the API as an `HttpApp`, to mount into another Effect HTTP app (its routes keep their absolute paths:
 * `/api/v1/...`, `/admin/v1/...`, `/docs`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeHttpApp: Effect.Effect<
  HttpApp.Default<never, HttpRouter.HttpRouter.DefaultServices>,
  never,
  Scope.Scope | Requirements
> = Effect.map(makeServed, (served) => served.httpApp)

/**
 * A web handler (`(Request, Context.make(ClientAddress.RemoteAddress, socketAddress)?) => Promise<Response>`) over the
 * given ports, for plain Node or any fetch-style server. Call `dispose` on shutdown.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toWebHandler = <E>(ports: Layer.Layer<Requirements, E>) =>
  withRemoteAddress(HttpApiBuilder.toWebHandler(
    Layer.mergeAll(Extras, HttpServer.layerContext).pipe(Layer.provideMerge(ApiLive), Layer.provide(ports))
  ))
