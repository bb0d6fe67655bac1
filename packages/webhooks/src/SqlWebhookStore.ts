/**
 * Webhook storage on SQL: SQLite and PostgreSQL on the `SqlClient` in context, with the semantics of the memory
 * storage (`WebhookStore.makeMemory`) and the same conformance suite.
 *
 * Tables, created by {@link migrations} in {@link migrationsTable}, every name under the store's prefix
 * (`options.prefix`, default `mediagate_`, see {@link tables}): registrations, their idempotency keys, deliveries,
 * the attempt log and the dispatcher's cursor. Rows are decoded with Schema: a corrupt row fails with a
 * `PersistenceError` naming its table and column. "now" is the database clock, or Effect's `Clock` with
 * `time: "clock"` (tests, under `TestClock`).
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Context from "./internal/sql/context.js"
import * as Deliveries from "./internal/sql/deliveries.js"
import * as FanOut from "./internal/sql/fanOut.js"
import * as Retention from "./internal/sql/retention.js"
import type { SqlOptions } from "./internal/sql/rows.js"
import * as Settle from "./internal/sql/settle.js"
import * as Webhooks from "./internal/sql/webhooks.js"
import { WebhookStore } from "./WebhookStore.js"

export type {
  /**
   * Options of the SQL storage: the table prefix and where "now" comes from (default: the database clock).
   *
   * @since 0.1.0
   * @category models
   */
  SqlOptions
} from "./internal/sql/rows.js"
export {
  /**
   * Runs the webhook migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
   * `PersistenceError`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrate,
  /**
   * The webhook migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails the
   * loader with a `MigrationError`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrations,
  /**
   * The table the webhook migrations are recorded in: `<prefix>webhooks_migrations`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrationsTable,
  /**
   * The tables of the webhook storage under `prefix`.
   *
   * @since 0.1.0
   * @category migrations
   */
  tables
} from "./internal/sql/schema.js"

/**
 * Builds the SQL storage on the `SqlClient` in context, after running the migrations, with its tables under
 * `options.prefix` (default `mediagate_`; an invalid prefix fails with a `PersistenceError`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  WebhookStore["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const context = yield* Context.make(options)
    const [webhooks, deliveries, fanOut, settle, retention] = yield* Effect.all([
      Webhooks.make(context),
      Deliveries.make(context),
      FanOut.make(context),
      Settle.make(context),
      Retention.make(context)
    ])
    const service: WebhookStore["Type"] = {
      now: context.now,
      ...webhooks,
      ...deliveries,
      ...fanOut,
      ...settle,
      ...retention
    }
    return service
  })

/**
 * The SQL storage as a layer (runs the migrations).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: SqlOptions = {}
): Layer.Layer<WebhookStore, SqlError | Migrator.MigrationError | PersistenceError, SqlClient.SqlClient> =>
  Layer.effect(WebhookStore, make(options))
