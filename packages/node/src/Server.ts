/**
 * The production server: the whole stack built first (database, migrations, first-start bootstrap), then the
 * port opened on `HOST`:`PORT`, one log line per event and per request, and a clean stop on SIGTERM/SIGINT (the
 * port closes, requests in flight finish, workers hand back their leases, the database closes).
 *
 * `npm start`, the `mediagate` command and `examples/server` all run {@link main}.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as Bootstrap from "@mediagate/accounts/Bootstrap"
import { Errors, OptionalPackage } from "@mediagate/contract"
import { Envelope } from "@mediagate/server"
import * as UrlSigner from "@mediagate/vendors/UrlSigner"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs"
import { createServer, type Server as NodeServer } from "node:http"
import type { AddressInfo } from "node:net"
import { availableParallelism } from "node:os"
import { dirname, resolve } from "node:path"
import { setFlagsFromString } from "node:v8"
import * as AccessLog from "./AccessLog.js"
import * as ConfigErrors from "./internal/configErrors.js"
import * as FirstKeys from "./internal/firstKeys.js"
import * as IdleCollection from "./internal/idleCollection.js"
import * as Stack from "./internal/stack.js"
import * as Terminal from "./internal/terminal.js"
import * as ThreadRole from "./internal/threadRole.js"
import * as Tracing from "./internal/tracing.js"
import * as WorkerThread from "./internal/workerThread.js"
import * as Logging from "./Logging.js"
import * as Mediagate from "./Mediagate.js"
import * as Metrics from "./Metrics.js"
import * as NodeAdapters from "./NodeAdapters.js"

/**
 * Where the server listens.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListenOptions {
  /** Interface to bind (`HOST`; default: every interface). */
  readonly host?: string | undefined
  /** TCP port (`PORT`; default 3000; `0` picks a free one). */
  readonly port: number
  /** How long requests in flight may take to finish at shutdown before their connections are closed. Default 10 s. */
  readonly shutdownGrace?: Duration.DurationInput
}

/**
 * {@link ListenOptions} from Effect `Config`: `HOST`, `PORT`.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<ListenOptions> = Config.all({
  host: Config.option(Config.string("HOST")).pipe(Config.map(Option.getOrUndefined)),
  port: Config.port("PORT").pipe(Config.withDefault(3000))
})

/**
 * The address a server listens on, as a URL (`http://127.0.0.1:3000`).
 *
 * @since 0.1.0
 * @category utils
 */
export const urlOf = (server: NodeServer): string => {
  const address: AddressInfo | string | null = server.address()
  if (address === null || typeof address === "string") return String(address)
  const host = address.family === "IPv6" ?
    (address.address === "::" ? "localhost" : `[${address.address}]`)
    : address.address === "0.0.0.0"
    ? "localhost"
    : address.address
  return `http://${host}:${address.port}`
}

const closeServer = (server: NodeServer, grace: Duration.DurationInput) =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => server.closeAllConnections(), Duration.toMillis(grace))
    server.close(() => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    server.closeIdleConnections()
  })

/**
 * Opens the port with `listener`; closes it (letting requests in flight finish) when the scope closes.
 *
 * @since 0.1.0
 * @category running
 */
export const listen = (
  listener: NodeAdapters.Listener,
  options: ListenOptions
): Effect.Effect<NodeServer, Mediagate.StartError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<NodeServer, Mediagate.StartError>((resume) => {
      const server = createServer(listener)
      // requests Node's parser refuses (headers over 16 KB, malformed) are answered in the envelope too
      server.on("clientError", NodeAdapters.clientError)
      const onError = (cause: Error) =>
        resume(
          Effect.fail(new Mediagate.StartError({ message: `cannot listen: ${cause.message}`, retryable: false, cause }))
        )
      server.once("error", onError)
      server.listen({ port: options.port, ...(options.host === undefined ? {} : { host: options.host }) }, () => {
        server.off("error", onError)
        resume(Effect.succeed(server))
      })
    }),
    (server) => closeServer(server, options.shutdownGrace ?? "10 seconds")
  )

/**
 * The operator token (`MEDIAGATE_ADMIN_TOKEN`), when set: `/metrics` asks for it; with it, no first account is made.
 */
const adminToken = Effect.orElseSucceed(Config.option(Config.redacted("MEDIAGATE_ADMIN_TOKEN")), () => Option.none())

