/**
 * The whole Mediagate stack from one call, for apps that embed it and for the production server.
 *
 * - Effect apps: {@link layer}`(options)` or {@link layerConfig} (settings from Effect `Config`) provide the
 *   {@link Mediagate} service — an `HttpApp` to mount, bootstrap and the admin operations — and every port of
 *   `@mediagate/contract/Services`. {@link start} builds such a layer in the background, retrying a failed start,
 *   and answers `503` until it is ready.
 * - Plain Node apps: {@link make}`(options)` starts at once and hands back a `node:http` handler, an
 *   Express/Connect middleware, programmatic bootstrap and admin calls, and `close()`.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { AccountStore } from "@mediagate/accounts/AccountStore"
import * as Bootstrap from "@mediagate/accounts/Bootstrap"
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import { Account, ApiKey, type Errors, OptionalPackage, Services } from "@mediagate/contract"
import { Dashboard } from "@mediagate/dashboard"
import type * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import type * as WriteConnection from "@mediagate/persistence/WriteConnection"
import { Http } from "@mediagate/server"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as AccessLog from "./AccessLog.js"
import * as Database from "./Database.js"
import * as ConfigErrors from "./internal/configErrors.js"
import * as Stack from "./internal/stack.js"
import * as Tracing from "./internal/tracing.js"
import * as Metrics from "./Metrics.js"
import * as NodeAdapters from "./NodeAdapters.js"

// -----------------------------------------------------------------------------------------------------------------
// options
// -----------------------------------------------------------------------------------------------------------------

/**
 * Settings of an embedded Mediagate; what is not given takes the defaults of docs/configuration.md.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Where the data lives (default: SQLite at `<dataDir>/mediagate.db`). */
  readonly database?: Database.Database
  /** The SQLite file (unless `database` says otherwise) and the result files (`<dataDir>/files`); default `./data`. */
  readonly dataDir?: string
  /** Prefix of every table Mediagate creates (default `mediagate_`). */
  readonly tablePrefix?: string
  /** Absolute base URL of result file links, including any mount prefix (`https://example.com/media`). */
  readonly publicBaseUrl?: string
  /** Enables `/admin/v1` with this bearer token (default: admin API off). */
  readonly adminToken?: string | Redacted.Redacted<string>
  /** HMAC key of file URLs; set it when several processes serve files (default: random per process). */
  readonly fileSecret?: string | Redacted.Redacted<string>
  /**
   * Whether this process runs task workers and the webhook dispatcher (`false` for a web-only process), or the
   * number of engine steps it runs at once (default `true`: 32).
   */
  readonly workers?: boolean | number
  /** Addresses/CIDRs of proxies whose `X-Forwarded-For` is honoured. */
  readonly trustedProxies?: ReadonlyArray<string>
  /** Largest request body in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number
  /** Allow loopback/private webhook and media targets (development and tests only). */
  readonly allowPrivateAddresses?: boolean
  /**
   * One log line per request (method, route, path, status, duration, account, request id). Default off when embedded.
   */
  readonly accessLog?: boolean
  /**
   * Prometheus metrics at `GET /metrics` (admin token required unless `MEDIAGATE_METRICS_OPEN`), and the HTTP request
   * metric. Default off when embedded. See docs/operations.md.
   */
  readonly metrics?: boolean
  /** The web console at `/dashboard` (`MEDIAGATE_DASHBOARD`; docs/dashboard.md). Default on. */
  readonly dashboard?: boolean
  /**
   * Any other setting of docs/configuration.md by its variable name (`MEDIAGATE_TASK_TIMEOUT`,
   * `MEDIAGATE_UPSTREAM_VENDOR1`, ...). Pass `{ ...process.env }` to let the environment fill what the options
   * above leave open. The options above win.
   */
  readonly settings?: Readonly<Record<string, string | undefined>>
}

const secret = (value: string | Redacted.Redacted<string>) => typeof value === "string" ? value : Redacted.value(value)

/**
 * The options as the settings of docs/configuration.md (variable name to text).
 *
 * @since 0.1.0
 * @category encoding
 */
