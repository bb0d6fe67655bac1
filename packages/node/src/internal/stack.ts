/**
 * The composition of every Mediagate package on one SQL client: engine (storage, task service, workers), vendors
 * (planner, upstreams, files, voices), accounts and billing, webhooks (service and dispatcher) and the settings of
 * the HTTP layer. Every setting comes from Effect `Config` (decisions.md §10); `Mediagate.layer(options)` turns
 * its options into such a `Config` source.
 */
import { NodeContext } from "@effect/platform-node"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlAccounts from "@mediagate/accounts/SqlAccounts"
import * as PaymentProvider from "@mediagate/billing/PaymentProvider"
import * as SqlBilling from "@mediagate/billing/SqlBilling"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as TaskService from "@mediagate/engine/TaskService"
import * as Worker from "@mediagate/engine/Worker"
import { Health, ServerConfig } from "@mediagate/server"
import * as Durations from "@mediagate/vendors/Durations"
import * as Estimates from "@mediagate/vendors/Estimates"
import * as FileService from "@mediagate/vendors/FileService"
import * as FileStore from "@mediagate/vendors/FileStore"
import { PriceBook } from "@mediagate/vendors/Prices"
import * as ResultLinks from "@mediagate/vendors/ResultLinks"
import * as Simulated from "@mediagate/vendors/Simulated"
import * as Upstreams from "@mediagate/vendors/Upstreams"
import * as UrlSigner from "@mediagate/vendors/UrlSigner"
import * as VendorPlanner from "@mediagate/vendors/VendorPlanner"
import * as Voices from "@mediagate/vendors/Voices"
import * as Dispatcher from "@mediagate/webhooks/Dispatcher"
import * as Outbound from "@mediagate/webhooks/Outbound"
import * as WebhookService from "@mediagate/webhooks/WebhookService"
import * as SqlWebhookStore from "@mediagate/webhooks/SqlWebhookStore"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"

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
  keyCacheTtl
})

/** The vendor side: planner, routed upstream (simulated; relay when configured), files and voices. */
export const Vendors = Layer.mergeAll(
  VendorPlanner.layerConfig,
  Upstreams.layerConfig,
  FileService.layer,
  ResultLinks.layer,
  Voices.layerConfig
).pipe(
  Layer.provideMerge(Simulated.layerConfig),
  Layer.provideMerge(Layer.mergeAll(FileStore.layerLocalConfig, UrlSigner.layerConfig)),
  Layer.provideMerge(PriceBook.layerConfig),
  Layer.provideMerge(Estimates.layer),
  Layer.provide(NodeContext.layer)
)

/** The engine: SQL task storage, the task service and (when this process runs them) workers. */
export const Engine = (stack: StackSettings) =>
  (stack.workers ? Worker.layerConfig() : Layer.empty).pipe(
    Layer.provideMerge(TaskService.layer),
    Layer.provideMerge(SqlTaskStorage.layer({ prefix: stack.tablePrefix }))
  )

/**
 * Accounts, keys (authentication reusing key rows for `MEDIAGATE_KEY_CACHE_TTL`) and billing
 * (`MEDIAGATE_PAYMENT_PROVIDER`: `none`, the default, or `simulated`).
 */
export const Accounts = (stack: StackSettings) =>
  SqlAccounts.layer({ cacheTtl: stack.keyCacheTtl }, { prefix: stack.tablePrefix }).pipe(
    Layer.provideMerge(SqlBilling.layer({ prefix: stack.tablePrefix })),
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

/** `/readyz` is ready while the database answers. */
export const DatabaseReadiness = Layer.effect(
  Health.Readiness,
  Effect.map(SqlClient.SqlClient, (sql) => ({ check: Effect.asVoid(sql`SELECT 1`) }))
)

/** Every port the HTTP layer needs and the background processes, on the `SqlClient` in context. */
export const Ports = Layer.unwrapEffect(Effect.map(settings, (stack) =>
  Layer.mergeAll(ServerConfig.layerConfig, DatabaseReadiness).pipe(
    Layer.provideMerge(Webhooks(stack)),
    Layer.provideMerge(Engine(stack)),
    Layer.provideMerge(Vendors),
    Layer.provideMerge(Accounts(stack))
  )))

/** Only accounts and billing (the admin command line), on the `SqlClient` in context. */
export const AdminPorts = Layer.unwrapEffect(Effect.map(settings, Accounts))