/** The listener of the metrics port (`MEDIAGATE_METRICS_PORT`): `/metrics`, and 404 for every other path. */
const metricsListener = (exporter: Metrics.Exporter, settings: Metrics.Settings) =>
  Effect.gen(function*() {
    const notFound = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      Envelope.errorResponse(404, "NOT_FOUND", `no route for ${request.method} ${request.url.split("?", 1)[0]}`))
    const app = Metrics.route(
      notFound,
      Metrics.respond(exporter, { open: settings.open, adminToken: yield* adminToken })
    )
    return yield* NodeHttpServer.makeHandler(AccessLog.middleware(app, { log: false, metrics: true }))
  })

/** The keys file of a first start (`internal/firstKeys.ts`): in `MEDIAGATE_DATA_DIR` (default `./data`). */
const firstKeysFile = Effect.map(
  Effect.orElseSucceed(Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data")), () => "./data"),
  (dataDir) => resolve(dataDir, FirstKeys.fileName)
)

/** Logs at `Info`, whatever the minimum level (the first start's line is how its keys are found). */
const logAlways = (message: string, annotations: Readonly<Record<string, string>>) =>
  Effect.logInfo(message).pipe(Effect.annotateLogs(annotations), Logger.withMinimumLogLevel(LogLevel.Info))

/**
 * Hands over the keys of a first start (`internal/firstKeys.ts`): in full on a terminal, else as hints with the
 * keys written to the keys file (mode 600).
 */
const announceBootstrapped = (created: Bootstrap.Bootstrapped) =>
  Effect.gen(function*() {
    const { format } = yield* Effect.orElseSucceed(Logging.config, () => ({ format: "text" as const }))
    const file = yield* firstKeysFile
    const announcement = FirstKeys.announce(created, { isTTY: process.stdout.isTTY === true, format, file })
    if (announcement._tag === "Banner") return yield* Console.log(announcement.text)
    if (announcement.writeFile) {
      const written = yield* Effect.try(() => {
        mkdirSync(dirname(file), { recursive: true })
        writeFileSync(file, FirstKeys.fileContent(created), { mode: 0o600 })
        chmodSync(file, 0o600)
      }).pipe(Effect.either)
      if (written._tag === "Left") {
        return yield* Effect.logError(
          `Mediagate created a first account (${created.account.id}) but could not write its keys to ${file}: ` +
            `${String(written.left.error)}; create a key for it with \`mediagate keys create ${created.account.id}\``
        )
      }
    }
    yield* logAlways(announcement.message, announcement.annotations)
  })

/** A warning while the keys file of a first start is still there (it holds two full keys). */
const warnIfFirstKeysLeft = Effect.flatMap(firstKeysFile, (file) =>
  existsSync(file)
    ? Effect.logWarning(`${file} still holds the first account's keys: delete it once they are kept elsewhere`)
    : Effect.void)

/**
 * Serves a stack: builds it (retrying while the database does not answer), bootstraps a first account unless an
 * admin token is set, then opens the port. Answers the server and the started service.
 *
 * @since 0.1.0
 * @category running
 */
export const serve = (
  stack: Layer.Layer<Mediagate.Mediagate, Mediagate.StartError>,
  options: ListenOptions & {
    readonly bootstrap?: boolean
    /** Runs once the stack is built and bootstrapped, before the port opens (the worker thread starts there). */
    readonly beforeListen?: Effect.Effect<void, Mediagate.StartError, Scope.Scope>
  }
): Effect.Effect<
  { readonly server: NodeServer; readonly service: Mediagate.Service },
  Mediagate.StartError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const starting = yield* Mediagate.start(stack)
    const service = yield* starting.ready
    yield* Effect.logInfo(`database: ${service.database}`)
    if (options.bootstrap !== false) {
      const created = yield* service.bootstrap().pipe(
        Effect.mapError((cause) =>
          new Mediagate.StartError({ message: `bootstrap failed: ${cause.message}`, retryable: false, cause })
        )
      )
      if (Option.isSome(created)) yield* announceBootstrapped(created.value)
      else yield* warnIfFirstKeysLeft
    }
    if (options.beforeListen !== undefined) yield* options.beforeListen
    const server = yield* listen(starting.listener, options)
    yield* Effect.logInfo(`Listening on ${urlOf(server)}`)
    const metrics = service.metrics
    if (metrics !== undefined && metrics.settings.port !== undefined) {
      const metricsServer = yield* listen(yield* metricsListener(metrics.exporter, metrics.settings), {
        host: options.host,
        port: metrics.settings.port
      })
      yield* Effect.logInfo(`Metrics on ${urlOf(metricsServer)}${Metrics.path}`)
    }
    return { server, service }
  })

/**
 * `MEDIAGATE_WORKER_THREAD`: `auto` (the default), or a boolean (`true`, `false`, `yes`, `no`, `on`, `off`, `1`, `0`).
 *
 * @since 0.1.0
 * @category config
 */
