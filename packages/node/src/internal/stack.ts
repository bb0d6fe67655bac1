/**
 * The composition of every Mediagate package on one SQL client: engine (storage, task service, workers), vendors
 * (planner, upstreams, files, voices), accounts and billing, webhooks (service and dispatcher) and the settings of
 * the HTTP layer. Every setting comes from Effect `Config` (decisions.md §10); `Mediagate.layer(options)` turns
 * its options into such a `Config` source.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import * as AdminService from "@mediagate/accounts/AdminService"
import * as SqlAccounts from "@mediagate/accounts/SqlAccounts"
import * as SqlRateWindows from "@mediagate/accounts/SqlRateWindows"
import * as PaymentProvider from "@mediagate/billing/PaymentProvider"
import * as SqlBilling from "@mediagate/billing/SqlBilling"
import { RateLimit } from "@mediagate/contract"
import * as Admission from "@mediagate/engine/Admission"
import * as EngineResultLinks from "@mediagate/engine/ResultLinks"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import * as TaskAdmin from "@mediagate/engine/TaskAdmin"
import type { TaskReads } from "@mediagate/engine/TaskReads"
import * as TaskService from "@mediagate/engine/TaskService"
import * as Worker from "@mediagate/engine/Worker"
import * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as WriteConnection from "@mediagate/persistence/WriteConnection"
import { Health, ServerConfig } from "@mediagate/server"
import * as ChannelAdmin from "@mediagate/vendors/ChannelAdmin"
import * as Channels from "@mediagate/vendors/Channels"
import * as ChannelSecrets from "@mediagate/vendors/ChannelSecrets"
import { ChannelRuntime } from "@mediagate/vendors/ChannelStore"
import * as Durations from "@mediagate/vendors/Durations"
import * as Estimates from "@mediagate/vendors/Estimates"
import * as FileService from "@mediagate/vendors/FileService"
import * as FileStore from "@mediagate/vendors/FileStore"
import { PriceBook } from "@mediagate/vendors/Prices"
import * as ResultCopy from "@mediagate/vendors/ResultCopy"
import * as ResultLinks from "@mediagate/vendors/ResultLinks"
import * as S3FileStore from "@mediagate/vendors/S3FileStore"
import * as Simulated from "@mediagate/vendors/Simulated"
import * as SqlChannels from "@mediagate/vendors/SqlChannels"
import * as UrlSigner from "@mediagate/vendors/UrlSigner"
import * as VendorPlanner from "@mediagate/vendors/VendorPlanner"
import * as Voices from "@mediagate/vendors/Voices"
import * as Dispatcher from "@mediagate/webhooks/Dispatcher"
import * as Outbound from "@mediagate/webhooks/Outbound"
import * as SqlWebhookStore from "@mediagate/webhooks/SqlWebhookStore"
import * as WebhookAdmin from "@mediagate/webhooks/WebhookAdmin"
import * as WebhookService from "@mediagate/webhooks/WebhookService"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Retention from "../Retention.js"
import * as FilePlacement from "./filePlacement.js"
import * as ThreadRole from "./threadRole.js"

/** Settings of the composition itself (the packages read their own). */
export interface StackSettings {
  /** Prefix of every table Mediagate creates (`MEDIAGATE_TABLE_PREFIX`, default `mediagate_`). */
  readonly tablePrefix: string
  /** Whether this process runs the task workers and the webhook dispatcher (`MEDIAGATE_WORKERS`, default true). */
  readonly workers: boolean
  /**
   * How long authentication reuses a key's row, in ms (`MEDIAGATE_KEY_CACHE_TTL`: a duration such as `5s`, or `0`
   * for none; default 5 s): the longest another process may take to see a revocation (docs/security.md).
   */
  readonly keyCacheTtl: number
  /**
   * The part of a server on two threads this stack is (`internal/threadRole.ts`): the API thread runs no workers,
   * and its admission gate follows the worker thread's claims; default the whole server.
   */
  readonly role: ThreadRole.Role
}

const keyCacheTtl: Config.Config<number> = Config.string("MEDIAGATE_KEY_CACHE_TTL").pipe(
  Config.withDefault("5s"),
  Config.mapOrFail((text) =>
    text.trim() === "0"
      ? Either.right(0)
      : Either.mapLeft(Durations.parseDuration(text), (message) =>
        ConfigError.InvalidData(["MEDIAGATE_KEY_CACHE_TTL"], `${message}, or 0 for no cache`))
  )
)

