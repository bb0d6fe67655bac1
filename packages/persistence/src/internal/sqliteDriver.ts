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
