/**
 * Test databases shared by every package's tests: a fresh in-memory SQLite database per layer, and PostgreSQL on
 * the local server (trust auth) with a fresh schema per test, created and dropped around it.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PreparedStatements from "@mediagate/persistence/PreparedStatements"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Pg from "pg"

/** The URL of a database on the local PostgreSQL server (`test` by default). */
export const pgUrl = (database = "test"): string => `postgres://postgres@127.0.0.1:5432/${database}`

/** What to say when PostgreSQL is not there. */
export const pgNotRunning = "PostgreSQL is not running at 127.0.0.1:5432"

/** A fresh in-memory SQLite database. */
export const sqlite = (): Layer.Layer<SqlClient.SqlClient, unknown> => SqliteClient.layer({ filename: ":memory:" })

/** The path of a fresh SQLite file in a temporary folder, removed (with the folder) when the scope closes. */
export const sqliteFilename: Effect.Effect<string, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "mediagate-test-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "test.db")
)

/** Runs one statement on a short-lived connection to the test database. */
const admin = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(pgUrl()), connectTimeout: "3 seconds", maxConnections: 1 })),
    Effect.asVoid
  )

/** Whether PostgreSQL answers at {@link pgUrl} (probed with a short timeout). */
export const probePostgres = (): Promise<boolean> =>
  Effect.runPromise(
    admin("SELECT 1").pipe(
      Effect.timeout("3 seconds"),
      Effect.as(true),
      Effect.catchAllCause(() => Effect.succeed(false))
    )
  )

/** Whether PostgreSQL answered when this module loaded. */
export const pgAvailable: boolean = await probePostgres()

/**
 * Whether to run the PostgreSQL tests: when it is available, and always in CI (`CI=true`), where a missing
 * PostgreSQL must fail the run rather than skip it.
 */
export const runPostgres: boolean = pgAvailable || process.env.CI === "true"

/** A fresh schema for one test, dropped (with everything in it) when the scope closes. */
export const pgSchema: Effect.Effect<string, unknown, Scope.Scope> = Effect.acquireRelease(
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const name = `t_${now.toString(36)}_${Math.random().toString(36).slice(2, 10)}`
    return Effect.as(admin(`CREATE SCHEMA ${name}`), name)
  }),
  (name) => Effect.ignore(admin(`DROP SCHEMA IF EXISTS ${name} CASCADE`))
)

/**
 * A client whose connections (the LISTEN one included) work in `schema` (through `search_path`), on a `pg` pool
 * made as the server makes it: its connections name their hot statements (`@mediagate/persistence`
 * `PreparedStatements`), so the suites run the statements as production sends them. Its connect timeout also
 * bounds the wait for a free connection of the pool (node-postgres): the concurrency suites queue hundreds of
 * statements on it, which on a fully loaded 2-core machine waited longer than 3 s.
 */
export const pgClient = (
  schema: string,
  maxConnections = 10
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new Pg.Pool({
          connectionString: `${pgUrl()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
          connectionTimeoutMillis: 30_000,
          // the files running beside each other share the server's connections: an unused one is given back soon
          idleTimeoutMillis: 2_000,
          max: maxConnections,
          application_name: "@effect/sql-pg",
          Client: PreparedStatements.preparing(Pg.Client)
        })
        // errors of idle connections (a dropped schema's, a restarted server's): the pool opens new ones
        pool.on("error", () => {})
        return pool
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
  })

/** A client on a fresh schema of its own. */
export const postgres = (): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(pgSchema, (schema) => pgClient(schema)))

/** A database object as the catalog lists it. */
export interface SchemaObject {
  readonly kind: string
  readonly name: string
  /** The table an index, trigger or constraint belongs to (null for tables, sequences, functions). */
  readonly table: string | null
}

/**
 * Every object of the database (SQLite: `sqlite_master`, without SQLite's own `sqlite_sequence`) or of the current
 * schema (PostgreSQL: tables, indexes, sequences and views from `pg_class`, constraints, user triggers, functions).
 */
export const schemaObjects: Effect.Effect<ReadonlyArray<SchemaObject>, unknown, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (client) => {
    const sql = client.withoutTransforms()
    return sql.onDialectOrElse({
      pg: () =>
        sql<SchemaObject>`
          SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'i' THEN 'index'
              WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view' ELSE c.relkind::text END AS kind,
            c.relname AS name, owner.relname AS "table"
          FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
          LEFT JOIN pg_index i ON i.indexrelid = c.oid
          LEFT JOIN pg_class owner ON owner.oid = i.indrelid
          WHERE n.nspname = current_schema()
          UNION ALL
          SELECT 'constraint', con.conname, c.relname
          FROM pg_constraint con
          JOIN pg_class c ON c.oid = con.conrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = current_schema()
          UNION ALL
          SELECT 'trigger', tg.tgname, c.relname
          FROM pg_trigger tg
          JOIN pg_class c ON c.oid = tg.tgrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = current_schema() AND NOT tg.tgisinternal
          UNION ALL
          SELECT 'function', p.proname, NULL
          FROM pg_proc p
          JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = current_schema()`,
      orElse: () =>
        sql<SchemaObject>`SELECT type AS kind, name, CASE WHEN type = 'table' THEN NULL ELSE tbl_name END AS "table"
          FROM sqlite_master WHERE name <> 'sqlite_sequence'`
    })
  }
)

/**
 * The objects of `objects` not named with `prefix`. Names the database chooses itself count by their table:
 * SQLite's automatic indexes (`sqlite_autoindex_<table>_<n>`).
 */
export const outsidePrefix = (objects: ReadonlyArray<SchemaObject>, prefix: string): ReadonlyArray<SchemaObject> =>
  objects.filter((o) =>
    !(o.name.startsWith(prefix) || (o.name.startsWith("sqlite_autoindex_") && o.table?.startsWith(prefix) === true))
  )
