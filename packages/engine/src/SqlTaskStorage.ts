/**
 * Task storage on SQL: SQLite and PostgreSQL (any `SqlClient` of those dialects), with the semantics of the memory
 * storage (`TaskStorage.makeMemory`) and the same conformance suite.
 *
 * - Tables (named with the store's prefix, default `mediagate_`; see {@link tables}): `<prefix>tasks` (every field
 *   of {@link TaskRecord}; times are epoch ms in BIGINT/INTEGER, money is integer micro-dollars, JSON fields are TEXT
 *   on both databases so they round-trip byte for byte), `<prefix>task_idempotency` and `<prefix>task_outbox`,
 *   created by {@link migrations} in their own migrations table ({@link migrationsTable}). Rows are decoded with
 *   Schema ({@link TaskRow}, {@link OutboxRow}): a corrupt row fails with a `PersistenceError` naming its table
 *   and column.
 * - Clock: by default "now" is the database clock, computed once per statement inside the statement (a `clock`
 *   CTE); with `time: "clock"` (tests, under `TestClock`) it is Effect's `Clock`, passed as a parameter instead.
 * - Claims: one `UPDATE ... WHERE id IN (SELECT ... ORDER BY next_run_at, id LIMIT n [FOR UPDATE SKIP LOCKED])
 *   RETURNING *`, served by a partial index on `next_run_at` over the active statuses.
 * - Terminal transitions (finish, cancel): the compare-and-set update, the refund through {@link Billing} and the
 *   outbox event in one transaction. Terminal transitions run in parallel: on PostgreSQL each outbox row records
 *   its inserting transaction (`txid`), and readers walk `(txid, seq)` only up to the oldest transaction running in
 *   this database that may write the outbox ({@link outboxHorizon}: those holding the shared outbox lock), so an
 *   entry that commits late can never fall behind a reader's cursor, and busy transactions that never write the
 *   outbox (accepts waiting on an account's balance row) never hold the readers back (no global lock on the hot
 *   path: the lock is shared, only its holders are listed).
 * - Idempotency: the shared window and rule of `IdempotencyWindow`, in `<prefix>task_idempotency`.
 * - List totals: exact, from `<prefix>task_counts` (per account: all tasks, per status, provider and model; kept by
 *   triggers on the tasks table, see {@link migrations}) for no filter or one of status, provider and model; by
 *   `COUNT(*)` of the matching rows for any other combination.
 * - Group commit: accepts without a charge or an idempotency key (one multi-row `INSERT`), charged accepts without
 *   an idempotency key (one transaction, a savepoint each, accounts taken in account order; on PostgreSQL up to
 *   {@link chargedBatchers} such batches at once, an account's accepts always in the same one), steps without extra
 *   charges (one `UPDATE ... FROM (VALUES ...)`) and finishes (one transaction: the batch's update, refunds and
 *   events; finishes that may owe a refund join only with unmetered billing; on PostgreSQL up to {@link finishBatchers}
 *   batches at once, a worker's succeeded finishes one statement with their events) made while a write of their kind
 *   is under way are written together by one fiber of the storage's scope; each call is answered on its own, and a
 *   failed batch is written again call by call. Never call `step` or `finish` inside a transaction of your own.
 * - Wakeups: an in-process PubSub (published after commits), merged on PostgreSQL with `LISTEN <prefix>tasks`
 *   ({@link wakeupChannel}); `accept`, `markDue` and `releaseAll` send `pg_notify` inside their write. The
 *   listening client is the `SqlClient` itself when it can LISTEN (the PostgreSQL driver's client is one object
 *   under both tags, `SqlClient` and `PgClient`), so the driver package stays optional for SQLite-only hosts. A
 *   probe every 2 s finds a lost LISTEN connection (restart, killed backend) and listens again
 *   (`@mediagate/persistence/Listen`).
 *
 * Every storage failure (`SqlError`, an undecodable row) surfaces as {@link PersistenceError}; so does an invalid
 * `prefix` (see `SqlStore`), when the storage is built.
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Billing } from "./Billing.js"
import * as Context from "./internal/sql/context.js"
import * as Lifecycle from "./internal/sql/lifecycle.js"
import * as Outbox from "./internal/sql/outbox.js"
import * as Reads from "./internal/sql/reads.js"
import * as Registry from "./internal/sql/registry.js"
import * as Retention from "./internal/sql/retention.js"
import { persistence, type SqlOptions } from "./internal/sql/rows.js"
import * as Slots from "./internal/sql/slots.js"
import { layerPorts, type Ports, type Service, TaskStorage } from "./TaskStorage.js"

export {
  /**
   * A row of `<prefix>nodes`: a registered node.
   *
   * @since 0.1.0
   * @category schemas
   */
  NodeRow,
  /**
   * The shared advisory lock every transaction writing the outbox takes on PostgreSQL as its first statement, before it
   * has a transaction id (`pg_advisory_xact_lock_shared(key1, key2)`, listed in `pg_locks` with `classid` key1, `objid`
   * key2, `objsubid` 2; released at commit, after the commit is visible). Shared: writers never wait for each other;
   * nobody takes it exclusively. Per table prefix, so that storages sharing a database do not hold each other back.
   *
   * @since 0.1.0
   * @category utils
   */
  outboxLockKeys,
  /**
   * A row of `<prefix>task_outbox`: an outbox entry (on PostgreSQL with its `txid`).
   *
   * @since 0.1.0
   * @category schemas
   */
  OutboxRow,
  /**
   * Options of the SQL storage: the table prefix and where "now" comes from (default: the database clock).
   *
   * @since 0.1.0
   * @category models
   */
  type SqlOptions,
  /**
   * The columns of a task's row, in the order {@link taskRowOf} writes them.
   *
   * @since 0.1.0
   * @category constants
   */
  taskColumns,
  /**
   * A row of `<prefix>tasks`: a {@link TaskRecord}; enum columns follow the contract's lists.
   *
   * @since 0.1.0
   * @category schemas
   */
  TaskRow,
  /**
   * A record as the row {@link TaskRow} encodes it, written out: a task's insert is on the path of every generation
   * request, where the Schema's encoder made a fifth of a request's allocations. The columns of the record's type are
   * copied, `input` and `metadata` (plain JSON values by their types) stringified, the result and the error encoded by
   * their Schemas; a record without a trace context or channel writes null, as those columns' default. The engine's
   * tests hold it equal to the Schema's encoding.
   *
   * @since 0.1.0
   * @category encoding
   */
  taskRowOf
} from "./internal/sql/rows.js"
export {
  /**
   * Runs the engine's migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
   * `PersistenceError`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrate,
  /**
   * The engine's migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails the
   * loader with a `MigrationError`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrations,
  /**
   * The table the engine's migrations are recorded in: `<prefix>engine_migrations`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrationsTable,
  /**
   * The PostgreSQL `NOTIFY` channel of outbox writes (terminal transitions, for the webhook dispatcher):
   * `<prefix>outbox`.
   *
   * @since 0.1.0
   * @category utils
   */
  outboxChannel,
  /**
   * The tables of the storage under `prefix` that only PostgreSQL has (the counts of the prompts' words).
   *
   * @since 0.1.0
   * @category migrations
   */
  pgTables,
  /**
   * The tables of the storage under `prefix`.
   *
   * @since 0.1.0
   * @category migrations
   */
  tables,
  /**
   * The PostgreSQL `NOTIFY` channel of wakeups: `<prefix>tasks`.
   *
   * @since 0.1.0
   * @category utils
   */
  wakeupChannel
} from "./internal/sql/schema.js"

/**
 * Builds the SQL task storage on the `SqlClient` in context (SQLite or PostgreSQL), after running the engine's
 * migrations, with its tables under `options.prefix` (default `mediagate_`; an invalid prefix fails with a
 * {@link PersistenceError}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  Service,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | Billing | Scope.Scope
> =>
  Effect.gen(function*() {
    const context = yield* Context.make(options)
    const ports = yield* Effect.all([
      Lifecycle.make(context),
      Reads.make(context),
      Outbox.make(context),
      Registry.make(context),
      Slots.make(context),
      Retention.make(context)
    ])
    return Object.assign({ now: persistence("now")(context.currentTime) }, ...ports) as Service
  })

/**
 * The SQL storage as a layer (runs the migrations): the storage, and each of its ports.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: SqlOptions = {}
): Layer.Layer<
  TaskStorage | Ports,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | Billing
> => Layer.provideMerge(layerPorts, Layer.scoped(TaskStorage, make(options)))
