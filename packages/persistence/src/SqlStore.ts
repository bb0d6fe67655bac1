/**
 * What every SQL store of Mediagate (tasks, billing, accounts, webhooks) shares besides row decoding (`SqlRows`):
 * the client and its dialect, the table prefix, the column types of its dialect, the migrations runner, the storage
 * clock, and the mapping of storage failures to {@link PersistenceError}.
 *
 * Table prefix: every database object a store creates (tables, indexes, triggers and their functions, sequences,
 * its migrations table, the PostgreSQL `NOTIFY` channel) is named `<prefix><name>`, so that Mediagate can live in
 * an application's own database beside its `tasks` or `accounts` tables. The prefix is {@link defaultPrefix}
 * unless a store's `prefix` option says otherwise; it must be empty or match {@link prefixPattern}. Being
 * validated, it is safe to put into SQL text. An invalid prefix fails the store's construction with a
 * {@link PersistenceError} (`<store>: invalid table prefix ...`) before the database is touched.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { ResultLengthMismatch, SqlError } from "@effect/sql/SqlError"
import type { Identifier } from "@effect/sql/Statement"
import * as Tracing from "@mediagate/contract/Tracing"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Record from "effect/Record"
import * as Schema from "effect/Schema"
import * as SqliteDriver from "./internal/sqliteDriver.js"
import { PersistenceError } from "./PersistenceError.js"
import * as SqlRows from "./SqlRows.js"

// -----------------------------------------------------------------------------------------------------------------
// SQLite connections
// -----------------------------------------------------------------------------------------------------------------

/**
 * The settings of Mediagate's SQLite connections (temporary storage in memory: statement journals and sorts
 * are not written to temporary files), run on the `SqlClient`'s own connection: for the app that opens a SQLite
 * file (`@mediagate/node`'s `Database`). The read and write connections (`ReadConnection`, `WriteConnection`) set
 * them themselves.
 *
 * @since 0.1.0
 * @category utils
 */
export const sqliteSettings: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(SqliteDriver.pragmas, (pragma) => sql.unsafe(pragma), { discard: true })
)

/**
 * How Mediagate's SQLite connections that write make their commits durable (`PRAGMA synchronous`): `normal` (in WAL
 * mode the log is synced at checkpoints; a commit survives a crash of the process, and a power loss or a crash of the
 * machine may undo the last commits, leaving the database consistent) or `full` (the log synced at every commit).
 *
 * @since 0.1.0
 * @category models
 */
export type SqliteSynchronous = SqliteDriver.Synchronous

/**
 * Sets the `SqlClient`'s own SQLite connection's {@link SqliteSynchronous} level (the write connection,
 * `WriteConnection`, is given its own).
 *
 * @since 0.1.0
 * @category utils
 */
export const sqliteSynchronous = (level: SqliteSynchronous): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(SqliteDriver.synchronousPragma(level)))

// -----------------------------------------------------------------------------------------------------------------
// table prefix
// -----------------------------------------------------------------------------------------------------------------

/**
 * The prefix of every database object of Mediagate unless configured otherwise: `mediagate_tasks`, ...
 *
 * @since 0.1.0
 * @category table prefix
 */
export const defaultPrefix = "mediagate_"

/**
 * What a non-empty prefix must match: lowercase letters, digits and `_`, not starting with a digit, at most 30
 * characters (so that every prefixed name stays within PostgreSQL's 63-byte identifiers).
 *
 * @since 0.1.0
 * @category table prefix
 */
export const prefixPattern: RegExp = /^[a-z_][a-z0-9_]{0,29}$/

/**
 * The `prefix` option of every SQL store.
 *
 * @since 0.1.0
 * @category table prefix
 */
export interface PrefixOptions {
  /** The prefix of every table, index, trigger and migrations table of the store (default {@link defaultPrefix}). */
  readonly prefix?: string | undefined
}

/**
 * Whether `prefix` is a valid table prefix: empty, or matching {@link prefixPattern}.
 *
 * @since 0.1.0
 * @category table prefix
 */
export const isValidPrefix = (prefix: string): boolean => prefix === "" || prefixPattern.test(prefix)

/**
 * The message refusing an invalid prefix.
 *
 * @since 0.1.0
 * @category table prefix
 */
export const invalidPrefixMessage = (store: string, prefix: string): string =>
  `${store}: invalid table prefix ${JSON.stringify(prefix)}: a prefix is empty or matches ${prefixPattern} ` +
  `(lowercase letters, digits and _, not starting with a digit, at most 30 characters)`

/**
 * The prefix of `options` (default {@link defaultPrefix}), or a {@link PersistenceError} when it is invalid.
 *
 * @since 0.1.0
 * @category table prefix
 */
