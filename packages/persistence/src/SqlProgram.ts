/**
 * A transaction's statements written once as a program (a generator yielding statements and receiving each one's
 * rows) and run either through the `SqlClient` ({@link run}: each statement an `Effect`) or synchronously on a write
 * connection's transaction ({@link runSync}, `WriteConnection`), with the same checks between the statements
 * either way. A statement is the store's `sql` statement, or a {@link Query}: its text and parameters, for a
 * statement on a hot path whose text is fixed (nothing is built or compiled per run).
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import type * as WriteConnection from "./WriteConnection.js"

/**
 * A statement as its text, in the dialect's placeholders (`?` on SQLite), and its parameters.
 *
 * @since 0.1.0
 * @category models
 */
export interface Query {
  readonly text: string
  readonly params: ReadonlyArray<string | number | null>
}

/**
 * A statement of a program: the store's `sql` statement, or a {@link Query}.
 *
 * @since 0.1.0
 * @category models
 */
export type Step = Statement.Statement<unknown> | Query

/**
 * Statements and the logic between them: yields each statement, gets its rows, returns the outcome.
 *
 * @since 0.1.0
 * @category models
 */
export type SqlProgram<A> = Generator<Step, A, ReadonlyArray<unknown>>

/**
 * A {@link Query}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const query = (text: string, params: ReadonlyArray<string | number | null>): Query => ({ text, params })

const isQuery = (step: Step): step is Query => !Effect.isEffect(step)

/**
 * Runs a program through `sql` (the client its statements were made with).
 *
 * @since 0.1.0
 * @category utils
 */
export const run = <A>(program: SqlProgram<A>, sql: SqlClient.SqlClient): Effect.Effect<A, SqlError> =>
  Effect.suspend(() => {
    const next = (rows: ReadonlyArray<unknown>): Effect.Effect<A, SqlError> => {
      const step = program.next(rows)
      if (step.done === true) return Effect.succeed(step.value)
      const statement = step.value
      return Effect.flatMap(isQuery(statement) ? sql.unsafe(statement.text, statement.params) : statement, next)
    }
    return next([])
  })

/**
 * Runs a program synchronously in a write connection's transaction.
 *
 * @since 0.1.0
 * @category utils
 */
export const runSync = <A>(
  program: SqlProgram<A>,
  transaction: Pick<WriteConnection.Transaction, "run" | "execute">
): A => {
  let step = program.next([])
  while (step.done !== true) {
    const statement = step.value
    step = program.next(
      isQuery(statement) ? transaction.execute(statement.text, statement.params) : transaction.run(statement)
    )
  }
  return step.value
}
