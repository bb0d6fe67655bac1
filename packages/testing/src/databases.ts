/**
 * Test databases shared by every package's tests: a fresh in-memory SQLite database per layer, and PostgreSQL on
 * the local server (trust auth) with a fresh schema per test, created and dropped around it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"

/** The URL of a database on the local PostgreSQL server (`test` by default). */
export const pgUrl = (database = "test"): string => `postgres://postgres@127.0.0.1:5432/${database}`

/** What to say when PostgreSQL is not there. */
export const pgNotRunning = "PostgreSQL is not running at 127.0.0.1:5432"

/** A fresh in-memory SQLite database. */
export const sqlite = (): Layer.Layer<SqlClient.SqlClient, unknown> => SqliteClient.layer({ filename: ":memory:" })

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
  Effect.suspend(() => {
    const name = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`
    return Effect.as(admin(`CREATE SCHEMA ${name}`), name)
  }),
  (name) => Effect.ignore(admin(`DROP SCHEMA IF EXISTS ${name} CASCADE`))
)

/** A client whose connections (the LISTEN one included) work in `schema` (through `search_path`). */
export const pgClient = (
  schema: string,
  maxConnections = 10
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  PgClient.layer({
    url: Redacted.make(`${pgUrl()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`),
    connectTimeout: "3 seconds",
    maxConnections
  })

/** A client on a fresh schema of its own. */
export const postgres = (): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(pgSchema, (schema) => pgClient(schema)))
