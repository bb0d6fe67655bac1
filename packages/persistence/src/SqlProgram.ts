/**
 * A transaction's statements written once as a program (a generator yielding the store's `sql` statements and
 * receiving each one's rows) and run either through the `SqlClient` ({@link run}: each statement an `Effect`) or
 * synchronously on a write connection's transaction ({@link runSync}, `WriteConnection`), with the same checks
 * between the statements either way.
 *
 * @since 0.1.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"

/** Statements and the logic between them: yields each statement, gets its rows, returns the outcome. */
export type SqlProgram<A> = Generator<Statement.Statement<unknown>, A, ReadonlyArray<unknown>>

/** Runs a program through the `SqlClient` its statements were made with. */
export const run = <A>(program: SqlProgram<A>): Effect.Effect<A, SqlError> =>
  Effect.suspend(() => {
    const next = (rows: ReadonlyArray<unknown>): Effect.Effect<A, SqlError> => {
      const step = program.next(rows)
      return step.done === true ? Effect.succeed(step.value) : Effect.flatMap(step.value, next)
    }
    return next([])
  })

/** Runs a program synchronously, each statement through `execute` (e.g. `WriteConnection`'s `Transaction.run`). */
export const runSync = <A>(
  program: SqlProgram<A>,
  execute: (statement: Statement.Statement<unknown>) => ReadonlyArray<unknown>
): A => {
  let step = program.next([])
  while (step.done !== true) step = program.next(execute(step.value))
  return step.value
}
