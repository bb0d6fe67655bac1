/**
 * Small helpers of the SQL stores: row decoding by column name and the mapping of storage failures to
 * `PersistenceError` (also a failed COMMIT/ROLLBACK, which `@effect/sql` raises as a defect).
 */
import { ResultLengthMismatch, SqlError } from "@effect/sql/SqlError"
import { PersistenceError } from "@mediagate/engine/PersistenceError"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export type Row = Readonly<Record<string, unknown>>

/** A stored row that does not decode. */
export class RowError extends Data.TaggedError("RowError")<{ readonly message: string }> {}

const bad = (column: string, what: string): never => {
  throw new RowError({ message: `column ${column}: ${what}` })
}

export const numberOf = (row: Row, column: string): number => {
  const value = row[column]
  const n = typeof value === "number"
    ? value
    : typeof value === "bigint" || (typeof value === "string" && value.trim() !== "")
    ? Number(value)
    : Number.NaN
  return Number.isFinite(n) ? n : bad(column, "not a number")
}

export const numberOrNull = (row: Row, column: string): number | null =>
  row[column] === null || row[column] === undefined ? null : numberOf(row, column)

export const stringOf = (row: Row, column: string): string => {
  const value = row[column]
  return typeof value === "string" ? value : bad(column, "not a string")
}

export const jsonOf = (row: Row, column: string): unknown => {
  const value = row[column]
  if (typeof value !== "string") return value === null || value === undefined ? bad(column, "missing") : value
  try {
    return JSON.parse(value)
  } catch {
    return bad(column, "not JSON")
  }
}

/** Decodes rows; a row that does not decode fails with {@link RowError}. */
export const decodeAll = <A>(decode: (row: Row) => A) => (rows: ReadonlyArray<Row>): Effect.Effect<Array<A>, RowError> =>
  Effect.try({
    try: () => rows.map(decode),
    catch: (e) => e instanceof RowError ? e : new RowError({ message: String(e) })
  })

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
