/**
 * The SQL task storage's rows (decoded with Schema), the shapes of its batches and its shared constants.
 */
import { Catalog, Errors, Task, Tracing, Webhook } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import type * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import type * as WriteConnection from "@mediagate/persistence/WriteConnection"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Hash from "effect/Hash"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Record from "effect/Record"
import * as Schema from "effect/Schema"
import { type Charge } from "../../Billing.js"
import type { StepUpdate } from "../../TaskLifecycle.js"
import type { OutboxEntry } from "../../TaskOutbox.js"
import type { ListQuery } from "../../TaskReads.js"
import { type Outcome, type TaskRecord, timedEvent } from "../../TaskRecord.js"
import { storeName, tables } from "./schema.js"
import { makeTaskRowFast } from "./taskRowFast.js"

// -----------------------------------------------------------------------------------------------------------------
// rows
// -----------------------------------------------------------------------------------------------------------------

export const { column } = SqlRows
export const json = (value: unknown): string => JSON.stringify(value)
export const { hasNul } = SqlStore
export const nullable = <A, I>(schema: Schema.Schema<A, I>) => Schema.NullOr(schema)

/** The upstream's last report on a task (`upstream_report`): its place in the upstream's queue, its log lines. */
const UpstreamReportColumn = nullable(Schema.parseJson(Schema.Struct({
  position: Schema.optional(Schema.Number),
  logs: Schema.optional(Schema.Array(Schema.String))
})))

/** A row of `<prefix>tasks`: a {@link TaskRecord}; enum columns follow the contract's lists. */
export const TaskRow = Schema.Struct({
  id: Schema.String,
  accountId: column("account_id", Schema.String),
  keyId: column("key_id", Schema.String),
  environment: SqlRows.literal("live", "test"),
  endpoint: SqlRows.literal(...Record.keys(Catalog.endpoints)),
  provider: SqlRows.literal(...Catalog.taskFamilies),
  operation: SqlRows.literal(...Catalog.operations),
  mediaType: column("media_type", SqlRows.literal(...Catalog.mediaTypes)),
  model: Schema.String,
  status: SqlRows.literal(...Task.taskStatuses),
  input: Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  metadata: Schema.parseJson(Schema.Record({
    key: Schema.String,
    value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean, Schema.Null)
  })),
  webhookUrl: column("webhook_url", nullable(Schema.String)),
  originalTaskId: column("original_task_id", nullable(Schema.String)),
  chargedMicros: column("charged_micros", SqlRows.Number),
  refundedMicros: column("refunded_micros", SqlRows.Number),
  estimatedSeconds: column("estimated_seconds", SqlRows.Number),
  progress: SqlRows.Number,
  result: nullable(Schema.parseJson(Schema.Array(Task.ResultItem))),
  error: nullable(Schema.parseJson(Task.TaskError)),
  upstreamJobId: column("upstream_job_id", nullable(Schema.String)),
  fence: SqlRows.Number,
  leaseOwner: column("lease_owner", nullable(Schema.String)),
  leaseExpiresAt: column("lease_expires_at", nullable(SqlRows.Number)),
  nextRunAt: column("next_run_at", nullable(SqlRows.Number)),
  deadlineAt: column("deadline_at", SqlRows.Number),
  polls: SqlRows.Number,
  createdAt: column("created_at", SqlRows.Number),
  startedAt: column("started_at", nullable(SqlRows.Number)),
  completedAt: column("completed_at", nullable(SqlRows.Number)),
  traceContext: Schema.optional(nullable(Schema.String)).pipe(Schema.fromKey("trace_context")),
  channelId: Schema.optional(nullable(Schema.String)).pipe(Schema.fromKey("channel_id")),
  upstreamSeconds: Schema.optional(nullable(SqlRows.Number)).pipe(Schema.fromKey("upstream_seconds")),
  upstreamCostMicros: Schema.optional(nullable(SqlRows.Number)).pipe(Schema.fromKey("upstream_cost_micros")),
  nodeId: Schema.optional(nullable(Schema.String)).pipe(Schema.fromKey("node_id")),
  submitFence: Schema.optional(nullable(SqlRows.Number)).pipe(Schema.fromKey("submit_fence")),
  upstreamReport: Schema.optional(UpstreamReportColumn).pipe(Schema.fromKey("upstream_report")),
  changedAt: Schema.optional(nullable(SqlRows.Number)).pipe(Schema.fromKey("changed_at"))
})

