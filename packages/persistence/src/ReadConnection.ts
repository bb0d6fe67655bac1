/**
 * A reader for the hot single-row reads (a task by id, read on every `GET /api/v1/tasks/{id}`), beside the
 * `SqlClient`: a statement through `@effect/sql` costs the process ≈ 60–100 µs under load (its span, scope,
 * connection semaphore or pool checkout, prepared-statement cache) against ≈ 8 µs for a SQLite prepared statement.
 *
 * - SQLite file ({@link make}, {@link layer}): a second, read-only connection running cached prepared statements
 *   in `Effect.sync`. Reads see what is committed (WAL mode: the reader never waits for the writer and never sees
 *   its open transaction): a read issued after a write's commit sees it. An in-memory database has no second
 *   connection ({@link layerNone}: stores read through the `SqlClient`).
 * - PostgreSQL ({@link fromPool}): one `pool.query` on the client's own `pg` pool.
 *
 * The driver is `better-sqlite3`, loaded from where `@effect/sql-sqlite-node` (the main connection's driver) finds
 * it, so that no other copy is needed; it is opened on the first read and closed with the layer's scope.
 *
 * @since 0.1.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as SqliteDriver from "./internal/sqliteDriver.js"

/**
 * Runs a read statement on the second connection: its rows (plain objects by column name, as the `SqlClient`'s).
 *
 * @since 0.1.0
 * @category models
 */
export interface Reader {
  readonly all: (query: string, params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<unknown>, SqlError>
}

/**
 * The read connection of the database in use: a second connection to a SQLite file, the `pg` pool on PostgreSQL,
 * or `undefined` when there is none (SQLite in memory, a host app's own client).
 *
 * @since 0.1.0
 * @category services
 */
export class ReadConnection extends Context.Tag("@mediagate/persistence/ReadConnection")<
  ReadConnection,
  Reader | undefined
>() {}

/**
 * A reader of the SQLite file `filename` (which the main connection has created): opened on its first read,
 * statements prepared once per query text, closed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (filename: string): Effect.Effect<Reader, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => SqliteDriver.lazy(() => SqliteDriver.open(filename, { readonly: true, fileMustExist: true }))),
      (connection) => Effect.sync(connection.close)
    ),
    (connection): Reader => ({
      all: (query, params) =>
        Effect.try({
          try: (): ReadonlyArray<unknown> => connection.prepared(query).all(...params),
          catch: SqliteDriver.failure
        })
    })
  )

/**
 * What {@link fromPool} uses of a `pg` pool.
 *
 * @since 0.1.0
 * @category models
 */
export interface Pool {
  query(text: string, values: Array<unknown>): Promise<{ readonly rows: ReadonlyArray<unknown> }>
}

/**
 * A reader over a PostgreSQL `pg` pool (the one the `SqlClient` uses): each read is one `pool.query` on whichever
 * connection is free, as a read through the client would be, without `@effect/sql`'s per-statement work.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromPool = (pool: Pool): Reader => ({
  all: (query, params) =>
    Effect.tryPromise({
      try: () => pool.query(query, [...params]).then((result) => result.rows),
      catch: SqliteDriver.failure
    })
})

/**
 * The read connection of the SQLite file `filename`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (filename: string): Layer.Layer<ReadConnection> => Layer.scoped(ReadConnection, make(filename))

/**
 * No read connection: stores read through the `SqlClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNone: Layer.Layer<ReadConnection> = Layer.succeed(ReadConnection, undefined)