export const workerThreadSetting: Config.Config<"auto" | boolean> = Config.string("MEDIAGATE_WORKER_THREAD").pipe(
  Config.withDefault("auto"),
  Config.mapOrFail((text): Either.Either<"auto" | boolean, ConfigError.ConfigError> => {
    const value = text.trim().toLowerCase()
    if (value === "auto") return Either.right("auto" as const)
    if (["true", "yes", "on", "1"].includes(value)) return Either.right(true)
    if (["false", "no", "off", "0"].includes(value)) return Either.right(false)
    return Either.left(
      ConfigError.InvalidData(["MEDIAGATE_WORKER_THREAD"], `expected auto, true or false, got "${text}"`)
    )
  })
)

/**
 * Whether a server with workers runs them on a worker thread, given {@link workerThreadSetting} and the CPUs the
 * process may run on (`os.availableParallelism()`): `auto` does with two or more, where the second thread has a core
 * of its own (docs/operations.md "Two threads").
 *
 * @since 0.1.0
 * @category config
 */
export const runsOnTwoThreads = (setting: "auto" | boolean, cpus: number): boolean =>
  setting === "auto" ? cpus >= 2 : setting

/** A configuration the server cannot start with, named as {@link ConfigErrors.describe} does. */
const invalidConfiguration = (cause: ConfigError.ConfigError) =>
  new Mediagate.StartError({
    message: `invalid configuration: ${ConfigErrors.describe(cause)}`,
    retryable: false,
    cause
  })

/**
 * The server program: {@link serve} of `Mediagate.layerConfig` on {@link config}, until interrupted.
 *
 * @since 0.1.0
 * @category running
 */
export const program: Effect.Effect<never, Mediagate.StartError, never> = Effect.gen(function*() {
  const listenOptions = yield* Effect.mapError(
    config,
    invalidConfiguration
  )
  const serveOptions = { ...listenOptions, bootstrap: Option.isNone(yield* adminToken) }
  yield* Effect.mapError(
    IdleCollection.scoped,
    invalidConfiguration
  )
  if (!(runByRunMain && (yield* onTwoThreads))) {
    yield* serve(Mediagate.layerConfig, serveOptions)
    return yield* Effect.never
  }
  // the API here, the workers on a worker thread (internal/workerThread.ts), started once migrations have run;
  // without a file secret, both threads sign file URLs with one random secret of the process
  const secret = yield* Effect.orElseSucceed(Config.string("MEDIAGATE_FILE_SECRET"), () => "")
  const shared = secret.length > 0 ? {} : { MEDIAGATE_FILE_SECRET: randomBytes(32).toString("hex") }
  if (secret.length === 0) yield* Effect.logWarning(UrlSigner.noSecret)
  const bridge = WorkerThread.makeBridge()
  const role: ThreadRole.Role = { _tag: "Api", bridge }
  // the thread is ready before the port opens: every task accepted has its workers, every channel write reaches it
  let ended: Effect.Effect<never, Mediagate.StartError> = Effect.never
  const beforeListen = Effect.map(
    WorkerThread.spawn(bridge, { settings: shared }),
    (thread) => void (ended = thread)
  )
  yield* serve(
    Mediagate.layerConfig.pipe(
      Layer.provide(Layer.succeed(ThreadRole.ThreadRole, role)),
      Layer.provide(WorkerThread.withSettings(shared))
    ),
    { ...serveOptions, beforeListen }
  )
  return yield* ended
}).pipe(Effect.scoped)

/**
 * Whether the server runs its workers on a worker thread: {@link workerThreadSetting} with `MEDIAGATE_WORKERS` (default
 * true).
 */
const onTwoThreads = Effect.mapError(
  Config.all([Stack.settings, workerThreadSetting]),
  invalidConfiguration
).pipe(Effect.map(([stack, thread]) => stack.workers && runsOnTwoThreads(thread, availableParallelism())))

/**
 * Whether {@link runMain} runs the process: only then is the worker thread started, since it runs the process's main
 * script, where `runMain` runs the workers instead.
 */
let runByRunMain = false

/**
 * The server's settings: the environment, with the access log and the metrics on unless `MEDIAGATE_ACCESS_LOG=false`,
 * `MEDIAGATE_METRICS=false`.
 *
 * @since 0.1.0
 * @category config
 */
export const configProvider: ConfigProvider.ConfigProvider = ConfigProvider.fromEnv().pipe(
  ConfigProvider.orElse(() =>
    ConfigProvider.fromMap(new Map([["MEDIAGATE_ACCESS_LOG", "true"], ["MEDIAGATE_METRICS", "true"]]))
  )
)

