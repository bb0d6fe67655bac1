/**
 * A writer for the hot write transactions of a SQLite file (the charged accepts of `POST` generation requests):
 * a second read-write connection to the file whose transactions run as one synchronous block while the
 * `SqlClient`'s own connection is held (`sql.reserve`, as a transaction of the client holds it), so that nothing
 * else of this process writes meanwhile. A transaction's statements are the store's own `sql` statements,
 * compiled as the client compiles them, run back to back on cached prepared statements: without `@effect/sql`'s
 * per-statement work (span, scope, connection semaphore, prepared-statement cache, ≈ 35–40 µs a statement
 * measured in process, against ≈ 5–10 µs for the statement itself).
 *
 * Other processes writing the same file are waited for as the client waits for them (the driver's busy timeout);
 * the write lock is taken at `BEGIN IMMEDIATE`. What is committed is seen by the client's next statement (WAL
 * mode). An in-memory database, PostgreSQL or a host app's own client have no writer ({@link layerNone}): stores
 * write through the `SqlClient`.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as SqliteDriver from "./internal/sqliteDriver.js"

/**
 * A transaction on the write connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface Transaction {
  /** Runs a statement (of a store's `sql`) and answers its rows: those it returns, none for a plain write. */
  readonly run: (statement: Statement.Statement<unknown>) => ReadonlyArray<unknown>
  /**
   * Runs a statement given as its SQLite text (`?` placeholders) and parameters, for a statement on the hot path
   * whose text is fixed: nothing is built or compiled per call. Answers its rows as {@link run} does.
   */
  readonly execute: (query: string, params: ReadonlyArray<unknown>) => ReadonlyArray<unknown>
  /**
   * Runs `body` in a savepoint of the transaction and keeps what it wrote only when `keep` holds for its answer
   * (otherwise rolls back to the savepoint); answers what `body` answered either way.
   */
  readonly attempt: <A>(body: () => A, keep: (answer: A) => boolean) => A
}

/**
 * Runs transactions on the write connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface Writer {
  /**
   * Runs `body` as one transaction (`BEGIN IMMEDIATE` … `COMMIT`; rolled back if it throws, which fails with a
   * `SqlError`), holding the `SqlClient`'s connection meanwhile. Never inside a transaction of the `SqlClient`
   * (whose connection it would wait for): that is a defect.
   */
  readonly transaction: <A>(body: (transaction: Transaction) => A) => Effect.Effect<A, SqlError>
}

/**
 * The write connection of the database in use, or `undefined` when there is none (stores write through the
 * `SqlClient`).
 *
 * @since 0.1.0
 * @category services
 */
export class WriteConnection extends Context.Tag("@mediagate/persistence/WriteConnection")<
  WriteConnection,
  Writer | undefined
>() {}

/**
 * Settings of a write connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface WriterOptions {
  /** How its commits are made durable (`PRAGMA synchronous`; the driver's default when not given). */
  readonly synchronous?: SqliteDriver.Synchronous
}

/**
 * A writer of the SQLite file `filename` (which the `SqlClient` in context has opened): its connection opened on the
 * first transaction, statements prepared once per query text, closed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  filename: string,
  options: WriterOptions = {}
): Effect.Effect<Writer, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const client = yield* SqlClient.SqlClient
    const opening = { readonly: false, fileMustExist: true, ...options }
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() => SqliteDriver.lazy(() => SqliteDriver.open(filename, opening))),
      (opened) => Effect.sync(opened.close)
    )
    // the transaction statements are cached prepared statements too (the driver's `transaction()` wrapper makes
    // several closures per call)
    const exec = (query: string) => {
      connection.prepared(query).run()
    }
    /** Undoes a savepoint (or the transaction) if the connection is still in one, which a failed COMMIT may end. */
    const undoing = (query: string) => {
      if (connection.connection().inTransaction) exec(query)
    }
    const execute = (query: string, params: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
      const prepared = connection.prepared(query)
      if (prepared.reader) return prepared.all(...params)
      prepared.run(...params)
      return []
    }
    const transaction: Transaction = {
      run: (statement) => {
        const [query, params] = statement.compile()
        return execute(query, params)
      },
      execute,
      attempt: (body, keep) => {
        exec("SAVEPOINT attempt")
        let answer: ReturnType<typeof body>
        try {
          answer = body()
        } catch (thrown) {
          undoing("ROLLBACK TO attempt")
          undoing("RELEASE attempt")
          throw thrown
        }
        if (!keep(answer)) exec("ROLLBACK TO attempt")
        exec("RELEASE attempt")
        return answer
      }
    }
    const run = <A>(body: (transaction: Transaction) => A) =>
      Effect.scoped(Effect.zipRight(
        client.reserve,
        Effect.try({
          try: () => {
            exec("BEGIN IMMEDIATE")
            try {
              const answer = body(transaction)
              exec("COMMIT")
              return answer
            } catch (thrown) {
              undoing("ROLLBACK")
              throw thrown
            }
          },
          catch: SqliteDriver.failure
        })
      ))
    return {
      transaction: (body) =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) =>
          Option.isSome(open)
            // the client's connection is held by that transaction: reserving it would wait forever
            ? Effect.dieMessage("WriteConnection: a transaction on the write connection inside one of the SqlClient")
            : run(body))
    }
  })

/**
 * The write connection of the SQLite file `filename`, beside the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  filename: string,
  options: WriterOptions = {}
): Layer.Layer<WriteConnection, never, SqlClient.SqlClient> => Layer.scoped(WriteConnection, make(filename, options))

/**
 * No write connection: stores write through the `SqlClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNone: Layer.Layer<WriteConnection> = Layer.succeed(WriteConnection, undefined)