/** {@link StackSettings} from Effect `Config`. */
export const settings: Config.Config<StackSettings> = Config.all({
  tablePrefix: Config.string("MEDIAGATE_TABLE_PREFIX").pipe(
    Config.validate({
      message: `must be empty or match ${SqlStore.prefixPattern} (lowercase letters, digits and _, at most 30)`,
      validation: SqlStore.isValidPrefix
    }),
    Config.withDefault(SqlStore.defaultPrefix)
  ),
  workers: Config.boolean("MEDIAGATE_WORKERS").pipe(Config.withDefault(true)),
  keyCacheTtl,
  role: Config.succeed(ThreadRole.whole)
})

/** The settings of a stack with `role`: the API thread of a server on two threads runs no workers. */
export const withRole = (stack: StackSettings, role: ThreadRole.Role): StackSettings => ({
  ...stack,
  role,
  workers: role._tag === "Api" ? false : stack.workers
})

/**
 * Where result files live (`MEDIAGATE_FILE_STORE`): `local`, the default, under `<MEDIAGATE_DATA_DIR>/files`, or
 * `s3`, an S3-compatible bucket (`MEDIAGATE_S3_*`) that every node shares. A node without workers on the local store
 * serves only the files that reach its own directory: it logs a warning at start (docs/operations.md).
 */
export const Files = (stack: StackSettings) =>
  Layer.unwrapEffect(Effect.map(
    Config.all({
      store: Config.literal("local", "s3")("MEDIAGATE_FILE_STORE").pipe(Config.withDefault("local" as const)),
      dataDir: Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data"))
    }),
    ({ dataDir, store }) =>
      store === "s3"
        ? S3FileStore.layerConfig
        : stack.workers || stack.role._tag === "Api"
        ? FileStore.layerLocalConfig
        : Layer.merge(
          FileStore.layerLocalConfig,
          Layer.effectDiscard(Effect.logWarning(splitWarning(dataDir)))
        )
  ))

/** The start warning of a node that serves files but writes none (see {@link Files}). */
export const splitWarning = (dataDir: string) =>
  `MEDIAGATE_WORKERS=false with the local file store: this node serves result files from ${dataDir}/files but ` +
  `runs no workers, so the files are written by other processes; their result URLs answer 404 here unless ` +
  `${dataDir}/files is the same directory for every node (one data directory, or a shared mount). ` +
  `Set MEDIAGATE_FILE_STORE=s3 to share files between nodes (docs/operations.md)`

/**
 * The stored upstream channels (`<prefix>channels`, docs/channels.md) and the keys of their credentials
 * (`MEDIAGATE_CHANNEL_KEY`, `MEDIAGATE_CHANNEL_KEY_PREVIOUS`).
 */
export const ChannelStorage = (stack: StackSettings) =>
  SqlChannels.layer({ prefix: stack.tablePrefix }).pipe(Layer.provideMerge(ChannelSecrets.layerConfig))

/**
 * A `ChannelRuntime` without a router (the command line routes no task): the environment's default channels as
 * the server builds them, every breaker closed, nothing to reload. Settings the server would refuse leave the
 * defaults out (with a warning) rather than failing the admin commands that do not read them.
 */
export const StaticChannelRuntime: Layer.Layer<ChannelRuntime> = Layer.effect(
  ChannelRuntime,
  Channels.config.pipe(
    Effect.flatMap((options) =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) => Channels.defaultChannels(options.transports ?? {}, options.relay, now)
      )
    ),
    Effect.catchAll((error) =>
      Effect.as(Effect.logWarning(`channels: the environment's default channels are left out: ${error}`), [])
    ),
    Effect.map((defaults) =>
      ChannelRuntime.of({
        defaults,
        health: () => Effect.succeed({ breaker: "closed", consecutiveFailures: 0, openedAt: null, lastError: null }),
        refresh: Effect.void
      })
    )
  )
)

/**
 * The vendor side: planner, the simulated upstream, the channel store, files and voices (the routed upstream is
 * built with the engine: it reserves channel slots in the task storage).
 */
export const Vendors = (stack: StackSettings) =>
  Layer.mergeAll(
    VendorPlanner.layerConfig,
    FileService.layer,
    ResultLinks.layer,
    ResultCopy.layerConfig,
    Voices.layerConfig
  ).pipe(
    Layer.provideMerge(ChannelStorage(stack)),
    Layer.provideMerge(Simulated.layerConfig),
    Layer.provideMerge(Layer.mergeAll(Files(stack), UrlSigner.layerConfig)),
    Layer.provideMerge(PriceBook.layerConfig),
    Layer.provideMerge(Estimates.layer),
    Layer.provide(NodeContext.layer)
  )