/** The decoder of task rows: the {@link TaskRow} Schema, with its fast path for rows of the decoded types. */
export const taskRowFast = makeTaskRowFast({
  result: TaskRow.fields.result,
  error: TaskRow.fields.error,
  upstreamReport: UpstreamReportColumn
})

/** The columns of a task's row, in the order {@link taskRowOf} writes them. */
export const taskColumns = [
  "id",
  "account_id",
  "key_id",
  "environment",
  "endpoint",
  "provider",
  "operation",
  "media_type",
  "model",
  "status",
  "input",
  "metadata",
  "webhook_url",
  "original_task_id",
  "charged_micros",
  "refunded_micros",
  "estimated_seconds",
  "progress",
  "result",
  "error",
  "upstream_job_id",
  "fence",
  "lease_owner",
  "lease_expires_at",
  "next_run_at",
  "deadline_at",
  "polls",
  "created_at",
  "started_at",
  "completed_at",
  "trace_context",
  "channel_id",
  "node_id",
  "changed_at"
] as const

export const encodeResult = Schema.encodeEither(TaskRow.fields.result)
export const encodeError = Schema.encodeEither(TaskRow.fields.error)
export const noJson: Either.Either<string | null, ParseResult.ParseError> = Either.right(null)

/** A row of the tasks table, by column. */
export type TaskRow = { readonly [K in (typeof taskColumns)[number]]: string | number | null }

/**
 * A record as the row {@link TaskRow} encodes it, written out: a task's insert is on the path of every generation
 * request, where the Schema's encoder made a fifth of a request's allocations. The columns of the record's type
 * are copied, `input` and `metadata` (plain JSON values by their types) stringified, the result and the error
 * encoded by their Schemas; a record without a trace context or channel writes null, as those columns' default.
 * The engine's tests hold it equal to the Schema's encoding.
 */
export const taskRowOf = (
  record: TaskRecord
): Either.Either<TaskRow, ParseResult.ParseError> => {
  const result = record.result === null ? noJson : encodeResult(record.result)
  if (Either.isLeft(result)) return Either.left(result.left)
  const error = record.error === null ? noJson : encodeError(record.error)
  if (Either.isLeft(error)) return Either.left(error.left)
  return Either.right({
    id: record.id,
    account_id: record.accountId,
    key_id: record.keyId,
    environment: record.environment,
    endpoint: record.endpoint,
    provider: record.provider,
    operation: record.operation,
    media_type: record.mediaType,
    model: record.model,
    status: record.status,
    input: json(record.input),
    metadata: json(record.metadata),
    webhook_url: record.webhookUrl,
    original_task_id: record.originalTaskId,
    charged_micros: record.chargedMicros,
    refunded_micros: record.refundedMicros,
    estimated_seconds: record.estimatedSeconds,
    progress: record.progress,
    result: result.right,
    error: error.right,
    upstream_job_id: record.upstreamJobId,
    fence: record.fence,
    lease_owner: record.leaseOwner,
    lease_expires_at: record.leaseExpiresAt,
    next_run_at: record.nextRunAt,
    deadline_at: record.deadlineAt,
    polls: record.polls,
    created_at: record.createdAt,
    started_at: record.startedAt,
    completed_at: record.completedAt,
    trace_context: record.traceContext ?? null,
    channel_id: record.channelId ?? null,
    node_id: record.nodeId ?? null,
    changed_at: record.changedAt ?? record.createdAt
  })
}

/** An outbox row's event as stored: `created_at` may be `null` (an `UntimedEvent`). */
export const StoredEvent = Schema.Struct({
  ...Webhook.WebhookEvent.fields,
  created_at: Schema.NullOr(Webhook.WebhookEvent.fields.created_at)
})

/**
 * A row of `<prefix>task_outbox`: an outbox entry (on PostgreSQL with its `txid`). Its event is kept as the stored
 * JSON: a read decodes only its id and type ({@link outboxEntry}), the rest when a fan-out delivers it.
 */
export const OutboxRow = Schema.Struct({
  seq: SqlRows.Number,
  accountId: column("account_id", Schema.String),
  taskId: column("task_id", Schema.String),
  webhookUrl: column("webhook_url", nullable(Schema.String)),
  /** The event's JSON; without its time when the write did not know it yet (`UntimedEvent`): the row's `created_at`. */
  event: Schema.String,
  createdAt: column("created_at", SqlRows.Number),
  txid: Schema.optional(SqlRows.Number),
  /** The environment of the entry's task (read with the entry). */
  environment: SqlRows.literal("live", "test")
})

