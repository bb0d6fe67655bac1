/**
 * The whole Mediagate stack as one layer: database, engine (storage, task service, workers), vendors (planner,
 * upstreams, files, voices), accounts and billing, webhooks, and the HTTP layer on a Node server. Everything is
 * configured through Effect `Config` (decisions.md §10).
 *
 * @since 0.1.0
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { NodeContext, NodeHttpServer } from "@effect/platform-node"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Services } from "@mediagate/contract"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import * as TaskService from "@mediagate/engine/TaskService"
import type { TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Worker from "@mediagate/engine/Worker"
import { Health, Http, ServerConfig } from "@mediagate/server"
import * as Estimates from "@mediagate/vendors/Estimates"
import * as FileStore from "@mediagate/vendors/FileStore"
import { PriceBook } from "@mediagate/vendors/Prices"
import * as Relay from "@mediagate/vendors/Relay"
import * as Simulated from "@mediagate/vendors/Simulated"
import * as Upstreams from "@mediagate/vendors/Upstreams"
import * as VendorPlanner from "@mediagate/vendors/VendorPlanner"
import * as Voices from "@mediagate/vendors/Voices"
import * as SqlAccounts from "@mediagate/accounts/SqlAccounts"
import * as PaymentProvider from "@mediagate/billing/PaymentProvider"
import * as SqlBilling from "@mediagate/billing/SqlBilling"
import * as Dispatcher from "@mediagate/webhooks/Dispatcher"
import * as Outbound from "@mediagate/webhooks/Outbound"
import * as WebhookService from "@mediagate/webhooks/WebhookService"
import * as WebhookStore from "@mediagate/webhooks/WebhookStore"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { createServer } from "node:http"

/** The vendor side: planner, routed upstream (simulated; relay when configured), files and voices. */
export const Vendors = Layer.mergeAll(
  VendorPlanner.layerConfig,
  Upstreams.layerConfig,
  FileStore.layerFileService,
  FileStore.layerResultLinks,
  Voices.layerConfig
).pipe(
  Layer.provideMerge(
    Layer.unwrapEffect(Effect.map(
      Config.option(Config.string("MEDIAGATE_RELAY_URL")),
      (url) => Option.isSome(url) ? Relay.layerConfig : Layer.empty
    ))
  ),
  Layer.provideMerge(Simulated.layerConfig),
  Layer.provideMerge(Layer.mergeAll(FileStore.layerLocalConfig, FileStore.layerSignerConfig)),
  Layer.provideMerge(PriceBook.layerConfig),
  Layer.provideMerge(Estimates.layer),
  Layer.provide(NodeContext.layer)
)

/** The engine on the database: SQL task storage, the task service and (unless concurrency is 0) workers. */
export const Engine = Worker.layerConfig().pipe(
  Layer.provideMerge(TaskService.layer),
  Layer.provideMerge(SqlTaskStorage.layer())
)

/** `/readyz` is ready while the database answers. */
export const DatabaseReadiness = Layer.effect(
  Health.Readiness,
  Effect.map(SqlClient.SqlClient, (sql) => ({ check: Effect.asVoid(sql`SELECT 1`) }))
)

/** The HTTP server on `PORT` (default 3000). */
export const Server = Layer.unwrapEffect(Effect.map(
  Config.integer("PORT").pipe(Config.withDefault(3000)),
  (port) => NodeHttpServer.layer(createServer, { port })
))

/**
 * The whole stack on a SQL client, given the accounts-and-billing side (KeyService, AdminService, BillingService
 * and the engine's Billing port) and the webhooks side (WebhookService).
 */
export const make = <A1, E1, R1, E2, R2>(
  accounts: Layer.Layer<A1, E1, R1>,
  webhooks: Layer.Layer<Services.WebhookService, E2, R2 | TaskStorage>
) =>
  Http.layer.pipe(
    HttpServer.withLogAddress,
    Layer.provide(DatabaseReadiness),
    Layer.provide(ServerConfig.layerConfig),
    Layer.provide(webhooks),
    Layer.provideMerge(Engine),
    Layer.provideMerge(Vendors),
    Layer.provideMerge(accounts),
    Layer.provideMerge(Server)
  )

/** Accounts, keys and billing on the database (`MEDIAGATE_PAYMENT_PROVIDER`: `none`, the default, or `simulated`). */
export const Accounts = SqlAccounts.layer().pipe(
  Layer.provideMerge(SqlBilling.layer()),
  Layer.provide(Layer.unwrapEffect(Effect.map(
    Config.literal("none", "simulated")("MEDIAGATE_PAYMENT_PROVIDER").pipe(Config.withDefault("none" as const)),
    (provider) => provider === "simulated" ? PaymentProvider.layerSimulated : PaymentProvider.layerNone
  )))
)

/** Webhooks on the database: the service, and the dispatcher delivering the engine's terminal events. */
export const Webhooks = Layer.unwrapEffect(Effect.map(Dispatcher.config, (settings) =>
  Layer.mergeAll(
    WebhookService.layer({ allowPrivate: settings.allowPrivate, timeoutMs: settings.timeoutMs }).pipe(
      Layer.provide(Outbound.layerSender({ allowPrivate: settings.allowPrivate }))
    ),
    Dispatcher.layerConfig()
  ))).pipe(Layer.provideMerge(WebhookStore.layerSql()))

/** The whole stack on a SQL client. */
export const Live = make(Accounts, Webhooks)

/**
 * Every port the HTTP layer needs, without a server: for embedding Mediagate into another app with
 * `Http.makeHttpApp` or `Http.toWebHandler` (see `embedding/`). Needs a SQL client.
 */
export const Ports = Layer.mergeAll(ServerConfig.layerConfig, DatabaseReadiness).pipe(
  Layer.provideMerge(Webhooks),
  Layer.provideMerge(Engine),
  Layer.provideMerge(Vendors),
  Layer.provideMerge(Accounts)
)

/** What the stack needs from outside: the SQL client. */
export type Requirements = SqlClient.SqlClient