/**
 * The admission gate of a stack: with its workers, `MEDIAGATE_ADMISSION_*`; on the API thread of a server on two
 * threads the same gate, measuring the worker thread's event loop and registered with the bridge for the worker
 * thread's claim reports; on the worker thread a gate that only passes its claims' reports on.
 */
const admission = (
  stack: StackSettings
): Layer.Layer<Admission.Admission, ConfigError.ConfigError, TaskReads> | Layer.Layer<never> => {
  const role = stack.role
  if (role._tag === "Workers") return Layer.succeed(Admission.Admission, Admission.reporting(role.report))
  if (role._tag === "Whole") return stack.workers ? Admission.layerConfig : Layer.empty
  return Layer.unwrapEffect(Effect.map(Admission.config, (options) =>
    Layer.tap(
      Admission.layerCounted({ ...options, utilization: role.bridge.utilization }),
      (context) => Effect.sync(() => (role.bridge.gate = Context.get(context, Admission.Admission)))
    )))
}

/**
 * The upstream routed over channels (docs/channels.md) with its runtime for the admin views. On a server on two
 * threads the worker thread's routes the tasks: it hands its runtime to the thread's link, and the API thread's
 * runtime shows that thread's breakers and makes it read the channels again after a write.
 */
const channels = (stack: StackSettings) => {
  const role = stack.role
  if (role._tag === "Whole") return Channels.layerConfig
  if (role._tag === "Workers") {
    return Layer.tap(
      Channels.layerConfig,
      (context) => Effect.sync(() => role.channels(Context.get(context, ChannelRuntime)))
    )
  }
  const bridged = Layer.effect(
    ChannelRuntime,
    Effect.map(ChannelRuntime, (local) =>
      ChannelRuntime.of({
        defaults: local.defaults,
        health: (id) =>
          Effect.flatMap(role.bridge.channelHealth(id), (remote) =>
            remote === undefined ? local.health(id) : Effect.succeed(remote)),
        // read when called: the thread is started after this layer is built
        refresh: Effect.zipRight(
          local.refresh,
          Effect.suspend(() =>
            role.bridge.refreshChannels
          )
        )
      }))
  )
  return Layer.provideMerge(bridged, Channels.layerConfig)
}

/**
 * The engine: SQL task storage, the upstream routed over channels, the task service and (when this process runs them)
 * workers, placed by the markers of the local file store (`FilePlacement`: nodes apart claim no task of each other).
 */
export const Engine = (stack: StackSettings) =>
  // without workers, the upstream callbacks this node hears are written as due tasks for the workers elsewhere
  (stack.workers ? Worker.layerConfig() : Worker.layerForwardChanges()).pipe(
    Layer.provideMerge(TaskService.layer),
    // with workers here, new tasks wait while they are behind (MEDIAGATE_ADMISSION_*); on a server on two threads
    // the API thread's gate follows the worker thread's claims and event loop
    Layer.provideMerge(admission(stack)),
    // the upstream routed over channels (docs/channels.md), with its runtime for the admin views
    Layer.provideMerge(channels(stack)),
    Layer.provideMerge(FilePlacement.layerConfig(stack.workers)),
    // a task read by id goes through the database's read connection when it has one, a batch of charged accepts
    // through its write connection (SQLite files)
    Layer.provideMerge(Layer.unwrapEffect(Effect.map(
      Effect.all([ReadConnection.ReadConnection, WriteConnection.WriteConnection]),
      ([reader, writer]) =>
        SqlTaskStorage.layer({ prefix: stack.tablePrefix, reader, writer, threads: stack.role._tag !== "Whole" })
    )))
  )

/**
 * Accounts, keys (authentication reusing key rows for `MEDIAGATE_KEY_CACHE_TTL`) and billing
 * (`MEDIAGATE_PAYMENT_PROVIDER`: `none`, the default, or `simulated`).
 */
export const Accounts = (stack: StackSettings) =>
  Layer.unwrapEffect(Effect.map(ServerConfig.rateLimitsConfig, (limits) =>
    SqlAccounts.layer({
      cacheTtl: stack.keyCacheTtl,
      // a derived key's limits lie within the defaults its parent has (0: unlimited)
      rateLimitDefaults: {
        requestsPerMinute: limits.keyRequestsPerMinute > 0 ? limits.keyRequestsPerMinute : null,
        maxInFlightTasks: limits.keyMaxInFlightTasks > 0 ? limits.keyMaxInFlightTasks : null
      }
    }, { prefix: stack.tablePrefix }))).pipe(
      Layer.provideMerge(SqlBilling.layerConfig({ prefix: stack.tablePrefix })),
      Layer.provide(Layer.unwrapEffect(Effect.map(
        Config.literal("none", "simulated")("MEDIAGATE_PAYMENT_PROVIDER").pipe(Config.withDefault("none" as const)),
        (provider) => provider === "simulated" ? PaymentProvider.layerSimulated : PaymentProvider.layerNone
      )))
    )

