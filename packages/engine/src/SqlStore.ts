/**
 * What every SQL store of Mediagate (tasks, billing, accounts, webhooks) shares besides row decoding
 * ({@link "./SqlRows.js"}): the column types of its dialect, the database clock, and the mapping of storage
 * failures to {@link PersistenceError}.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { ResultLengthMismatch, SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PersistenceError } from "./PersistenceError.js"
import { decodeAll, numberOf, type Row, RowError } from "./SqlRows.js"

/** The column types a store's migrations use, by dialect (PostgreSQL, else SQLite). */
export interface Columns {
  readonly pg: boolean
  /** A 64-bit integer (epoch ms, micros). */
  readonly big: string
  /** A double. */
  readonly real: string
  /** An identifier: byte-ordered text, so that ULIDs sort the same in both dialects. */
  readonly id: string
}

/** The {@link Columns} of `sql`'s dialect. */
export const columns = (sql: SqlClient.SqlClient): Columns => {
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  return {
    pg,
    big: pg ? "BIGINT" : "INTEGER",
    real: pg ? "DOUBLE PRECISION" : "REAL",
    id: pg ? `TEXT COLLATE "C"` : "TEXT"
  }
}

/**
 * The database clock in epoch ms as an SQL expression (SQLite: `julianday('now')` holds whole milliseconds; ROUND
 * undoes the float error).
 */
export const nowExpression = (pg: boolean): string =>
  pg
    ? "floor(extract(epoch from clock_timestamp()) * 1000)::bigint"
    : "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

/** Reads the database clock (epoch ms). */
export const databaseNow = (sql: SqlClient.SqlClient, pg: boolean): Effect.Effect<number, SqlError | RowError> =>
  sql<Row>`SELECT ${sql.literal(nowExpression(pg))} AS now`.pipe(
    Effect.flatMap(decodeAll((row) => numberOf(row, "now"))),
    Effect.map((rows) => rows[0]!)
  )

/** The failures of a storage operation that {@link persistence} turns into {@link PersistenceError}. */
export type StorageFailure = SqlError | ResultLengthMismatch | RowError

const isStorageFailure = (u: unknown): u is StorageFailure =>
  u instanceof SqlError || u instanceof ResultLengthMismatch || u instanceof RowError

/**
 * Storage failures (also a failed COMMIT/ROLLBACK, which `@effect/sql` raises as a defect) become
 * {@link PersistenceError} with the message `<store>: <operation> failed`. `isAlso` names a store's own failures
 * to treat the same way.
 */
export const persistence = <F = never>(store: string, isAlso?: (u: unknown) => u is F) => (operation: string) =>
<A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, StorageFailure | F> | PersistenceError, R> => {
  const matches = (u: unknown): u is StorageFailure | F => isStorageFailure(u) || (isAlso !== undefined && isAlso(u))
  const wrap = (cause: StorageFailure | F) => new PersistenceError({ message: `${store}: ${operation} failed`, cause })
  return self.pipe(
    Effect.mapError((e) => matches(e) ? wrap(e) : e as Exclude<E, StorageFailure | F>),
    Effect.catchSomeDefect((defect) => matches(defect) ? Option.some(Effect.fail(wrap(defect))) : Option.none())
  )
}

/**
 * The store's view of the `SqlClient`: without name transforms (rows are decoded by column name), and whether it
 * is PostgreSQL. Other dialects than SQLite and PostgreSQL fail with a {@link PersistenceError}.
 */
export const storeClient = (
  store: string
): Effect.Effect<{ readonly sql: SqlClient.SqlClient; readonly pg: boolean }, PersistenceError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, sqlite: () => "sqlite" as const, orElse: () => "other" as const })
    return dialect === "other"
      ? Effect.fail(new PersistenceError({ message: `${store}: only SQLite and PostgreSQL are supported` }))
      : Effect.succeed({ sql, pg: dialect === "pg" })
  })

/**
 * Runs a store's migrations, recorded in its own `table`. Two processes starting on an empty database may race
 * creating the migrations table: the loser tries again.
 */
export const migrator = (
  loader: Migrator.Loader,
  table: string
): Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, Migrator.MigrationError | SqlError, SqlClient.SqlClient> =>
  Migrator.make({})({ loader, table }).pipe(Effect.retry({ times: 2 }))