/** What a read decodes of an outbox row's event at once. */
const OutboxEventHead = Schema.Struct({
  event: Schema.parseJson(Schema.Struct({ id: Schema.String, type: Webhook.EventType }))
})
/** An outbox row's event in full. */
const OutboxEvent = Schema.Struct({ event: Schema.parseJson(StoredEvent) })

/**
 * The outbox entry of a row of `table`: its event's id and type decoded, the event itself decoded (and timed by the
 * row, {@link timedEvent}) when the entry's `event` is run: a fan-out runs it only for an entry that has a receiver.
 */
export const outboxEntry = (table: string) => {
  const head = Schema.decodeUnknownEither(OutboxEventHead)
  const full = Schema.decodeUnknownEither(OutboxEvent)
  const failed = (error: ParseResult.ParseError) => SqlRows.rowError(table, error)
  const asRead = persistence("readOutbox")
  // one effect a row; the decode and its error's wrapping are built only when it runs
  const event = (row: typeof OutboxRow.Type) =>
    Effect.suspend(() =>
      asRead(Either.map(Either.mapLeft(full(row), failed), (decoded) => timedEvent(decoded.event, row.createdAt)))
    )
  return (row: typeof OutboxRow.Type): Either.Either<OutboxEntry, SqlRows.RowError> =>
    Either.map(Either.mapLeft(head(row), failed), (decoded): OutboxEntry => ({
      seq: row.seq,
      accountId: row.accountId,
      taskId: row.taskId,
      environment: row.environment,
      webhookUrl: row.webhookUrl,
      eventId: decoded.event.id,
      eventType: decoded.event.type,
      event: event(row)
    }))
}

/** A row of `<prefix>nodes`: a registered node. */
export const NodeRow = Schema.Struct({
  id: Schema.String,
  host: Schema.String,
  pid: SqlRows.Number,
  concurrency: SqlRows.Number,
  heartbeatMs: column("heartbeat_ms", SqlRows.Number),
  leases: SqlRows.Number,
  startedAt: column("started_at", SqlRows.Number),
  lastSeenAt: column("last_seen_at", SqlRows.Number),
  // the ids, space-separated (ids hold no spaces)
  apartFrom: column(
    "apart_from",
    Schema.transform(Schema.NullOr(Schema.String), Schema.Array(Schema.String), {
      strict: true,
      decode: (text) => text === null || text === "" ? [] : text.split(" "),
      encode: (ids) => ids.length === 0 ? null : ids.join(" ")
    })
  )
})

/** The decoders of the storage's rows (whole rows, and the columns some statements read), under `prefix`. */
export const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    task: SqlRows.withFastPath(SqlRows.decoder(names.tasks, TaskRow), taskRowFast),
    owner: SqlRows.decoder(names.tasks, TaskRow.pick("accountId", "keyId", "environment")),
    status: SqlRows.decoder(names.tasks, TaskRow.pick("status")),
    noted: SqlRows.decoder(names.tasks, TaskRow.pick("id", "model", "upstreamJobId")),
    count: SqlRows.decoder(names.tasks, Schema.Struct({ n: SqlRows.Number })),
    changeKey: SqlRows.decoder(
      names.tasks,
      Schema.Struct({ changedAt: column("changed_at", SqlRows.Number), id: Schema.String })
    ),
    channelLoad: SqlRows.decoder(
      names.tasks,
      Schema.Struct({ channelId: column("channel_id", Schema.String), n: SqlRows.Number })
    ),
    channelUsage: SqlRows.decoder(
      names.tasks,
      Schema.Struct({
        channelId: column("channel_id", Schema.String),
        model: Schema.String,
        tasks: SqlRows.Number,
        succeeded: SqlRows.Number,
        failed: SqlRows.Number,
        chargedMicros: column("charged_micros", SqlRows.Number),
        upstreamSeconds: column("upstream_seconds", SqlRows.Number),
        upstreamCostMicros: column("upstream_cost_micros", SqlRows.Number),
        reported: SqlRows.Number
      })
    ),
    counted: SqlRows.decoder(names.counts, Schema.Struct({ n: SqlRows.Number })),
    byStatus: SqlRows.decoder(names.counts, Schema.Struct({ value: Schema.String, n: SqlRows.Number })),
    node: SqlRows.decoder(names.nodes, NodeRow),
    due: SqlRows.decoder(
      names.tasks,
      Schema.Struct({ unleased: nullable(SqlRows.Number), leased: nullable(SqlRows.Number) })
    ),
    outbox: SqlRows.decoder(names.outbox, OutboxRow),
    outboxEntry: outboxEntry(names.outbox),
    horizon: SqlRows.decoder(
      "pg_stat_activity",
      Schema.Struct({
        horizon: SqlRows.Number,
        heldBack: column("held", Schema.Boolean)
      })
    ),
    idempotency: SqlRows.decoder(
      names.idempotency,
      Schema.Struct({
        fingerprint: Schema.String,
        taskId: column("task_id", Schema.String),
        createdAt: column("created_at", SqlRows.Number)
      })
    )
  }
}