/**
 * How the process reports a failure: an admin command's API error is already printed as `CODE: message`; a start
 * that cannot succeed logs its reason in one line; anything else is logged with its cause. An interruption
 * (SIGTERM, SIGINT) is a normal stop.
 */
const report = <E>(cause: Cause.Cause<E>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const failure = Option.getOrUndefined(Cause.failureOption(cause))
  if (Errors.isApiError(failure)) return Effect.void
  if (failure instanceof Mediagate.StartError || failure instanceof OptionalPackage.MissingPackage) {
    return Effect.logError(`Mediagate cannot start: ${failure.message}`)
  }
  if (ConfigError.isConfigError(failure)) {
    return Effect.logError(`invalid configuration: ${ConfigErrors.describe(failure)}`)
  }
  return Effect.logError("Mediagate failed", cause)
}

/**
 * The V8 flags {@link runMain} sets for the process, given its command line (`process.execArgv`); each unless the
 * command line sets it (either way). Neither can be given in `NODE_OPTIONS`, hence set here.
 *
 * - Allocation-site pretenuring off: with it on, V8 may decide during the first requests that objects of a hot
 *   allocation site live long and allocate them in the old generation from then on, and the process then spends
 *   2–4× more time in garbage collection for the rest of its life.
 * - `--heap-growing-percent=100`: after a mark-compact the old generation may grow to twice its live size before
 *   the next, rather than the ~1.1–1.4× V8 picks under a 256 MB limit. A request's or a step's objects that outlive a
 *   scavenge make the old generation grow under load; with the smaller factor the concurrent marking of mark-compacts
 *   was a tenth of the process's CPU. The cost is memory at the peak of a burst (docs/performance-notes.md, "The V8
 *   flags of the server").
 *
 * @since 0.1.0
 * @category utils
 */
export const v8Flags = (execArgv: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...(execArgv.some((arg) => /^--(no-)?allocation[-_]site[-_]pretenuring$/.test(arg))
    ? []
    : ["--no-allocation-site-pretenuring"]),
  ...(execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg)) ? [] : ["--heap-growing-percent=100"])
]

/**
 * Runs a program as the process's main: the process's V8 flags ({@link v8Flags}), settings from the environment
 * ({@link configProvider}), logs per `MEDIAGATE_LOG_FORMAT` (one logger, one line per event), the tracer off unless
 * a trace exporter is configured (`internal/tracing.ts`), a failure reported once (invalid log settings by the
 * default logger), exit code 1 on failure and 0 after SIGTERM/SIGINT. Colour (the CLI's help and errors, the
 * `pretty` logger) only where `internal/terminal.ts` allows it: `NO_COLOR`, `FORCE_COLOR`, a TTY.
 *
 * @since 0.1.0
 * @category running
 */
export const runMain = <A, E>(program: Effect.Effect<A, E>): void => {
  for (const flag of v8Flags(process.execArgv)) setFlagsFromString(flag)
  runByRunMain = true
  // in the server's worker thread, the process's main script runs the workers (internal/workerThread.ts)
  const run: Effect.Effect<unknown, unknown> = WorkerThread.isWorkerThread() ? WorkerThread.workerProgram : program
  NodeRuntime.runMain(
    Effect.flatMap(Effect.orElseSucceed(Terminal.config, () => Terminal.noEnvironment), (environment) => {
      const colour = {
        stdout: Terminal.colour(environment, process.stdout.isTTY === true),
        stderr: Terminal.colour(environment, process.stderr.isTTY === true)
      }
      return Effect.consoleWith((base) =>
        Effect.matchEffect(Logging.config, {
          onFailure: (error) => Effect.zipRight(report(Cause.fail(error)), Effect.fail(error)),
          onSuccess: (settings) =>
            Effect.provide(
              Effect.tapErrorCause(Tracing.apply(run), report),
              // a terminal gets each line at once (and the first start's banner in order with them)
              Logging.layer(
                { ...settings, colors: colour.stdout },
                process.stdout.isTTY === true ? undefined : Logging.stdoutLines
              )
            )
        }).pipe(Effect.withConsole(Terminal.plainConsole(base, colour)))
      )
    }).pipe(Effect.withConfigProvider(configProvider)),
    { disablePrettyLogger: true, disableErrorReporting: true }
  )
}

/**
 * Runs {@link program}: the production server (`npm start`, `examples/server`).
 *
 * @since 0.1.0
 * @category running
 */
export const main = (): void => runMain(program)
