/**
 * `@mediagate/persistence`: the persistence kernel the SQL stores of Mediagate build on (tasks, billing, accounts,
 * webhooks) — the SQL client and its dialect, the table prefix, the migrations runner, the storage clock, rows
 * decoded with Schema, storage failures as `PersistenceError`, ULID ids and the idempotency window.
 *
 * @since 0.1.0
 */

/** Background loops that back off while storage fails and never end on a failure. */
export * as Backoff from "./Backoff.js"
/**
 * Group commit: calls made while a write is under way queue up, and one fiber runs them together (up to `max` at a
 * time), so that a burst of writes costs one transaction instead of one each.
 *
 * @since 0.1.0
 */
export * as GroupCommit from "./GroupCommit.js"
/**
 * The `Idempotency-Key` window and its rule, shared by every store that remembers keys.
 *
 * @since 0.1.0
 */
export * as IdempotencyWindow from "./IdempotencyWindow.js"
/**
 * PostgreSQL `LISTEN` streams that survive a lost connection.
 *
 * @since 0.1.0
 */
export * as Listen from "./Listen.js"
/**
 * Named prepared statements on PostgreSQL, for the statements a connection runs again and again.
 *
 * @since 0.1.0
 */
export * as PreparedStatements from "./PreparedStatements.js"
/**
 * ULID identifiers.
 *
 * @since 0.1.0
 */
export * as Ids from "./Ids.js"
/**
 * Bulk updates and deletes of the memory stores.
 *
 * @since 0.1.0
 */
export * as MemoryStore from "./MemoryStore.js"
/**
 * Storage failures.
 *
 * @since 0.1.0
 */
export * as PersistenceError from "./PersistenceError.js"
/**
 * A read-only second connection to a SQLite file, for hot single-row reads.
 *
 * @since 0.1.0
 */
export * as ReadConnection from "./ReadConnection.js"
/**
 * A transaction's statements written once, run through the `SqlClient` or synchronously on a write connection.
 *
 * @since 0.1.0
 */
export * as SqlProgram from "./SqlProgram.js"
/**
 * Rows decoded with Schema; a row that does not decode is a `RowError` naming its table and column.
 *
 * @since 0.1.0
 */
export * as SqlRows from "./SqlRows.js"
/**
 * The client and dialect, table prefix, column types, migrations, storage clock and failure mapping.
 *
 * @since 0.1.0
 */
export * as SqlStore from "./SqlStore.js"
/**
 * A second read-write connection to a SQLite file, for hot write transactions run as one synchronous block.
 *
 * @since 0.1.0
 */
export * as WriteConnection from "./WriteConnection.js"
