/**
 * Small helpers of the SQL stores: row decoding by column name and the mapping of storage failures to
 * `PersistenceError` (also a failed COMMIT/ROLLBACK, which `@effect/sql` raises as a defect).
 */
import { bad, type Row } from "@mediagate/engine/SqlRows"
import { persistence as persistenceOf } from "@mediagate/engine/SqlStore"

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

/** Storage failures become `PersistenceError`. */
export const persistence = persistenceOf("accounts storage")