export const toSettings = (options: Options): Map<string, string> => {
  const map = new Map<string, string>()
  for (const [key, value] of Object.entries(options.settings ?? {})) if (value !== undefined) map.set(key, value)
  const set = (key: string, value: string | number | boolean | undefined) => {
    if (value !== undefined) map.set(key, String(value))
  }
  set("MEDIAGATE_DATA_DIR", options.dataDir)
  set("MEDIAGATE_TABLE_PREFIX", options.tablePrefix)
  set("MEDIAGATE_PUBLIC_BASE_URL", options.publicBaseUrl)
  set("MEDIAGATE_ADMIN_TOKEN", options.adminToken === undefined ? undefined : secret(options.adminToken))
  set("MEDIAGATE_FILE_SECRET", options.fileSecret === undefined ? undefined : secret(options.fileSecret))
  if (typeof options.workers === "number") {
    set("MEDIAGATE_WORKERS", options.workers > 0)
    set("MEDIAGATE_WORKER_CONCURRENCY", options.workers)
  } else {
    set("MEDIAGATE_WORKERS", options.workers)
  }
  set("MEDIAGATE_TRUSTED_PROXIES", options.trustedProxies?.join(","))
  set("MEDIAGATE_MAX_BODY_BYTES", options.maxBodyBytes)
  set("MEDIAGATE_WEBHOOK_ALLOW_PRIVATE", options.allowPrivateAddresses)
  set("MEDIAGATE_ACCESS_LOG", options.accessLog)
  set("MEDIAGATE_METRICS", options.metrics)
  set("MEDIAGATE_DASHBOARD", options.dashboard)
  return map
}

// -----------------------------------------------------------------------------------------------------------------
// the service
// -----------------------------------------------------------------------------------------------------------------

/**
 * Why a stack did not start; `retryable` failures (the database does not answer) are tried again by {@link start}.
 *
 * @since 0.1.0
 * @category errors
 */
export class StartError extends Schema.TaggedError<StartError>()("StartError", {
  message: Schema.String,
  retryable: Schema.Boolean,
  cause: Schema.optional(Schema.Unknown)
}) {}

const toStartError = (cause: unknown): StartError => {
  if (cause instanceof StartError) return cause
  if (ConfigError.isConfigError(cause)) {
    return new StartError({
      message: `invalid configuration: ${ConfigErrors.describe(cause)}`,
      retryable: false,
      cause
    })
  }
  if (cause instanceof OptionalPackage.MissingPackage) {
    return new StartError({ message: cause.message, retryable: false, cause })
  }
  if (cause instanceof Database.DatabaseError) {
    return new StartError({ message: cause.message, retryable: cause.retryable, cause })
  }
  return new StartError({ message: `could not start: ${messageOf(cause)}`, retryable: true, cause })
}

/** Whether a defect is a storage failure, or an error caused by one (a `MigrationError`). */
const databaseFailure = (defect: unknown, depth = 0): boolean =>
  SqlStore.isStorageFailure(defect) ||
  (typeof defect === "object" && defect !== null && depth < 5 && "cause" in defect &&
    databaseFailure(defect.cause, depth + 1))

const messageOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)