/** Webhooks: the service, and (when this process runs them) the dispatcher delivering the engine's events. */
export const Webhooks = (stack: StackSettings) =>
  Layer.unwrapEffect(Effect.map(Dispatcher.config, (webhooks) =>
    Layer.mergeAll(
      WebhookService.layer({ allowPrivate: webhooks.allowPrivate, timeout: webhooks.timeout }).pipe(
        Layer.provide(Outbound.layerSender({ allowPrivate: webhooks.allowPrivate }))
      ),
      stack.workers ? Dispatcher.layerConfig() : Layer.empty
    ))).pipe(Layer.provideMerge(SqlWebhookStore.layer({ prefix: stack.tablePrefix })))

/**
 * The request counters of the rate limits: on PostgreSQL `<prefix>rate_windows`, shared by every node; on SQLite
 * (one node) this process's memory (security.md "Rate limits").
 */
export const RateWindows = (stack: StackSettings) =>
  Layer.unwrapEffect(Effect.map(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () => SqlRateWindows.layer({ prefix: stack.tablePrefix }),
      orElse: () => RateLimit.layerMemory
    })))

/** `/readyz` is ready while the database answers. */
export const DatabaseReadiness = Layer.effect(
  Health.Readiness,
  Effect.map(SqlClient.SqlClient, (sql) => ({ check: Effect.asVoid(sql`SELECT 1`) }))
)

/**
 * Retention (`MEDIAGATE_RETENTION_*`, `MEDIAGATE_TEST_STORAGE_QUOTA`): the test storage quota in front of the task
 * service, and (when this process runs workers) the pruner.
 */
export const Retain = (stack: StackSettings, retention: Retention.Settings) =>
  Layer.merge(
    Retention.layerQuota(retention),
    stack.workers
      ? Retention.layerPruner(retention).pipe(Layer.provide(Retention.layerCursorsSql({ prefix: stack.tablePrefix })))
      : Layer.empty
  )

/**
 * The operator API (`AdminService`): accounts and billing, with the engine's and the webhooks' operator views on
 * their stores (task storage, result links, webhook store in context).
 */
export const Admin = AdminService.layer.pipe(Layer.provide(Layer.merge(TaskAdmin.layer, WebhookAdmin.layer)))

/**
 * The operator's channels (`AdminChannels`), on the channel store, the router's runtime and the task storage in
 * context.
 */
export const ChannelsAdmin = ChannelAdmin.layer

/** Every port the HTTP layer needs and the background processes, on the `SqlClient` in context. */
export const Ports = Layer.unwrapEffect(
  Effect.map(Effect.all([settings, Retention.config, ThreadRole.ThreadRole]), ([config, retention, role]) => {
    const stack = withRole(config, role)
    return Layer.mergeAll(
      ServerConfig.layerConfig,
      DatabaseReadiness,
      Retain(stack, retention),
      RateWindows(stack),
      Admin,
      ChannelsAdmin
    ).pipe(
      Layer.provideMerge(Webhooks(stack)),
      Layer.provideMerge(Engine(stack)),
      Layer.provideMerge(Vendors(stack)),
      Layer.provideMerge(Accounts(stack))
    )
  })
)

/**
 * The admin command line, on the `SqlClient` in context: accounts and billing, the task storage (no workers) and
 * the webhook store, for the `AdminService`; the channel store and the environment's default channels, for the
 * `AdminChannels`.
 */
export const AdminPorts = Layer.unwrapEffect(Effect.map(settings, (stack) =>
  Layer.merge(Admin, ChannelsAdmin).pipe(
    Layer.provide(Layer.mergeAll(
      SqlTaskStorage.layer({ prefix: stack.tablePrefix }),
      SqlWebhookStore.layer({ prefix: stack.tablePrefix }),
      // result links as stored when the task finished (the command line signs no file URLs)
      EngineResultLinks.layerAsStored,
      ChannelStorage(stack),
      StaticChannelRuntime
    )),
    Layer.provideMerge(Accounts(stack))
  )))