/** An idempotency key claimed by a concurrent accept after we looked it up: the accept is tried again. */
export class IdempotencyRace extends Schema.TaggedError<IdempotencyRace>()("IdempotencyRace", {}) {}

/** Times are stored as integer milliseconds. */
export const ms = (value: number): number => Math.floor(value)

/** A dimension of `<prefix>task_counts` and its value. */
export interface Counted {
  readonly dim: "all" | "status" | "provider" | "model"
  readonly value: string
}

/**
 * Where a list's total is read from the counts (`<prefix>task_counts`): no filter, or exactly one of status,
 * provider and model (the cursor never changes the total). Other combinations (two or three of those, a date range,
 * an id prefix) answer none: their total counts the matching rows.
 */
export const countedBy = (query: ListQuery): Counted | undefined => {
  if (query.createdAfter !== undefined || query.createdBefore !== undefined) return undefined
  if (query.idPrefix !== undefined && query.idPrefix !== "") return undefined
  const filters: Array<Counted> = []
  if (query.status !== undefined) filters.push({ dim: "status", value: query.status })
  if (query.provider !== undefined) filters.push({ dim: "provider", value: query.provider })
  if (query.model !== undefined) filters.push({ dim: "model", value: query.model })
  return filters.length > 1 ? undefined : filters[0] ?? { dim: "all", value: "" }
}

/** The smallest string above every string starting with `prefix` (for an index range scan), if any. */
export const prefixEnd = (prefix: string): string | undefined => {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const code = prefix.charCodeAt(i)
    if (code < 0xffff) return prefix.slice(0, i) + String.fromCharCode(code + 1)
  }
  return undefined
}

// -----------------------------------------------------------------------------------------------------------------
// the storage
// -----------------------------------------------------------------------------------------------------------------

/** A finish waiting in its batch. */
export interface Finishing {
  readonly id: string
  readonly fence: number
  readonly outcome: Outcome
  readonly upstreamJobId: string | undefined
  readonly channelId: string | undefined
  /** The task as its worker claimed it (`FinishOptions.task`). */
  readonly task: TaskRecord | undefined
}

/** A charged accept waiting in its batch. */
export interface Charged {
  readonly record: TaskRecord
  readonly charge: Charge
}

/** A step waiting in its batch. */
export interface Stepping {
  readonly id: string
  readonly fence: number
  readonly update: StepUpdate
}

/**
 * The shared advisory lock every transaction writing the outbox takes on PostgreSQL as its first statement, before
 * it has a transaction id (`pg_advisory_xact_lock_shared(key1, key2)`, listed in `pg_locks` with `classid` key1,
 * `objid` key2, `objsubid` 2; released at commit, after the commit is visible). Shared: writers never wait for each
 * other; nobody takes it exclusively. Per table prefix, so that storages sharing a database do not hold each other
 * back.
 */
export const outboxLockKeys = (
  prefix: string
): readonly [number, number] => [0x6d676f62, Ids.hash32(`${prefix}task_outbox`) & 0x7fffffff]

/**
 * The outbox readers' horizon on PostgreSQL (a 64-bit transaction id): the snapshot's `xmax` (one past the last
 * completed transaction id), or the oldest transaction id of the sessions holding the outbox lock
 * ({@link outboxLockKeys}) in this database when it is lower. Every transaction below `xmax` has ended, except those
 * running when the statement began; a writer among them took the lock before it got its id, so it still holds the
 * lock when the statement reads `pg_locks` (or has ended since) and is seen. So every outbox row below the horizon is
 * committed (or rolled back) when the horizon is read. A writer seen with an id at or above `xmax` may have got it
 * after another writer the statement missed (the two views are read one after the other, not at one instant):
 * `xmax` bounds the horizon. Read in a statement before the outbox rows, whose snapshot then sees those commits. `pg_locks` and
 * `pg_stat_activity` show them to any role. Prepared (two-phase) transactions are not listed: Mediagate does not use
 * them. A holder's id is 32 bits: it is widened to the 64-bit id nearest `xmax` (ids in use are within 2^31 of each
 * other).
 */
