/**
 * Decoding SQL rows by hand, shared by every SQL store of Mediagate (tasks, billing, accounts, webhooks): the
 * drivers answer numbers as numbers, bigints or strings (PostgreSQL `BIGINT`, `COUNT`), JSON as text or parsed.
 * A row that does not decode fails with {@link RowError}, which the stores turn into a `PersistenceError`.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

/** A row as a driver answers it. */
export type Row = Readonly<Record<string, unknown>>

/** A stored row that does not decode. */
export class RowError extends Data.TaggedError("RowError")<{ readonly message: string; readonly cause?: unknown }> {}

/** Throws the {@link RowError} of a bad column (inside {@link decodeAll}). */
export const bad = (column: string, what: string): never => {
  throw new RowError({ message: `column ${column}: ${what}` })
}

/** A number column (numbers, bigints and numeric strings). */
export const numberOf = (row: Row, column: string): number => {
  const value = row[column]
  const n = typeof value === "number"
    ? value
    : typeof value === "bigint" || (typeof value === "string" && value.trim() !== "")
    ? Number(value)
    : Number.NaN
  return Number.isFinite(n) ? n : bad(column, "not a number")
}

/** A nullable number column. */
export const numberOrNull = (row: Row, column: string): number | null =>
  row[column] === null || row[column] === undefined ? null : numberOf(row, column)

/** A text column. */
export const stringOf = (row: Row, column: string): string => {
  const value = row[column]
  return typeof value === "string" ? value : bad(column, "not a string")
}

/** A nullable text column. */
export const stringOrNull = (row: Row, column: string): string | null =>
  row[column] === null || row[column] === undefined ? null : stringOf(row, column)

/** A text column holding one of known values. */
export const oneOf = <A extends string>(row: Row, column: string, values: ReadonlyArray<A>): A => {
  const value = stringOf(row, column)
  return (values as ReadonlyArray<string>).includes(value) ? value as A : bad(column, "unknown value")
}

/** A JSON column (text, or already parsed by the driver); null when empty. */
export const jsonOrNull = (row: Row, column: string): unknown => {
  const value = row[column]
  if (value === null || value === undefined) return null
  if (typeof value !== "string") return value
  try {
    return JSON.parse(value)
  } catch {
    return bad(column, "not JSON")
  }
}

/** Whether a value is a plain object. */
export const isObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A JSON object column. */
export const jsonObject = (row: Row, column: string): Record<string, unknown> => {
  const value = jsonOrNull(row, column)
  return isObject(value) ? value : bad(column, "not a JSON object")
}

/** Decodes rows with `decode`, failing with a {@link RowError}. */
export const decodeAll = <A>(decode: (row: Row) => A) => (rows: ReadonlyArray<Row>): Effect.Effect<Array<A>, RowError> =>
  Effect.try({
    try: () => rows.map(decode),
    catch: (cause) => cause instanceof RowError ? cause : new RowError({ message: "undecodable row", cause })
  })
