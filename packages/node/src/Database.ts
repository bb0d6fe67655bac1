/**
 * Where Mediagate keeps its data: a SQLite file (the embedded default), a PostgreSQL URL (several processes may
 * share it), or a `SqlClient` the host app already has. The drivers are optional peer dependencies, loaded only
 * when chosen: a PostgreSQL-only app never installs `better-sqlite3`, a SQLite-only app never installs `pg`.
 *
 * Outages (docs/operations.md#outages): the PostgreSQL pool bounds how long a query waits for a connection
 * (`connectTimeout`, `MEDIAGATE_DB_CONNECT_TIMEOUT`, default 5 s: opening one, or waiting for a free one), so while
 * the database restarts requests fail fast (503 `SERVICE_UNAVAILABLE`) instead of queueing; connections the server
 * killed are dropped from the pool and new ones are opened as soon as it answers again.
 *
 * Connection metrics (`mediagate_db_pool_*`, docs/operations.md): the layers of a SQLite file and of a PostgreSQL URL
 * also put {@link DatabasePool} in context. On PostgreSQL the `pg` pool is made here, with the settings
 * `PgClient.layer` would give it (URL, pool size, timeouts, application name `@effect/sql-pg`, SSL from the URL), its
 * connections naming their hot statements (`@mediagate/persistence/PreparedStatements`, unless
 * `preparedStatements: false`), and handed to `PgClient.layerFromPool`: `@effect/sql-pg` does not expose the pool it
 * makes itself. So `pg` (a dependency of `@effect/sql-pg`) is imported too, only when PostgreSQL is chosen. A host
 * app's `SqlClient` (`{ layer }`) has no such view: no pool metrics then.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PreparedStatements from "@mediagate/persistence/PreparedStatements"
import * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as WriteConnection from "@mediagate/persistence/WriteConnection"
import * as Durations from "@mediagate/vendors/Durations"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import type * as Pg from "pg"
import satisfies from "semver/functions/satisfies.js"

/**
 * The database of a Mediagate stack.
 *
 * @since 0.1.0
 * @category models
 */
export type Database =
  | {
    /** A SQLite file (created with its folder when missing); `":memory:"` for a throwaway database. */
    readonly sqlite: string
    /**
     * How commits are made durable (default `"normal"`): `"normal"` syncs the write-ahead log at checkpoints (a
     * commit survives a crash of the process; a power loss or a crash of the machine may undo the last commits, the
     * database staying consistent), `"full"` at every commit (nothing committed is lost; fewer tasks a second).
     */
    readonly synchronous?: SqlStore.SqliteSynchronous
  }
  | {
    /** A PostgreSQL connection URL (`postgres://user@host:5432/db`). */
    readonly postgres: string | Redacted.Redacted<string>
    /** Pool size (default 10; the production server's two threads each have a pool of their own). */
    readonly maxConnections?: number
    /**
     * Longest wait for a connection: opening one, or for a free one when the pool is busy (default
     * {@link defaultConnectTimeout}). A query that cannot get one in time fails (a 503 at the HTTP edge).
     */
    readonly connectTimeout?: Duration.DurationInput
    /** How long an unused pooled connection stays open (default 10 s). */
    readonly idleTimeout?: Duration.DurationInput
    /**
     * Whether statements a connection runs again and again are sent as named prepared statements, parsed and
     * planned once per connection (default `true`). Off for a pooler that cannot keep them (PgBouncer before 1.21
     * in transaction mode, or without `max_prepared_statements`).
     */
    readonly preparedStatements?: boolean
  }
  | {
    /**
     * A `SqlClient` the host app already has (SQLite or PostgreSQL). On PostgreSQL, the driver's client (as
     * `PgClient.layer` provides it) lets workers be woken by `LISTEN` instead of polling.
     */
    readonly layer: Layer.Layer<SqlClient.SqlClient, unknown>
  }

/**
 * A database driver could not be loaded (`retryable: false`: installing it is the fix) or the database could not be
 * opened (`retryable: true`: it may answer later).
 *
 * @since 0.1.0
 * @category errors
 */