export const resolvePrefix = (store: string, options?: PrefixOptions): Effect.Effect<string, PersistenceError> => {
  const prefix = options?.prefix ?? defaultPrefix
  return isValidPrefix(prefix)
    ? Effect.succeed(prefix)
    : Effect.fail(new PersistenceError({ message: invalidPrefixMessage(store, prefix) }))
}

/**
 * A store's migrations under `prefix`: `record(prefix)` (each migration creates its objects with the prefix), or,
 * for an invalid prefix, a loader failing with a `MigrationError` before anything runs.
 *
 * @since 0.1.0
 * @category migrations
 */
export const prefixedMigrations = (
  store: string,
  prefix: string,
  record: (prefix: string) => Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>>
): Migrator.Loader =>
  isValidPrefix(prefix)
    ? Migrator.fromRecord(record(prefix))
    : Effect.fail(new Migrator.MigrationError({ reason: "bad-state", message: invalidPrefixMessage(store, prefix) }))

/**
 * Every table name of `names` as an SQL identifier, for tagged templates (`${t.tasks}`).
 *
 * @since 0.1.0
 * @category table prefix
 */
export const identifiers = <K extends string>(
  sql: SqlClient.SqlClient,
  names: Readonly<Record<K, string>>
): Readonly<Record<K, Identifier>> => Record.map(names, (name) => sql(name))

// -----------------------------------------------------------------------------------------------------------------
// dialect, clock, failures
// -----------------------------------------------------------------------------------------------------------------

/**
 * The column types a store's migrations use in `sql`'s dialect (PostgreSQL, else SQLite).
 *
 * @since 0.1.0
 * @category utils
 */
export const columns = (sql: SqlClient.SqlClient) => {
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  return {
    pg,
    /** A 64-bit integer (epoch ms, micros). */
    big: pg ? "BIGINT" : "INTEGER",
    /** A double. */
    real: pg ? "DOUBLE PRECISION" : "REAL",
    /** An identifier: byte-ordered text, so that ULIDs sort the same in both dialects. */
    id: pg ? `TEXT COLLATE "C"` : "TEXT"
  } as const
}

/**
 * The column types of a dialect ({@link columns}).
 *
 * @since 0.1.0
 * @category utils
 */
export type Columns = ReturnType<typeof columns>

/**
 * The database clock in epoch ms as an SQL expression (SQLite: `julianday('now')` holds whole milliseconds; ROUND
 * undoes the float error).
 *
 * @since 0.1.0
 * @category clock
 */
export const nowExpression = (pg: boolean): string =>
  pg
    ? "floor(extract(epoch from clock_timestamp()) * 1000)::bigint"
    : "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

const clockRow = SqlRows.decoder("(database clock)", Schema.Struct({ now: SqlRows.Number }))

/**
 * Reads the database clock (epoch ms).
 *
 * @since 0.1.0
 * @category clock
 */
export const databaseNow = (
  sql: SqlClient.SqlClient,
  pg: boolean
): Effect.Effect<number, SqlError | SqlRows.RowError> =>
  sql`SELECT ${sql.literal(nowExpression(pg))} AS now`.pipe(
    Effect.flatMap(clockRow.single),
    Effect.map((row) => row.now)
  )

/**
 * Where a SQL store reads "now": the database clock (`"database"`, the default: one clock for every process on the
 * database), or Effect's `Clock` (`"clock"`: tests drive it with `TestClock`).
 *
 * @since 0.1.0
 * @category clock
 */
export type Time = "database" | "clock"

/**
 * The `time` option of the SQL stores that keep time (tasks, webhooks).
 *
 * @since 0.1.0
 * @category clock
 */
export interface TimeOptions {
  /** Where "now" comes from (default `"database"`). */
  readonly time?: Time | undefined
}

/**
 * The storage clock of `time` in whole epoch ms: the database clock, or `Clock.currentTimeMillis`.
 *
 * @since 0.1.0
 * @category clock
 */
export const storageNow = (
  sql: SqlClient.SqlClient,
  pg: boolean,
  time: Time = "database"
): Effect.Effect<number, SqlError | SqlRows.RowError> =>
  time === "clock" ? Effect.map(Clock.currentTimeMillis, Math.floor) : databaseNow(sql, pg)

/**
 * The failures of a storage operation that {@link persistence} turns into {@link PersistenceError}.
 *
 * @since 0.1.0
 * @category errors
 */
export type StorageFailure = SqlError | ResultLengthMismatch | SqlRows.RowError

/**
 * Whether a value (a failure, or a defect: `@effect/sql` raises a failed COMMIT/ROLLBACK as one) is a
 * {@link StorageFailure}.
 *
 * @since 0.1.0
 * @category errors
 */
