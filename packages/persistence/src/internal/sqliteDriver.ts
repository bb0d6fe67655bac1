/**
 * `better-sqlite3` as `@effect/sql-sqlite-node` (the `SqlClient`'s driver) resolves it, so that no other copy is
 * needed, and what the read and write connections use of it.
 *
 * @internal
 */
import { SqlError } from "@effect/sql/SqlError"
import { createRequire } from "node:module"

/** A prepared statement. */
export interface Prepared {
  /** Whether it answers rows. */
  readonly reader: boolean
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  run(...params: ReadonlyArray<unknown>): unknown
}

/** A connection. */
export interface Connection {
  prepare(query: string): Prepared
  /** Whether a transaction is open. */
  readonly inTransaction: boolean
  close(): void
}

/** The driver. */
export interface Driver {
  new(filename: string, options: { readonly readonly: boolean; readonly fileMustExist: boolean }): Connection
}

/** `better-sqlite3` as `@effect/sql-sqlite-node` resolves it. */
export const load = (): Driver => {
  const fromSqlite = createRequire(createRequire(import.meta.url).resolve("@effect/sql-sqlite-node"))
  const driver: Driver = fromSqlite("better-sqlite3")
  return driver
}

/**
 * The settings every connection of Mediagate's own to a SQLite file gets when it opens (the `SqlClient`'s too, see
 * `@mediagate/node`'s `Database`): temporary storage in memory. SQLite keeps a statement journal for any statement
 * that may have to be undone on its own inside a transaction (one that fires a trigger, such as a task's insert with
 * its count trigger, or one in a savepoint), and temporary b-trees of sorts; with the default setting they are
 * temporary files, written and read back for every such statement (a task's insert: 28 µs, 12 µs in memory). They
 * are only needed while the statement runs: what a commit makes durable is the WAL, not them.
 */
export const pragmas: ReadonlyArray<string> = ["PRAGMA temp_store = MEMORY"]

/**
 * How a connection makes its commits durable (`PRAGMA synchronous`, set on each connection that writes): `normal`,
 * in WAL mode, syncs the log at checkpoints only (a commit survives a crash of the process, and the database stays
 * consistent through a power loss or a crash of the machine, which may undo the last commits); `full` syncs the log
 * at every commit (nothing committed is lost).
 */
export type Synchronous = "normal" | "full"

/** The statement setting {@link Synchronous}. */
export const synchronousPragma = (level: Synchronous) => `PRAGMA synchronous = ${level === "full" ? "FULL" : "NORMAL"}`

/** Opens `filename` with the {@link pragmas}, and a writer's `synchronous` level when given. */
export const open = (
  filename: string,
  options: { readonly readonly: boolean; readonly fileMustExist: boolean; readonly synchronous?: Synchronous }
): Connection => {
  const connection = new (load())(filename, { readonly: options.readonly, fileMustExist: options.fileMustExist })
  for (const pragma of pragmas) connection.prepare(pragma).run()
  if (options.synchronous !== undefined) connection.prepare(synchronousPragma(options.synchronous)).run()
  return connection
}

/** A failed statement, as the `SqlClient` reports one. */
export const failure = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

/** A connection opened on first use, with its statements prepared once per query text; `close` forgets both. */
export const lazy = (open: () => Connection) => {
  let connection: Connection | undefined
  const statements = new Map<string, Prepared>()
  return {
    connection: (): Connection => (connection ??= open()),
    prepared: (query: string): Prepared => {
      let statement = statements.get(query)
      if (statement === undefined) {
        connection ??= open()
        statement = connection.prepare(query)
        statements.set(query, statement)
      }
      return statement
    },
    close: () => {
      statements.clear()
      connection?.close()
      connection = undefined
    }
  }
}