export class DatabaseError extends Schema.TaggedError<DatabaseError>()("DatabaseError", {
  message: Schema.String,
  retryable: Schema.Boolean,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * This process's database connections at a moment (the `mediagate_db_pool_*` metrics).
 *
 * @since 0.1.0
 * @category models
 */
export interface PoolStats {
  /** Connections a statement or transaction holds. */
  readonly inUse: number
  /** Open connections free for the next query. */
  readonly idle: number
  /** Queries waiting for a free connection (PostgreSQL), or undefined where it is not known (SQLite). */
  readonly waiting: number | undefined
  /** The most connections opened (the pool size; SQLite: 1). */
  readonly max: number
}

/**
 * The connections Mediagate opened ({@link layer} with a SQLite file or a PostgreSQL URL puts it in context beside
 * the `SqlClient`; read it with `Effect.serviceOption`: it is absent with a host app's `SqlClient`).
 *
 * @since 0.1.0
 * @category services
 */
export class DatabasePool extends Context.Tag("@mediagate/node/Database/DatabasePool")<DatabasePool, {
  /** The connections now; cheap (counters of the pool; on SQLite a non-waiting look at its one connection). */
  readonly stats: Effect.Effect<PoolStats>
}>() {}

/** The stats of a `pg` pool (its own counters; the `LISTEN` connection of `@effect/sql-pg` is not in the pool). */
const pgPoolStats = (pool: Pg.Pool, max: number): DatabasePool["Type"] => ({
  stats: Effect.sync(() => ({
    inUse: pool.totalCount - pool.idleCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    max
  }))
})

/**
 * SQLite's one connection: `@effect/sql-sqlite-node` lets one statement or transaction hold it at a time (a
 * semaphore it keeps to itself), so it is in use when it cannot be reserved at once. How many wait is not known.
 */
const sqliteStats = (sql: SqlClient.SqlClient): DatabasePool["Type"] => ({
  stats: Effect.scoped(sql.reserve).pipe(
    Effect.timeoutTo({ duration: Duration.zero, onSuccess: () => false, onTimeout: () => true }),
    Effect.orElseSucceed(() => false),
    Effect.map((inUse) => ({ inUse: inUse ? 1 : 0, idle: inUse ? 0 : 1, waiting: undefined, max: 1 }))
  )
})

/**
 * Default longest wait for a PostgreSQL connection: 5 s.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultConnectTimeout: Duration.Duration = Duration.seconds(5)

/**
 * A short description for logs (never the URL: it may hold a password).
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (database: Database): string =>
  "sqlite" in database
    ? `SQLite at ${database.sqlite}`
    : "postgres" in database
    ? "PostgreSQL"
    : "the host app's SqlClient"

/**
 * A database driver: an optional peer dependency, imported only when its database is chosen.
 *
 * @since 0.1.0
 * @category models
 */
export interface Driver {
  /** The package. */
  readonly name: string
  /** The versions Mediagate works with (`@mediagate/node`'s peer dependency range, the Effect 3 line). */
  readonly range: string
  /** The command that installs it beside the newest Effect 3 (docs/embedding.md lists the line per Effect). */
  readonly install: string
}

/**
 * The drivers of a PostgreSQL URL and of a SQLite file.
 *
 * @since 0.1.0
 * @category constants
 */
export const drivers = {
  postgres: {
    name: "@effect/sql-pg",
    range: ">=0.45.0 <0.54.0",
    install: "npm install @effect/sql-pg@^0.53"
  },
  sqlite: {
    name: "@effect/sql-sqlite-node",
    range: ">=0.45.0 <0.54.0",
    install: "npm install @effect/sql-sqlite-node@^0.53"
  }
} as const satisfies Record<string, Driver>

/** Where the install line of an app on an older effect is. */
const olderEffect = " (with effect 3.22; the line of an older effect: docs/embedding.md#effect-versions)"

/**
 * What is wrong with the installed version of a driver (`undefined`: not installed), or `undefined` when it is
 * one Mediagate works with. The registry's latest drivers are Effect 4's (`@effect/sql-pg@4`), which cannot run
 * on Effect 3: that is said at start, not met as a crash deep in a layer.
 *
 * @since 0.1.0
 * @category utils
 */
export const driverProblem = (driver: Driver, installed: string | undefined): string | undefined =>
  installed === undefined
    ? `the database driver ${driver.name} is not installed: ${driver.install}${olderEffect}`
    : satisfies(installed, driver.range)
    ? undefined
    : `the database driver ${driver.name} ${installed} is installed, but Mediagate works with ${driver.name} ` +
      `${driver.range} (Effect 3): ${driver.install}${olderEffect}`

/** The version of `name` that an `import` from this module finds, or `undefined` when none is installed. */
const installedVersion = (name: string): string | undefined => {
  try {
    return (createRequire(import.meta.url)(`${name}/package.json`) as { readonly version: string }).version
  } catch {
    return undefined
  }
}

/** Imports a driver after checking that an installed version Mediagate works with is there. */
const loadDriver = <A>(driver: Driver, load: () => Promise<A>) =>
  Effect.suspend(() => {
    const problem = driverProblem(driver, installedVersion(driver.name))
    return problem === undefined
      ? Effect.tryPromise({
        try: load,
        catch: (cause) =>
          new DatabaseError({
            message: `the database driver ${driver.name} does not load: ${cause}`,
            retryable: false,
            cause
          })
      })
      : Effect.fail(new DatabaseError({ message: problem, retryable: false }))
  })

/** A failure to reach the database, as a {@link DatabaseError} that is `retryable` (it may answer later). */
const unreachable = (message: string) => (cause: unknown) => new DatabaseError({ message, retryable: true, cause })

/**
 * The `SqlClient` of a {@link Database}; the driver module is imported only when it is used. With a SQLite file or
 * a PostgreSQL URL the layer also provides {@link DatabasePool} (not in its type: read it with
 * `Effect.serviceOption`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  database: Database
): Layer.Layer<
  SqlClient.SqlClient | ReadConnection.ReadConnection | WriteConnection.WriteConnection,
  DatabaseError
> => {
  if ("layer" in database) {
    // the host app's client: every read goes through it
    const client = Layer.mapError(database.layer, unreachable("the host app's SqlClient failed to start"))
    return Layer.mergeAll(client, ReadConnection.layerNone, WriteConnection.layerNone)
  }
  if ("postgres" in database) {
    const url = typeof database.postgres === "string" ? Redacted.make(database.postgres) : database.postgres
    const max = database.maxConnections ?? 10
    const connectTimeout = database.connectTimeout ?? defaultConnectTimeout
    const idleTimeout = database.idleTimeout
    const failed = unreachable("cannot connect to PostgreSQL")
    return Layer.unwrapScoped(Effect.gen(function*() {
      const PgClient = yield* loadDriver(drivers.postgres, () => import("@effect/sql-pg/PgClient"))
      // `pg` is a dependency of `@effect/sql-pg`
      const pg = yield* Effect.tryPromise({
        try: () => import("pg"),
        catch: (cause) =>
          new DatabaseError({ message: `pg does not load (npm install pg): ${cause}`, retryable: false, cause })
      })
      const { Client: PlainClient, Pool } = pg.default ?? pg
      // the hot statements named, so that PostgreSQL parses and plans them once per connection
      const Client = database.preparedStatements === false ? PlainClient : PreparedStatements.preparing(PlainClient)
      // the pool as `PgClient.make` builds it, the same first query and the same end
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const made = new Pool({
            connectionString: Redacted.value(url),
            connectionTimeoutMillis: Duration.toMillis(connectTimeout),
            ...(idleTimeout === undefined ? {} : { idleTimeoutMillis: Duration.toMillis(idleTimeout) }),
            max,
            application_name: "@effect/sql-pg",
            Client
          })
          // errors of idle connections (a restarted server): the pool drops them and opens new ones
          made.on("error", () => {})
          return made
        }),
        (made) => Effect.promise(() => made.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
      )
      yield* Effect.tryPromise({ try: () => pool.query("SELECT 1"), catch: failed }).pipe(
        Effect.timeoutFail({ duration: connectTimeout, onTimeout: () => failed(new Error("connection timed out")) })
      )
      const client = Layer.mapError(PgClient.layerFromPool({ acquire: Effect.succeed(pool) }), failed)
      return Layer.mergeAll(
        client,
        Layer.succeed(DatabasePool, pgPoolStats(pool, max)),
        // task reads by id straight on the pool (@mediagate/persistence/ReadConnection)
        Layer.succeed(ReadConnection.ReadConnection, ReadConnection.fromPool(pool)),
        // writes go through the client (statements there are round trips, not the client's own work)
        WriteConnection.layerNone
      )
    }))
  }
  const file = database.sqlite
  return Layer.unwrapEffect(Effect.gen(function*() {
    const SqliteClient = yield* loadDriver(drivers.sqlite, () => import("@effect/sql-sqlite-node/SqliteClient"))
    if (file !== ":memory:") {
      yield* Effect.try({
        try: () => mkdirSync(dirname(file), { recursive: true }),
        catch: unreachable(`cannot create the folder of ${file}`)
      })
    }
    const synchronous = database.synchronous ?? "normal"
    const client = Layer.mapError(
      Layer.tap(
        SqliteClient.layer({ filename: file }),
        (opened) =>
          Effect.provide(Effect.zipRight(SqlStore.sqliteSettings, SqlStore.sqliteSynchronous(synchronous)), opened)
      ),
      unreachable(`cannot open the SQLite database ${file}`)
    )
    // a file gets a second, read-only connection for the hot reads (@mediagate/persistence/ReadConnection) and a
    // second read-write one for the charged accepts' transactions (@mediagate/persistence/WriteConnection)
    const memory = file === ":memory:"
    const reads = memory ? ReadConnection.layerNone : ReadConnection.layer(file)
    const writes = memory ? WriteConnection.layerNone : WriteConnection.layer(file, { synchronous })
    return Layer.mergeAll(Layer.effect(DatabasePool, Effect.map(SqlClient.SqlClient, sqliteStats)), reads, writes).pipe(
      Layer.provideMerge(client)
    )
  }))
}

/**
 * The database from Effect `Config` (decisions.md §10): PostgreSQL when `DATABASE_URL` is set, otherwise SQLite at
 * `MEDIAGATE_DATA_DIR/mediagate.db` (default `./data/mediagate.db`). On PostgreSQL, `MEDIAGATE_DB_MAX_CONNECTIONS`
 * (default 10, from 2 to 1000) sets the pool's size, `MEDIAGATE_DB_CONNECT_TIMEOUT` (default `5s`) and
 * `MEDIAGATE_DB_IDLE_TIMEOUT` (default `10s`) its timeouts, `MEDIAGATE_DB_PREPARED_STATEMENTS` (default `true`)
 * whether hot statements are prepared on each connection. On SQLite, `MEDIAGATE_SQLITE_SYNCHRONOUS` (`normal`, the
 * default, or `full`) how commits are made durable.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Database> = Config.all({
  url: Config.option(Config.redacted("DATABASE_URL")),
  dataDir: Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data")),
  connectTimeout: Durations.durationConfig("MEDIAGATE_DB_CONNECT_TIMEOUT", "5s"),
  idleTimeout: Durations.durationConfig("MEDIAGATE_DB_IDLE_TIMEOUT", "10s"),
  maxConnections: Config.integer("MEDIAGATE_DB_MAX_CONNECTIONS").pipe(
    Config.validate({ message: "must be a whole number from 2 to 1000", validation: (n) => n >= 2 && n <= 1000 }),
    Config.withDefault(10)
  ),
  preparedStatements: Config.boolean("MEDIAGATE_DB_PREPARED_STATEMENTS").pipe(Config.withDefault(true)),
  synchronous: Config.literal("normal", "full")("MEDIAGATE_SQLITE_SYNCHRONOUS").pipe(Config.withDefault("normal"))
}).pipe(
  Config.map((
    { connectTimeout, dataDir, idleTimeout, maxConnections, preparedStatements, synchronous, url }
  ): Database =>
    Option.isSome(url) && Redacted.value(url.value).trim() !== ""
      ? {
        postgres: url.value,
        maxConnections,
        connectTimeout: Duration.millis(connectTimeout),
        idleTimeout: Duration.millis(idleTimeout),
        preparedStatements
      }
      : { sqlite: join(dataDir, "mediagate.db"), synchronous }
  )
)