export const isStorageFailure = (u: unknown): u is StorageFailure =>
  u instanceof SqlError || u instanceof ResultLengthMismatch || u instanceof SqlRows.RowError

/**
 * Storage failures (also a failed COMMIT/ROLLBACK, which `@effect/sql` raises as a defect) become
 * {@link PersistenceError} with the message `<store>: <operation> failed`, followed for a row that does not decode
 * by the {@link SqlRows.RowError}'s `<table>.<column>: <what>` (the SQL error's text never appears: it may hold
 * data). `isAlso` names a store's own failures to treat the same way. The operation runs in a span named
 * `<store>.<operation>`.
 *
 * @since 0.1.0
 * @category errors
 */
export const persistence = <F = never>(store: string, isAlso?: (u: unknown) => u is F) => (operation: string) => {
  const span = Tracing.span(`${store}.${operation}`)
  const matches = (u: unknown): u is StorageFailure | F => isStorageFailure(u) || (isAlso !== undefined && isAlso(u))
  const wrap = (cause: StorageFailure | F) =>
    new PersistenceError({
      message: cause instanceof SqlRows.RowError
        ? `${store}: ${operation} failed: ${cause.message}`
        : `${store}: ${operation} failed`,
      cause
    })
  const onDefect = (defect: unknown) => matches(defect) ? Option.some(Effect.fail(wrap(defect))) : Option.none()
  return <A, E, R>(
    self: Effect.Effect<A, E, R>
  ): Effect.Effect<A, Exclude<E, Extract<E, StorageFailure | F>> | PersistenceError, R> =>
    self.pipe(
      Effect.catchIf((e: E): e is Extract<E, StorageFailure | F> => matches(e), (e) => Effect.fail(wrap(e))),
      Effect.catchSomeDefect(onDefect),
      span
    )
}

/**
 * The store's view of the `SqlClient`: without name transforms (rows are decoded by column name), and whether it
 * is PostgreSQL. Other dialects than SQLite and PostgreSQL fail with a {@link PersistenceError}.
 *
 * @since 0.1.0
 * @category utils
 */
export const storeClient = (
  store: string
): Effect.Effect<{ readonly sql: SqlClient.SqlClient; readonly pg: boolean }, PersistenceError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    const dialect = sql.onDialectOrElse({
      pg: () => "pg" as const,
      sqlite: () => "sqlite" as const,
      orElse: () => "other" as const
    })
    return dialect === "other"
      ? Effect.fail(new PersistenceError({ message: `${store}: only SQLite and PostgreSQL are supported` }))
      : Effect.succeed({ sql, pg: dialect === "pg" })
  })

/**
 * Whether an argument holds NUL: no stored identifier does (PostgreSQL refuses it in text), so it matches nothing.
 *
 * @since 0.1.0
 * @category utils
 */
export const hasNul = (...values: ReadonlyArray<string | undefined>): boolean =>
  values.some((value) => value !== undefined && value.includes("\u0000"))

/**
 * Opens a store on the `SqlClient` in context: its validated prefix, the client and dialect ({@link storeClient}),
 * its migrations run ({@link migrator}) and its `tables` as SQL identifiers.
 *
 * @since 0.1.0
 * @category migrations
 */
export const open = <K extends string>(store: string, options: PrefixOptions, definition: {
  readonly tables: (prefix: string) => Readonly<Record<K, string>>
  readonly migrations: (prefix: string) => Migrator.Loader
  readonly migrationsTable: (prefix: string) => string
}) =>
  Effect.gen(function*() {
    const prefix = yield* resolvePrefix(store, options)
    const { pg, sql } = yield* storeClient(store)
    yield* migrator(definition.migrations(prefix), definition.migrationsTable(prefix))
    return { prefix, pg, sql, t: identifiers(sql, definition.tables(prefix)) }
  })

/**
 * Runs a store's migrations, recorded in its own `table` (`<prefix><store>_migrations`). Two processes starting on
 * an empty database may race creating the migrations table: the loser tries again.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrator = (
  loader: Migrator.Loader,
  table: string
): Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> => Migrator.make({})({ loader, table }).pipe(Effect.retry({ times: 2 }))

/**
 * A store's `migrate(prefix)`: refuses an invalid prefix with a {@link PersistenceError} naming `store`, then runs
 * `migrations(prefix)` with {@link migrator} into `migrationsTable(prefix)`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrateWith = (
  store: string,
  migrations: (prefix: string) => Migrator.Loader,
  migrationsTable: (prefix: string) => string
) =>
(prefix: string = defaultPrefix): Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError | PersistenceError,
  SqlClient.SqlClient
> => Effect.flatMap(resolvePrefix(store, { prefix }), (valid) => migrator(migrations(valid), migrationsTable(valid)))