/**
 * A started Mediagate.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * The API (`/api/v1`, `/admin/v1`), result files (`/files`), `/docs`, `/healthz`, `/readyz` and (unless
   * `MEDIAGATE_DASHBOARD=false`) the dashboard at `/dashboard`, ready to mount.
   */
  readonly httpApp: HttpApp.Default
  /**
   * A `node:http` request listener serving {@link httpApp}, made by running this effect (once). The platform's
   * services (`HttpPlatform`, `FileSystem`, ...), which `httpApp` provides to each request it serves, are in the
   * listener's runtime instead: every request fiber starts with them, and none pays for providing them. The requests
   * of the endpoints the envelope dispatches itself (task creation, a task by id, ...) are answered without the
   * platform's per-request wrapping: the same answers, less work (docs/architecture.md "The request path").
   */
  readonly listener: Effect.Effect<(request: IncomingMessage, response: ServerResponse) => void>
  /** Where the data lives, for logs. */
  readonly database: string
  /**
   * On a database without any account, creates one with a live and a test key and answers them (the full keys
   * are shown only here); otherwise answers nothing. Safe to call from several processes at once.
   */
  readonly bootstrap: (
    options?: Bootstrap.BootstrapOptions
  ) => Effect.Effect<Option.Option<Bootstrap.Bootstrapped>, Errors.ServiceUnavailable | Errors.ValidationError>
  /** The operator's operations (what `/admin/v1` does), for apps that manage accounts in code. */
  readonly admin: Services.AdminService["Type"]
  /**
   * With metrics on (`MEDIAGATE_METRICS`): the settings and the exporter (`scrape`: the Prometheus text), e.g. to
   * serve it elsewhere; `httpApp` serves it at `/metrics` unless a port of its own is set.
   */
  readonly metrics: { readonly settings: Metrics.Settings; readonly exporter: Metrics.Exporter } | undefined
}

/**
 * The started Mediagate of a {@link layer}.
 *
 * @since 0.1.0
 * @category services
 */
export class Mediagate extends Context.Tag("@mediagate/node/Mediagate")<Mediagate, Service>() {}

/**
 * What a Mediagate layer provides: the {@link Mediagate} service, every port the HTTP layer calls
 * (`@mediagate/contract/Services`) and the services behind them (task storage, ledger, stores, ...).
 *
 * @since 0.1.0
 * @category models
 */
export type Provides = Mediagate | Http.Requirements | Layer.Layer.Success<typeof Stack.Ports>

/** The operator token (`MEDIAGATE_ADMIN_TOKEN`), which `/metrics` asks for unless open. */
const adminToken = Config.option(Config.redacted("MEDIAGATE_ADMIN_TOKEN"))

/**
 * Whether the envelope dispatches the requests of its endpoints itself and the listener starts their fibers
 * (`MEDIAGATE_HTTP_DISPATCH`, default on), or every request goes through `HttpApiBuilder`'s router: the same
 * answers, for comparing the two paths (docs/performance-notes.md).
 */
const httpDispatch = Config.boolean("MEDIAGATE_HTTP_DISPATCH").pipe(Config.withDefault(true))

/** Whether the web console is served at `/dashboard` (`MEDIAGATE_DASHBOARD`, default on). */
const dashboardEnabled = Config.boolean("MEDIAGATE_DASHBOARD").pipe(Config.withDefault(true))

const makeService = (database: string) =>
  Effect.gen(function*() {
    const { dispatched, httpApp: app } = yield* Http.makeServedWith({ dispatch: yield* httpDispatch })
    const platform = yield* Layer.build(NodeHttpServer.layerContext)
    const accessLog = yield* AccessLog.enabled
    const metricsSettings = yield* Metrics.config
    const exporter = metricsSettings.enabled ? yield* Metrics.make : undefined
    const respondMetrics = exporter !== undefined && metricsSettings.port === undefined
      ? Metrics.respond(exporter, { open: metricsSettings.open, adminToken: yield* adminToken })
      : undefined
    const dashboard = (yield* dashboardEnabled) ? Dashboard.make() : undefined
    /** The API with `/metrics`, the dashboard (whose paths never reach the API's envelope) and the access log. */
    const logged = { log: accessLog, metrics: metricsSettings.enabled }
    const around = <R>(api: HttpApp.Default<never, R>) => {
      const served = respondMetrics === undefined ? api : Metrics.route(api, respondMetrics)
      const withDashboard = dashboard === undefined ? served : Dashboard.route(served, dashboard)
      return AccessLog.middleware(withDashboard, logged)
    }
    const accounts = yield* Effect.context<AccountStore | BillingAccounts>()
    const admin = yield* Services.AdminService
    return Mediagate.of({
      httpApp: around(Effect.provide(app, platform)),
      // the platform's services in the listener's runtime, where every request fiber starts with them; the requests
      // the envelope answers directly start there without the platform's per-request wrapping (Http.nodeListener)
      listener: Effect.provide(
        Effect.flatMap(
          NodeHttpServer.makeHandler(around(app)),
          (fallback) => Http.nodeListener(fallback, dispatched, (answer) => AccessLog.middleware(answer, logged))
        ),
        platform
      ),
      database,
      bootstrap: (options) => Effect.provide(Bootstrap.bootstrap(options), accounts),
      admin,
      metrics: exporter === undefined ? undefined : { settings: metricsSettings, exporter }
    })
  })

