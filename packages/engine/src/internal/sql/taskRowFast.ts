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

/** An optional column: absent stays absent; present, it is decoded by `value` (`undefined`: not decoded). */
const optional = (
  r: Row,
  column: string,
  into: Record<string, unknown>,
  field: string,
  value: (u: unknown) => unknown
): boolean => {
  if (!(column in r)) return true
  const decoded = value(r[column])
  if (decoded === undefined) return false
  into[field] = decoded
  return true
}

const nullableString = (u: unknown) => stringOrNull(u) ? u : undefined

/**
 * The fast path for the `TaskRow` Schema whose JSON columns `result`, `error` and `upstream_report` (each nullable)
 * are the given Schemas.
 */
export const makeTaskRowFast = <R, E, U>(columns: {
  readonly result: Schema.Schema<R, string | null>
  readonly error: Schema.Schema<E, string | null>
  readonly upstreamReport: Schema.Schema<U, string | null>
}) => {
  const result = jsonColumn(columns.result)
  const error = jsonColumn(columns.error)
  const report = jsonColumn(columns.upstreamReport)
  return (row: unknown): TaskRecord | undefined => {
    if (typeof row !== "object" || row === null) return undefined
    const r = row as Row
    const { endpoint, environment, id, model, operation, provider, status } = r
    const accountId = r["account_id"]
    const keyId = r["key_id"]
    const mediaType = r["media_type"]
    if (
      typeof id !== "string" || typeof accountId !== "string" || typeof keyId !== "string" ||
      typeof model !== "string" || !environments.has(environment) || !endpoints.has(endpoint) ||
      !providers.has(provider) || !operations.has(operation) || !mediaTypes.has(mediaType) || !statuses.has(status)
    ) return undefined
    const webhookUrl = r["webhook_url"]
    const originalTaskId = r["original_task_id"]
    const upstreamJobId = r["upstream_job_id"]
    const leaseOwner = r["lease_owner"]
    if (
      !stringOrNull(webhookUrl) || !stringOrNull(originalTaskId) || !stringOrNull(upstreamJobId) ||
      !stringOrNull(leaseOwner)
    ) return undefined
    const chargedMicros = numberOf(r["charged_micros"])
    const refundedMicros = numberOf(r["refunded_micros"])
    const estimatedSeconds = numberOf(r["estimated_seconds"])
    const progress = numberOf(r["progress"])
    const fence = numberOf(r["fence"])
    const polls = numberOf(r["polls"])
    const deadlineAt = numberOf(r["deadline_at"])
    const createdAt = numberOf(r["created_at"])
    const leaseExpiresAt = numberOrNull(r["lease_expires_at"])
    const nextRunAt = numberOrNull(r["next_run_at"])
    const startedAt = numberOrNull(r["started_at"])
    const completedAt = numberOrNull(r["completed_at"])
    if (
      chargedMicros === undefined || refundedMicros === undefined || estimatedSeconds === undefined ||
      progress === undefined || fence === undefined || polls === undefined || deadlineAt === undefined ||
      createdAt === undefined || leaseExpiresAt === undefined || nextRunAt === undefined || startedAt === undefined ||
      completedAt === undefined
    ) return undefined
    const input = objectOf(r["input"])
    const metadata = objectOf(r["metadata"])
    if (input === undefined || metadata === undefined) return undefined
    for (const key in metadata) if (!metadataValue(metadata[key])) return undefined
    const decodedResult = result(r["result"])
    const decodedError = error(r["error"])
    if (decodedResult === undefined || decodedError === undefined) return undefined
    const record: Record<string, unknown> = {
      id,
      accountId,
      keyId,
      environment,
      endpoint,
      provider,
      operation,
      mediaType,
      model,
      status,
      input,
      metadata,
      webhookUrl,
      originalTaskId,
      chargedMicros,
      refundedMicros,
      estimatedSeconds,
      progress,
      result: decodedResult,
      error: decodedError,
      upstreamJobId,
      fence,
      leaseOwner,
      leaseExpiresAt,
      nextRunAt,
      deadlineAt,
      polls,
      createdAt,
      startedAt,
      completedAt
    }
    const complete = optional(r, "trace_context", record, "traceContext", nullableString) &&
      optional(r, "channel_id", record, "channelId", nullableString) &&
      optional(r, "upstream_seconds", record, "upstreamSeconds", numberOrNull) &&
      optional(r, "upstream_cost_micros", record, "upstreamCostMicros", numberOrNull) &&
      optional(r, "node_id", record, "nodeId", nullableString) &&
      optional(r, "submit_fence", record, "submitFence", numberOrNull) &&
      optional(r, "upstream_report", record, "upstreamReport", report)
    return complete ? record as unknown as TaskRecord : undefined
  }
}
