/**
 * Small helpers of the SQL stores: row decoding by column name and the mapping of storage failures to
 * `PersistenceError` (also a failed COMMIT/ROLLBACK, which `@effect/sql` raises as a defect).
 */
import { ResultLengthMismatch, SqlError } from "@effect/sql/SqlError"
import { PersistenceError } from "@mediagate/engine/PersistenceError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { bad, type Row, RowError } from "@mediagate/engine/SqlRows"

export { decodeAll, numberOf, numberOrNull, type Row, RowError, stringOf } from "@mediagate/engine/SqlRows"

export const jsonOf = (row: Row, column: string): unknown => {
  const value = row[column]
  if (typeof value !== "string") return value === null || value === undefined ? bad(column, "missing") : value
  try {
    return JSON.parse(value)
  } catch {
    return bad(column, "not JSON")
  }
}

type StorageFailure = SqlError | ResultLengthMismatch | RowError

const isStorageFailure = (u: unknown): u is StorageFailure =>
  u instanceof SqlError || u instanceof ResultLengthMismatch || u instanceof RowError

/** Turns storage failures into {@link PersistenceError}. */
export const persistence = (operation: string) =>
<A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, StorageFailure> | PersistenceError, R> => {
  const wrap = (cause: StorageFailure) => new PersistenceError({ message: `accounts storage: ${operation} failed`, cause })
  return self.pipe(
    Effect.mapError((e) => isStorageFailure(e) ? wrap(e) : e as Exclude<E, StorageFailure>),
    Effect.catchSomeDefect((defect) => isStorageFailure(defect) ? Option.some(Effect.fail(wrap(defect))) : Option.none())
  )
}