const compose = (
  database: Layer.Layer<
    SqlClient.SqlClient | ReadConnection.ReadConnection | WriteConnection.WriteConnection,
    Database.DatabaseError
  >,
  description: string
) =>
  Layer.scoped(Mediagate, makeService(description)).pipe(
    Layer.provideMerge(Stack.Ports),
    Layer.provide(database),
    Layer.mapError(toStartError)
  ) satisfies Layer.Layer<Provides, StartError>

/**
 * The whole stack with its settings from Effect `Config` (decisions.md §10; by default the environment):
 * `DATABASE_URL` or SQLite in `MEDIAGATE_DATA_DIR`, `MEDIAGATE_TABLE_PREFIX`, `MEDIAGATE_WORKERS`, ...
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Provides, StartError> = Layer.unwrapEffect(Effect.map(
  Effect.mapError(Database.config, toStartError),
  (database) => compose(Database.layer(database), Database.describe(database))
))

/**
 * The stack's ports and background processes (workers, webhook dispatcher, pruner) without the HTTP service, with its
 * settings from `Config` as {@link layerConfig}: what the production server's worker thread runs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPortsConfig: Layer.Layer<Layer.Layer.Success<typeof Stack.Ports>, StartError> = Layer
  .unwrapEffect(Effect.map(
    Effect.mapError(Database.config, toStartError),
    (database) => Stack.Ports.pipe(Layer.provide(Database.layer(database)), Layer.mapError(toStartError))
  ))

/**
 * Only accounts, billing and the channels (what the admin commands need), with the database, table prefix and
 * channel keys from `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAdminConfig: Layer.Layer<Services.AdminService | Services.AdminChannels, StartError> = Layer
  .unwrapEffect(Effect.map(
    Effect.mapError(Database.config, toStartError),
    (database) => Stack.AdminPorts.pipe(Layer.provide(Database.layer(database)), Layer.mapError(toStartError))
  ))

/**
 * The whole stack from explicit options; nothing is read from the environment unless `settings` passes it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Provides, StartError> => {
  const provider = ConfigProvider.fromMap(toSettings(options))
  const stack = options.database === undefined
    ? layerConfig
    : compose(Database.layer(options.database), Database.describe(options.database))
  return stack.pipe(Layer.provide(Layer.setConfigProvider(provider)))
}

// -----------------------------------------------------------------------------------------------------------------
// starting in the background
// -----------------------------------------------------------------------------------------------------------------

/**
 * How often a failed start is tried again: from 0.5 s, doubling, at most every 30 s, until it starts. Whatever
 * the schedule, failures that retrying cannot fix (`retryable: false`: invalid settings, a missing driver) end it.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultRetry: Schedule.Schedule<unknown, StartError> = Schedule.exponential("500 millis").pipe(
  Schedule.union(Schedule.spaced("30 seconds"))
)

/**
 * A stack starting in the background.
 *
 * @since 0.1.0
 * @category models
 */
export interface Starting {
  /** A `node:http` listener: `503` (with `Retry-After`) until the stack is ready and after it is closed. */
  readonly listener: (request: IncomingMessage, response: ServerResponse) => void
  /** Waits until the stack is ready; fails when it cannot start (a failure that retrying cannot fix) or closed. */
  readonly ready: Effect.Effect<Service, StartError>
}

