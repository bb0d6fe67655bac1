/**
 * The fast path of the tasks table's row decoder (`SqlRows.withFastPath`). Task rows are decoded by every claim,
 * step batch and read of a changed task; the `TaskRow` Schema's parser cost ~50 µs a row (36 columns, renamed keys,
 * JSON columns), a tenth of the server's CPU in a task's life. This decodes a row whose columns hold what the Schema
 * takes without converting anything but numbers (numbers as PostgreSQL's text or bigints, known enum values, JSON
 * text of the expected shapes) as the Schema does, and
 * answers `undefined` for any other row, which the Schema then decodes, converts or reports as always. The result,
 * error and upstream report columns (null on most rows) go through their own Schemas. The engine's tests hold it
 * equal to the Schema's decoding.
 *
 * @internal
 */
import { Catalog, Task } from "@mediagate/contract"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { TaskRecord } from "../../TaskRecord.js"

type Row = Readonly<Record<string, unknown>>

const environments: ReadonlySet<unknown> = new Set(["live", "test"])
const endpoints: ReadonlySet<unknown> = new Set(Object.keys(Catalog.endpoints))
const providers: ReadonlySet<unknown> = new Set(Catalog.taskFamilies)
const operations: ReadonlySet<unknown> = new Set(Catalog.operations)
const mediaTypes: ReadonlySet<unknown> = new Set(Catalog.mediaTypes)
const statuses: ReadonlySet<unknown> = new Set(Task.taskStatuses)

const { numberOf } = SqlRows
/** A nullable number column's value: null, the number, or `undefined` when it holds neither. */
const numberOrNull = (u: unknown): number | null | undefined => u === null ? null : numberOf(u)
const stringOrNull = (u: unknown): u is string | null => u === null || typeof u === "string"

/** JSON text of an object (not an array) without a `__proto__` key, or `undefined`. */
const objectOf = (text: unknown): Record<string, unknown> | undefined => {
  if (typeof text !== "string") return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) && !Object.hasOwn(parsed, "__proto__")
    ? parsed as Record<string, unknown>
    : undefined
}

const metadataValue = (u: unknown) =>
  u === null || typeof u === "string" || typeof u === "number" || typeof u === "boolean"

/** A nullable JSON column decoded by its own Schema (`undefined`: not of the Schema, left to the whole row's). */
const jsonColumn = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (u: unknown): A | null | undefined => {
    if (u === null) return null
    const decoded = decode(u)
    return Either.isRight(decoded) ? decoded.right : undefined
  }
}

/** A column's reader: its decoded value, or `undefined` when the column holds what the fast path does not take. */
type Reader = (u: unknown) => unknown

const string: Reader = (u) => typeof u === "string" ? u : undefined
const nullableString: Reader = (u) => stringOrNull(u) ? u : undefined
const oneOf = (values: ReadonlySet<unknown>): Reader => (u) => values.has(u) ? u : undefined
const metadataOf: Reader = (u) => {
  const metadata = objectOf(u)
  if (metadata === undefined) return undefined
  for (const key in metadata) if (!metadataValue(metadata[key])) return undefined
  return metadata
}

/**
 * The fast path for the `TaskRow` Schema whose JSON columns `result`, `error` and `upstream_report` (each nullable)
 * are the given Schemas.
 */
export const makeTaskRowFast = <R, E, U>(columns: {
  readonly result: Schema.Schema<R, string | null>
  readonly error: Schema.Schema<E, string | null>
  readonly upstreamReport: Schema.Schema<U, string | null>
}) => {
  /** Every column of the record: its field, its column, its reader. */
  const required: ReadonlyArray<readonly [string, string, Reader]> = [
    ["id", "id", string],
    ["accountId", "account_id", string],
    ["keyId", "key_id", string],
    ["environment", "environment", oneOf(environments)],
    ["endpoint", "endpoint", oneOf(endpoints)],
    ["provider", "provider", oneOf(providers)],
    ["operation", "operation", oneOf(operations)],
    ["mediaType", "media_type", oneOf(mediaTypes)],
    ["model", "model", string],
    ["status", "status", oneOf(statuses)],
    ["input", "input", objectOf],
    ["metadata", "metadata", metadataOf],
    ["webhookUrl", "webhook_url", nullableString],
    ["originalTaskId", "original_task_id", nullableString],
    ["chargedMicros", "charged_micros", numberOf],
    ["refundedMicros", "refunded_micros", numberOf],
    ["estimatedSeconds", "estimated_seconds", numberOf],
    ["progress", "progress", numberOf],
    ["result", "result", jsonColumn(columns.result)],
    ["error", "error", jsonColumn(columns.error)],
    ["upstreamJobId", "upstream_job_id", nullableString],
    ["fence", "fence", numberOf],
    ["leaseOwner", "lease_owner", nullableString],
    ["leaseExpiresAt", "lease_expires_at", numberOrNull],
    ["nextRunAt", "next_run_at", numberOrNull],
    ["deadlineAt", "deadline_at", numberOf],
    ["polls", "polls", numberOf],
    ["createdAt", "created_at", numberOf],
    ["startedAt", "started_at", numberOrNull],
    ["completedAt", "completed_at", numberOrNull]
  ]
  /** The columns added later: a row without one decodes without the field. */
  const optional: ReadonlyArray<readonly [string, string, Reader]> = [
    ["traceContext", "trace_context", nullableString],
    ["channelId", "channel_id", nullableString],
    ["upstreamSeconds", "upstream_seconds", numberOrNull],
    ["upstreamCostMicros", "upstream_cost_micros", numberOrNull],
    ["nodeId", "node_id", nullableString],
    ["submitFence", "submit_fence", numberOrNull],
    ["upstreamReport", "upstream_report", jsonColumn(columns.upstreamReport)],
    ["changedAt", "changed_at", numberOrNull]
  ]
  return (row: unknown): TaskRecord | undefined => {
    if (typeof row !== "object" || row === null) return undefined
    const r = row as Row
    const record: Record<string, unknown> = {}
    for (const [field, column, read] of required) {
      const value = read(r[column])
      if (value === undefined) return undefined
      record[field] = value
    }
    for (const [field, column, read] of optional) {
      if (!(column in r)) continue
      const value = read(r[column])
      if (value === undefined) return undefined
      record[field] = value
    }
    return record as unknown as TaskRecord
  }
}