export const outboxHorizon = (prefix: string) => {
  const [key1, key2] = outboxLockKeys(prefix)
  return `WITH s AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next)
  SELECT LEAST(MIN(s.next + (((a.xid - (s.next & 4294967295) + 2147483648) & 4294967295) - 2147483648)),
    MIN(s.next)) AS horizon
  FROM s LEFT JOIN (
    SELECT act.backend_xid::text::bigint AS xid FROM pg_locks l JOIN pg_stat_activity act ON act.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.classid = ${key1} AND l.objid = ${key2} AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND act.backend_xid IS NOT NULL
  ) a ON true`
}

/** The error of an expired task. */
export const expiredError = json({ code: "TASK_EXPIRED", message: "task did not finish before its deadline" })

/** How many tasks' last read rows are remembered with their decoded records (see `SqlRows.remembering`). */
export const rememberedTasks = 1024

/** The most calls committed together. */
export const maxBatch = 256

/**
 * Batches of charged accepts that may run at once on PostgreSQL, each on a connection of the pool (an accept is a
 * few round trips, which one connection would serialize); SQLite has one connection, so one. An account's accepts
 * always join the same batcher ({@link accountPartition}): two batches running at once never lock the same account
 * row, so neither waits for the other's commit, and one account's burst makes one batch as large as what waits
 * instead of several that queue on its row one after another.
 */
export const chargedBatchers = 4

/**
 * Batches of finishes that may run at once on PostgreSQL, each on a connection of the pool: a finish holds its
 * worker's slot until it commits (a round trip for the worker's succeeded finishes, four in a transaction for the
 * others), so a finish that arrives while one batch is under way starts the next at once instead of waiting for it.
 * Two batches never wait for each other: their tasks are different rows (the fence), the outbox lock is shared and
 * each connection writes its own count shard.
 */
export const finishBatchers = 2

/**
 * Reads of a task by id that may run at once on PostgreSQL (`GET /api/v1/tasks/{id}`): the reads asked for while
 * these are under way go together in the next one, a statement for many `GET`s (a statement costs the process and
 * the database more than the rows it answers). One alone goes at once.
 */
export const readBatchers = 4

/** The batcher of an account's charged accepts (a hash of its id). */
export const accountPartition = (accountId: string): number => Hash.string(accountId)

/** The spans of the batched operations on the caller's side (the batch's statements run on the storage's fiber). */
export const acceptSpan = Tracing.span(`${storeName}.accept`)
export const stepSpan = Tracing.span(`${storeName}.step`)
export const finishSpan = Tracing.span(`${storeName}.finish`)

/** Options of the SQL storage: the table prefix and where "now" comes from (default: the database clock). */
export interface SqlOptions extends SqlStore.PrefixOptions, SqlStore.TimeOptions {
  /**
   * The database's read connection (`@mediagate/persistence/ReadConnection`: a second, read-only connection to a
   * SQLite file, or the `pg` pool) for the read of one task by id (`get`, `getById`: every
   * `GET /api/v1/tasks/{id}`), instead of the `SqlClient`.
   */
  readonly reader?: ReadConnection.Reader | undefined
  /**
   * The database's write connection (`@mediagate/persistence/WriteConnection`: a second connection to a SQLite
   * file) for the batches of charged accepts (every charged `POST` without an `Idempotency-Key`): each batch one
   * synchronous transaction, when billing gives its charge's statements (`Billing.chargeStatements`).
   */
  readonly writer?: WriteConnection.Writer | undefined
  /**
   * SQLite: whether other threads of this process run workers or a dispatcher on the same file (the production
   * server's worker thread): its wakeups then reach them on `BroadcastChannel`s (`@mediagate/persistence/Listen`).
   * Default false: a SQLite file has one process and one thread running workers.
   */
  readonly threads?: boolean | undefined
}

/** Whether an accept's exit is final: a success, or a refusal of its charge (a storage failure is not). */
export const isRefusedOrDone = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isSuccess(exit) || Option.exists(
    Cause.failureOption(exit.cause),
    (e) => e instanceof Errors.InsufficientBalance || e instanceof Errors.SpendLimitExceeded
  )

export const isIdempotencyRace = (u: unknown): u is IdempotencyRace => u instanceof IdempotencyRace

/** Storage failures (and a lost idempotency race) become `PersistenceError`. */
export const persistence = SqlStore.persistence(storeName, isIdempotencyRace)