/**
 * Starts a stack in the background: attempts that fail with a retryable {@link StartError} are logged and tried
 * again on `retry`. The start and the stack belong to the scope: closing it stops a start under way, or releases
 * the stack (workers hand back their leases).
 *
 * @since 0.1.0
 * @category utils
 */
export const start = (
  stack: Layer.Layer<Mediagate, StartError>,
  options: { readonly retry?: Schedule.Schedule<unknown, StartError> } = {}
): Effect.Effect<Starting, never, Scope.Scope> =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<Service, StartError>()
    let serve: ((request: IncomingMessage, response: ServerResponse) => void) | undefined
    let state: "starting" | "ready" | "failed" | "closed" = "starting"
    let built: Scope.CloseableScope | undefined

    const attempt = Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(stack, scope).pipe(
        Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.sync(() => (built = scope)) : Scope.close(scope, exit))
      )
      return Context.get(context, Mediagate)
    }).pipe(
      // `@effect/sql` makes a defect of a failed COMMIT or ROLLBACK and of a failed migration: a connection the
      // database dropped while the stack was starting is a database outage like any other, so it is tried again
      Effect.catchAllDefect((defect) =>
        databaseFailure(defect)
          ? Effect.fail(new StartError({ message: `database: ${messageOf(defect)}`, retryable: true, cause: defect }))
          : Effect.die(defect)
      )
    )
    const boot = attempt.pipe(
      // a failure that retrying cannot fix is the caller's to report (`ready` fails with it; the server logs it once)
      Effect.tapError((error) =>
        error.retryable ? Effect.logWarning(`Mediagate could not start (${error.message}); trying again`) : Effect.void
      ),
      Effect.retry(Schedule.whileInput(options.retry ?? defaultRetry, (error: StartError) => error.retryable)),
      Effect.flatMap((service) =>
        Effect.map(service.listener, (handler) => {
          serve = handler
          state = "ready"
          return service
        })
      ),
      Effect.tapError(() => Effect.sync(() => (state = "failed"))),
      Effect.exit,
      Effect.flatMap((exit) => Deferred.complete(ready, exit))
    )
    const fiber = yield* Effect.forkScoped(boot)

    yield* Effect.addFinalizer((exit) =>
      Effect.gen(function*() {
        state = "closed"
        serve = undefined
        yield* Fiber.interrupt(fiber)
        yield* Deferred.fail(
          ready,
          new StartError({ message: "Mediagate was closed before it started", retryable: false })
        )
        if (built !== undefined) yield* Scope.close(built, exit)
      })
    )

    return {
      listener: (request, response) => {
        if (serve !== undefined) return serve(request, response)
        NodeAdapters.unavailable(
          request,
          response,
          state === "closed"
            ? "Mediagate is shutting down"
            : state === "failed"
            ? "Mediagate failed to start"
            : "Mediagate is starting"
        )
      },
      ready: Deferred.await(ready)
    }
  })

// -----------------------------------------------------------------------------------------------------------------
// plain Node
// -----------------------------------------------------------------------------------------------------------------

/**
 * A Mediagate embedded in a plain Node app (see {@link make}).
 *
 * @since 0.1.0
 * @category models
 */
export interface Handle {
  /** Resolves once the stack is ready; rejects if it cannot start or is closed first. */
  readonly ready: Promise<void>
  /** A `node:http` request listener serving Mediagate's paths (503 until ready). */
  readonly handler: (request: IncomingMessage, response: ServerResponse) => void
  /**
   * An Express/Connect middleware: serves Mediagate's paths (`/api/v1`, `/admin/v1`, `/files`, `/docs`,
   * `/dashboard`, `/healthz`, `/readyz`) below wherever it is mounted and calls `next()` for every other path. Works
   * before or after `express.json()`.
   */
  readonly middleware: NodeAdapters.Middleware
  /** {@link Service.bootstrap}: the first account and its keys, or `undefined` when accounts exist. */
  readonly bootstrap: (options?: Bootstrap.BootstrapOptions) => Promise<Bootstrap.Bootstrapped | undefined>
  /** The admin operations, taking and answering the JSON of `/admin/v1` (errors reject with the API error). */
  readonly admin: {
    readonly createAccount: (body: typeof Account.AccountCreate.Encoded) => Promise<typeof Account.Account.Encoded>
    readonly getAccount: (id: string) => Promise<typeof Account.Account.Encoded>
    readonly credit: (id: string, body: typeof Account.CreditRequest.Encoded) => Promise<typeof Account.Account.Encoded>
    readonly createKey: (
      accountId: string,
      body: typeof ApiKey.ApiKeyCreate.Encoded
    ) => Promise<typeof ApiKey.ApiKeyCreated.Encoded>
  }
  /** Stops serving (later requests answer 503), stops the workers (leases handed back) and closes the database. */
  readonly close: () => Promise<void>
}

/** Runs an effect for a promise that rejects with the error itself (an API error, a {@link StartError}). */
const toPromise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) =>
    Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))
  )

/**
 * Starts Mediagate in a plain Node app. It starts at once in the background (a failed start is retried, see
 * {@link defaultRetry}); requests that arrive first are answered `503` with `Retry-After`.
 *
 * ```js
 * import express from "express"
 * import { Mediagate } from "@mediagate/node"
 * const mediagate = Mediagate.make({
 *   database: { sqlite: "./data/mediagate.db" },
 *   publicBaseUrl: "http://localhost:3000"
 * })
 * const app = express()
 * app.use(mediagate.middleware)
 * app.listen(3000)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options & { readonly retry?: Schedule.Schedule<unknown, StartError> } = {}
): Handle => {
  const scope = Effect.runSync(Scope.make())
  // no tracer can be given to a plain-Node handle: spans follow the processes' tracer switch (off unless OTEL_*
  // settings, from `settings` or else the environment, configure an exporter; it lives until `close()`)
  const starting = Effect.runSync(Scope.extend(
    Tracing.applyScoped(
      start(layer(options), options.retry === undefined ? {} : { retry: options.retry }),
      ConfigProvider.fromMap(toSettings(options)).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
    ),
    scope
  ))
  const run = <A, E>(f: (service: Service) => Effect.Effect<A, E>): Promise<A> =>
    toPromise(Effect.flatMap(starting.ready, f))
  const wire = <A, I>(schema: Schema.Schema<A, I>) => (value: A) => Schema.encode(schema)(value)
  /** An admin call on a JSON body: decoded by `request` (an `Error` when invalid), the answer encoded by `answer`. */
  const call = <A, I, B, J, E>(
    request: Schema.Schema<A, I>,
    body: unknown,
    answer: Schema.Schema<B, J>,
    f: (admin: Service["admin"], value: A) => Effect.Effect<B, E>
  ) =>
    run((service) =>
      Schema.decodeUnknown(request)(body).pipe(
        Effect.mapError((error) => new Error(`invalid input: ${error.message}`)),
        Effect.flatMap((value) => f(service.admin, value)),
        Effect.flatMap(wire(answer))
      )
    )
  const ready = toPromise(Effect.asVoid(starting.ready))
  ready.catch(() => undefined)
  let closing: Promise<void> | undefined
  return {
    ready,
    handler: starting.listener,
    middleware: NodeAdapters.middleware(starting.listener),
    bootstrap: (bootstrapOptions) =>
      run((service) => Effect.map(service.bootstrap(bootstrapOptions), Option.getOrUndefined)),
    admin: {
      createAccount: (body) =>
        call(Account.AccountCreate, body, Account.Account, (admin, value) => admin.createAccount(value)),
      getAccount: (id) => run((service) => Effect.flatMap(service.admin.getAccount(id), wire(Account.Account))),
      credit: (id, body) =>
        call(Account.CreditRequest, body, Account.Account, (admin, credit) => admin.credit(id, credit)),
      createKey: (accountId, body) =>
        call(ApiKey.ApiKeyCreate, body, ApiKey.ApiKeyCreated, (admin, key) => admin.createKey(accountId, key))
    },
    close: () => (closing ??= toPromise(Scope.close(scope, Exit.void)))
  }
}
