/**
 * Task storage on SQL: SQLite and PostgreSQL (any `SqlClient` of those dialects), with the semantics of the memory
 * storage (`TaskStorage.makeMemory`) and the same conformance suite.
 *
 * - Tables (named with the store's prefix, default `mediagate_`; see {@link tables}): `<prefix>tasks` (every field
 *   of {@link TaskRecord}; times are epoch ms in BIGINT/INTEGER, money is integer micro-dollars, JSON fields are TEXT
 *   on both databases so they round-trip byte for byte), `<prefix>task_idempotency` and `<prefix>task_outbox`,
 *   created by {@link migrations} in their own migrations table ({@link migrationsTable}). Rows are decoded with
 *   Schema ({@link TaskRow}, {@link OutboxRow}): a corrupt row fails with a `PersistenceError` naming its table
 *   and column.
 * - Clock: by default "now" is the database clock, computed once per statement inside the statement (a `clock`
 *   CTE); with `time: "clock"` (tests, under `TestClock`) it is Effect's `Clock`, passed as a parameter instead.
 * - Claims: one `UPDATE ... WHERE id IN (SELECT ... ORDER BY next_run_at, id LIMIT n [FOR UPDATE SKIP LOCKED])
 *   RETURNING *`, served by a partial index on `next_run_at` over the active statuses.
 * - Terminal transitions (finish, cancel): the compare-and-set update, the refund through {@link Billing} and the
 *   outbox event in one transaction. Terminal transitions run in parallel: on PostgreSQL each outbox row records
 *   its inserting transaction (`txid`), and readers walk `(txid, seq)` only up to the oldest transaction running in
 *   this database that may write the outbox ({@link outboxHorizon}: those holding the shared outbox lock), so an
 *   entry that commits late can never fall behind a reader's cursor, and busy transactions that never write the
 *   outbox (accepts waiting on an account's balance row) never hold the readers back (no global lock on the hot
 *   path: the lock is shared, only its holders are listed).
 * - Idempotency: the shared window and rule of `IdempotencyWindow`, in `<prefix>task_idempotency`.
 * - List totals: exact, from `<prefix>task_counts` (per account: all tasks, per status, provider and model; kept by
 *   triggers on the tasks table, see {@link migrations}) for no filter or one of status, provider and model; by
 *   `COUNT(*)` of the matching rows for any other combination.
 * - Group commit: accepts without a charge or an idempotency key (one multi-row `INSERT`), charged accepts without
 *   an idempotency key (one transaction, a savepoint each, accounts taken in account order; on PostgreSQL up to
 *   {@link chargedBatchers} such batches at once, an account's accepts always in the same one), steps without extra
 *   charges (one `UPDATE ... FROM (VALUES ...)`) and finishes (one transaction: the batch's update, refunds and
 *   events; finishes that may owe a refund join only with unmetered billing; on PostgreSQL up to {@link finishBatchers}
 *   batches at once, a worker's succeeded finishes one statement with their events) made while a write of their kind
 *   is under way are written together by one fiber of the storage's scope; each call is answered on its own, and a
 *   failed batch is written again call by call. Never call `step` or `finish` inside a transaction of your own.
 * - Wakeups: an in-process PubSub (published after commits), merged on PostgreSQL with `LISTEN <prefix>tasks`
 *   ({@link wakeupChannel}); `accept`, `markDue` and `releaseAll` send `pg_notify` inside their write. The
 *   listening client is the `SqlClient` itself when it can LISTEN (the PostgreSQL driver's client is one object
 *   under both tags, `SqlClient` and `PgClient`), so the driver package stays optional for SQLite-only hosts. A
 *   probe every 2 s finds a lost LISTEN connection (restart, killed backend) and listens again (`@mediagate/persistence/Listen`).
 *
 * Every storage failure (`SqlError`, an undecodable row) surfaces as {@link PersistenceError}; so does an invalid
 * `prefix` (see `SqlStore`), when the storage is built.
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Catalog, Errors, Task, Tracing, Webhook } from "@mediagate/contract"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import type * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as SqlProgram from "@mediagate/persistence/SqlProgram"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import type * as WriteConnection from "@mediagate/persistence/WriteConnection"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Hash from "effect/Hash"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as PubSub from "effect/PubSub"
import * as Record from "effect/Record"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Billing, type Charge, type ChargeOutcome, isCharged } from "./Billing.js"
import { markedAt, markerPattern } from "./Upstream.js"
import * as GroupCommit from "@mediagate/persistence/GroupCommit"
import * as Listen from "@mediagate/persistence/Listen"
import {
  fromNew,
  type Outcome,
  refundFor,
  statusOfOutcome,
  type TaskRecord,
  timedEvent,
  toEvent,
  toUntimedEvent,
  usageColumns
} from "./TaskRecord.js"
import {
  type CancelResult,
  extraCharges,
  type ListPage,
  type ListQuery,
  ownedBy,
  type OutboxEntry,
  resultSize,
  type StepUpdate,
  layerPorts,
  type Ports,
  TaskStorage
} from "./TaskStorage.js"

/** The tables of the storage under `prefix`. */
export const tables = (prefix: string = SqlStore.defaultPrefix) => ({
  tasks: `${prefix}tasks`,
  idempotency: `${prefix}task_idempotency`,
  outbox: `${prefix}task_outbox`,
  counts: `${prefix}task_counts`,
  nodes: `${prefix}nodes`
}) as const

/** The table the engine's migrations are recorded in: `<prefix>engine_migrations`. */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}engine_migrations`

/** The PostgreSQL `NOTIFY` channel of wakeups: `<prefix>tasks`. */
export const wakeupChannel = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}tasks`

/** The PostgreSQL `NOTIFY` channel of outbox writes (terminal transitions, for the webhook dispatcher): `<prefix>outbox`. */
export const outboxChannel = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}outbox`

const storeName = "task storage"

/** The SQL list of the active statuses; one string so that queries match the partial index predicate exactly. */
const activeList = "('pending', 'queued', 'running')"
/** The terminal statuses, as an SQL list. */
const terminalList = "('succeeded', 'failed', 'cancelled', 'expired')"

// -----------------------------------------------------------------------------------------------------------------
// migrations
// -----------------------------------------------------------------------------------------------------------------

const createTables = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, id: idType, pg, real } = SqlStore.columns(sql)
    const t = tables(prefix)
    const statuses = Task.taskStatuses.map((s) => `'${s}'`).join(", ")
    yield* sql.unsafe(`CREATE TABLE ${t.tasks} (
  id ${idType} PRIMARY KEY NOT NULL,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
  endpoint TEXT NOT NULL,
  provider TEXT NOT NULL,
  operation TEXT NOT NULL,
  media_type TEXT NOT NULL,
  model TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN (${statuses})),
  input TEXT NOT NULL,
  metadata TEXT NOT NULL,
  webhook_url TEXT,
  original_task_id TEXT,
  charged_micros ${big} NOT NULL,
  refunded_micros ${big} NOT NULL,
  estimated_seconds ${real} NOT NULL,
  progress ${real} NOT NULL,
  result TEXT,
  error TEXT,
  upstream_job_id TEXT,
  fence ${big} NOT NULL,
  lease_owner TEXT,
  lease_expires_at ${big},
  next_run_at ${big},
  deadline_at ${big} NOT NULL,
  polls INTEGER NOT NULL,
  created_at ${big} NOT NULL,
  started_at ${big},
  completed_at ${big}
)`)
    // the newest-first list of an account, plain and per filter (ids are time-sortable: id order is creation order)
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_account_idx ON ${t.tasks} (account_id, id DESC)`)
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_account_status_idx ON ${t.tasks} (account_id, status, id DESC)`)
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_account_provider_idx ON ${t.tasks} (account_id, provider, id DESC)`)
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_account_model_idx ON ${t.tasks} (account_id, model, id DESC)`)
    // the claim path and nextDueAt: active tasks by due time
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_due_idx ON ${t.tasks} (next_run_at, id) WHERE status IN ${activeList}`)
    // heartbeat, releaseAll and the leased half of nextDueAt
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_lease_idx ON ${t.tasks} (lease_owner) WHERE lease_owner IS NOT NULL`)
    yield* sql.unsafe(`CREATE TABLE ${t.idempotency} (
  account_id TEXT NOT NULL,
  "key" TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  task_id TEXT NOT NULL,
  created_at ${big} NOT NULL,
  PRIMARY KEY (account_id, "key")
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.outbox} (
  seq ${pg ? "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"},
  account_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  webhook_url TEXT,
  event TEXT NOT NULL,
  created_at ${big} NOT NULL
)`)
  })

/**
 * The key columns of a count row: the account, and since migration `0009` its environment (`prefix` qualifies
 * them, e.g. `r.` or `NEW.`).
 */
const countKey = (environments: boolean, prefix = "") =>
  environments ? `${prefix}account_id, ${prefix}environment` : `${prefix}account_id`

/** PostgreSQL: the count rows of one account, dimension and value are spread over this many shards. */
const countShards = 8

/** The (dimension, value) pairs a task row `r` counts in (a `VALUES` list; `status` is signed, see below). */
const countDimensions = (r: string) =>
  `VALUES ('all', ''), ('provider', ${r}.provider), ('model', ${r}.model), ('status', ${r}.status)`

/**
 * PostgreSQL: a trigger function adding the net count change of one statement, given as `deltas` (rows
 * `account_id, dim, value, n` with a signed `n`; dimension `status` signed), to the counts. The change is summed per
 * (account, dimension, value) first, so a statement writes each count row at most once, and the rows are written
 * in one order (account, dimension, value): concurrent statements take their count rows' locks in that order and
 * cannot deadlock on them. A status that gains tasks counts in `status_in`, one that loses tasks in `status_out`:
 * accepts (`status_in` of pending) and transitions (`status_out` of the status left) never write the same row.
 */
const pgCountFunction = (name: string, counts: string, deltas: string, environments: boolean) =>
  `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${counts} AS c (${countKey(environments)}, dim, value, shard, n)
  SELECT ${countKey(environments)},
    CASE WHEN dim <> 'status' THEN dim WHEN n > 0 THEN 'status_in' ELSE 'status_out' END, value,
    pg_backend_pid() % ${countShards}, CASE WHEN dim = 'status' THEN abs(n) ELSE n END
  FROM (SELECT ${countKey(environments)}, dim, value, sum(n) AS n FROM (${deltas}) AS delta
    GROUP BY ${countKey(environments)}, dim, value) AS net
  WHERE n <> 0
  ORDER BY ${environments ? "1, 2, 3, 4" : "1, 2, 3"}
  ON CONFLICT (${countKey(environments)}, dim, value, shard) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END
$$`

/** PostgreSQL: the signed count deltas of the rows of a transition table. */
const pgDeltas = (rows: string, sign: 1 | -1, environments: boolean) =>
  `SELECT ${countKey(environments, "r.")}, d.dim, d.value, ${sign} AS n FROM ${rows} AS r
    CROSS JOIN LATERAL (${countDimensions("r")}) AS d (dim, value)`

/** SQLite: one upsert of count rows (`(account_id, dim, value, shard, n)` tuples) in a trigger. */
const sqliteCountUpsert = (counts: string, tuples: ReadonlyArray<string>, environments: boolean) =>
  `INSERT INTO ${counts} (${countKey(environments)}, dim, value, shard, n) VALUES ${tuples.join(", ")}
    ON CONFLICT (${countKey(environments)}, dim, value, shard) DO UPDATE SET n = n + excluded.n;`

/** SQLite: the count tuples a task row adds (`NEW`) or takes away (`OLD`). */
const sqliteCountTuples = (row: "NEW" | "OLD", environments: boolean) => {
  const sign = row === "NEW" ? 1 : -1
  const key = countKey(environments, `${row}.`)
  return [
    `(${key}, 'all', '', 0, ${sign})`,
    `(${key}, 'model', ${row}.model, 0, ${sign})`,
    `(${key}, 'provider', ${row}.provider, 0, ${sign})`,
    `(${key}, '${row === "NEW" ? "status_in" : "status_out"}', ${row}.status, 0, 1)`
  ]
}

/**
 * `<prefix>task_counts`: the number of tasks of every account in total (`all`), per provider, per model and per
 * status, kept exact by triggers on the tasks table in the writing transaction itself, whatever writes it (every
 * storage path, an operator's SQL). A status's count is its `status_in` minus its `status_out`. On PostgreSQL the
 * triggers are per statement (the net change of a multi-row claim is written once, in key order) and each
 * connection writes its own shard (`pg_backend_pid() % 8`), so concurrent writers of one account rarely wait for
 * each other's count rows; a read sums the shards. Existing tasks are counted once, after the triggers exist (on
 * PostgreSQL, creating them locks out writers of the tasks table until the migration commits).
 */
const createCounts = (prefix: string, environments: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, pg } = SqlStore.columns(sql)
    const t = tables(prefix)
    const key = countKey(environments)
    yield* sql.unsafe(`CREATE TABLE ${t.counts} (
  account_id TEXT NOT NULL,${environments ? "\n  environment TEXT NOT NULL," : ""}
  dim TEXT NOT NULL,
  value TEXT NOT NULL,
  shard INTEGER NOT NULL,
  n ${big} NOT NULL,
  PRIMARY KEY (${key}, dim, value, shard)
)${pg ? " WITH (fillfactor = 50)" : " WITHOUT ROWID"}`)
    if (pg) {
      // [name, event, transition tables, count deltas]
      const events: ReadonlyArray<readonly [string, string, string, string]> = [
        ["insert", "INSERT", "NEW TABLE AS new_rows", pgDeltas("new_rows", 1, environments)],
        [
          "update",
          "UPDATE",
          "OLD TABLE AS old_rows NEW TABLE AS new_rows",
          `${pgDeltas("old_rows", -1, environments)} UNION ALL ${pgDeltas("new_rows", 1, environments)}`
        ],
        ["delete", "DELETE", "OLD TABLE AS old_rows", pgDeltas("old_rows", -1, environments)]
      ]
      for (const [name, event, transition, deltas] of events) {
        const fn = `${t.tasks}_count_${name}`
        yield* sql.unsafe(pgCountFunction(fn, t.counts, deltas, environments))
        yield* sql.unsafe(`CREATE TRIGGER ${fn} AFTER ${event} ON ${t.tasks} REFERENCING ${transition}
  FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`)
      }
      yield* sql.unsafe(`CREATE FUNCTION ${t.tasks}_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM ${t.counts};
  RETURN NULL;
END
$$`)
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_count_truncate AFTER TRUNCATE ON ${t.tasks}
  FOR EACH STATEMENT EXECUTE FUNCTION ${t.tasks}_count_truncate()`)
    } else {
      const counted = ["account_id", ...(environments ? ["environment"] : []), "provider", "model"]
      const same = counted.map((column) => `OLD.${column} = NEW.${column}`).join(" AND ")
      const upsert = (tuples: ReadonlyArray<string>) => sqliteCountUpsert(t.counts, tuples, environments)
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_count_insert AFTER INSERT ON ${t.tasks} BEGIN
  ${upsert(sqliteCountTuples("NEW", environments))}
END`)
      // the one update the storage makes: a status changes
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_count_status AFTER UPDATE OF status ON ${t.tasks}
  WHEN OLD.status <> NEW.status AND ${same} BEGIN
  ${
        upsert([
          `(${countKey(environments, "NEW.")}, 'status_in', NEW.status, 0, 1)`,
          `(${countKey(environments, "OLD.")}, 'status_out', OLD.status, 0, 1)`
        ])
      }
END`)
      // any other change of a counted column (never made by the storage): the old row out, the new one in
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_count_move AFTER UPDATE OF ${counted.join(", ")} ON ${t.tasks}
  WHEN NOT (${same}) BEGIN
  ${upsert([...sqliteCountTuples("OLD", environments), ...sqliteCountTuples("NEW", environments)])}
END`)
      yield* sql.unsafe(`CREATE TRIGGER ${t.tasks}_count_delete AFTER DELETE ON ${t.tasks} BEGIN
  ${upsert(sqliteCountTuples("OLD", environments))}
END`)
    }
    // the tasks written before this migration
    yield* sql.unsafe(`INSERT INTO ${t.counts} (${key}, dim, value, shard, n)
  SELECT ${key}, 'all', '', 0, COUNT(*) FROM ${t.tasks} GROUP BY ${key}
  UNION ALL SELECT ${key}, 'provider', provider, 0, COUNT(*) FROM ${t.tasks} GROUP BY ${key}, provider
  UNION ALL SELECT ${key}, 'model', model, 0, COUNT(*) FROM ${t.tasks} GROUP BY ${key}, model
  UNION ALL SELECT ${key}, 'status_in', status, 0, COUNT(*) FROM ${t.tasks} GROUP BY ${key}, status`)
  })

/**
 * Counts per environment (test and live tasks are listed apart): the counts of `0004` replaced by counts keyed by
 * (account, environment), and the newest-first index of an account's tasks of one environment.
 */
const countByEnvironment = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = tables(prefix)
    if (SqlStore.columns(sql).pg) {
      for (const name of ["insert", "update", "delete", "truncate"]) {
        yield* sql.unsafe(`DROP FUNCTION ${t.tasks}_count_${name}() CASCADE`)
      }
    } else {
      for (const name of ["insert", "status", "move", "delete"]) yield* sql.unsafe(`DROP TRIGGER ${t.tasks}_count_${name}`)
    }
    yield* sql.unsafe(`DROP TABLE ${t.counts}`)
    yield* createCounts(prefix, true)
    yield* sql.unsafe(`CREATE INDEX ${t.tasks}_account_environment_idx ON ${t.tasks} (account_id, environment, id DESC)`)
  })

/**
 * `<prefix>nodes`: the processes running workers, written by each one's heartbeat (one upsert per beat; times are
 * the storage clock), read by the operators' system status (`TaskAdmin`).
 */
const createNodes = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big } = SqlStore.columns(sql)
    yield* sql.unsafe(`CREATE TABLE ${tables(prefix).nodes} (
  id TEXT PRIMARY KEY NOT NULL,
  host TEXT NOT NULL,
  pid ${big} NOT NULL,
  concurrency ${big} NOT NULL,
  heartbeat_ms ${big} NOT NULL,
  leases ${big} NOT NULL,
  started_at ${big} NOT NULL,
  last_seen_at ${big} NOT NULL
)`)
  })

/**
 * The engine's migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails
 * the loader with a `MigrationError`.
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => {
    const t = tables(prefix)
    return {
      "0001_tasks": createTables(prefix),
      // pruning of expired idempotency records
      "0002_task_idempotency_created": Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe(`CREATE INDEX ${t.idempotency}_created_idx ON ${t.idempotency} (created_at)`)
      ),
      // a gap-free outbox cursor on PostgreSQL: the inserting transaction of every entry
      "0003_task_outbox_txid": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.onDialectOrElse({
          pg: () =>
            Effect.zipRight(
              sql.unsafe(
                `ALTER TABLE ${t.outbox} ADD COLUMN txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)`
              ),
              sql.unsafe(`CREATE INDEX ${t.outbox}_txid_idx ON ${t.outbox} (txid, seq)`)
            ),
          orElse: () => Effect.void
        })),
      // exact list totals without counting rows: per-account counts kept by triggers
      "0004_task_counts": createCounts(prefix, false),
      // the node registry (operators' system status): one row per process running workers
      "0005_nodes": createNodes(prefix),
      // the trace a task continues (the creating request's W3C traceparent; NULL while tracing is off)
      "0006_task_trace_context": Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN trace_context TEXT`)
      ),
      // upstream channels (docs/channels.md): the channel of a task, and the active tasks per channel (limits)
      "0007_task_channel": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN channel_id TEXT`),
          sql.unsafe(
            `CREATE INDEX ${t.tasks}_channel_idx ON ${t.tasks} (channel_id) WHERE channel_id IS NOT NULL AND status IN ${activeList}`
          )
        )),
      // what the upstream reported a task's job ran and cost (operators: charged against upstream cost)
      "0008_task_upstream_usage": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN upstream_seconds DOUBLE PRECISION`),
          sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN upstream_cost_micros BIGINT`)
        )),
      // test and live tasks apart (decisions.md §accounts): list totals and the list index per environment
      "0009_task_counts_environment": countByEnvironment(prefix),
      // the node that accepted a task (claims of nodes apart from it skip it) and the nodes a node is apart from
      "0010_task_node": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN node_id TEXT`),
          sql.unsafe(`ALTER TABLE ${t.nodes} ADD COLUMN apart_from TEXT`)
        )),
      // the claim that began submitting a task without a job (a worker that died while submitting is noticed)
      "0011_task_submit_fence": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN submit_fence BIGINT`))
    }
  })

/**
 * Runs the engine's migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * {@link PersistenceError}.
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)

// -----------------------------------------------------------------------------------------------------------------
// rows
// -----------------------------------------------------------------------------------------------------------------

const { column } = SqlRows
const json = (value: unknown): string => JSON.stringify(value)
const { hasNul } = SqlStore
const nullable = <A, I>(schema: Schema.Schema<A, I>) => Schema.NullOr(schema)

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
  submitFence: Schema.optional(nullable(SqlRows.Number)).pipe(Schema.fromKey("submit_fence"))
})

/** The columns of a task's row, in the order {@link taskRowOf} writes them. */
export const taskColumns = [
  "id", "account_id", "key_id", "environment", "endpoint", "provider", "operation", "media_type", "model", "status",
  "input", "metadata", "webhook_url", "original_task_id", "charged_micros", "refunded_micros", "estimated_seconds",
  "progress", "result", "error", "upstream_job_id", "fence", "lease_owner", "lease_expires_at", "next_run_at",
  "deadline_at", "polls", "created_at", "started_at", "completed_at", "trace_context", "channel_id", "node_id"
] as const

const encodeResult = Schema.encodeEither(TaskRow.fields.result)
const encodeError = Schema.encodeEither(TaskRow.fields.error)
const noJson: Either.Either<string | null, ParseResult.ParseError> = Either.right(null)

/** A row of the tasks table, by column. */
type TaskRow = { readonly [K in (typeof taskColumns)[number]]: string | number | null }

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
    node_id: record.nodeId ?? null
  })
}

/** An outbox row's event as stored: `created_at` may be `null` (an `UntimedEvent`). */
const StoredEvent = Schema.Struct({
  ...Webhook.WebhookEvent.fields,
  created_at: Schema.NullOr(Webhook.WebhookEvent.fields.created_at)
})

/** A row of `<prefix>task_outbox`: an outbox entry (on PostgreSQL with its `txid`). */
export const OutboxRow = Schema.Struct({
  seq: SqlRows.Number,
  accountId: column("account_id", Schema.String),
  taskId: column("task_id", Schema.String),
  webhookUrl: column("webhook_url", nullable(Schema.String)),
  /** The event; without its time when the write did not know it yet (`UntimedEvent`): the row's `created_at`. */
  event: Schema.parseJson(StoredEvent),
  createdAt: column("created_at", SqlRows.Number),
  txid: Schema.optional(SqlRows.Number),
  /** The environment of the entry's task (read with the entry). */
  environment: SqlRows.literal("live", "test")
})

/** An outbox entry of a row: the event with its time ({@link timedEvent}). */
const outboxEntry = (row: typeof OutboxRow.Type): OutboxEntry => ({
  seq: row.seq,
  accountId: row.accountId,
  taskId: row.taskId,
  environment: row.environment,
  webhookUrl: row.webhookUrl,
  event: timedEvent(row.event, row.createdAt)
})

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
  apartFrom: column("apart_from", Schema.transform(Schema.NullOr(Schema.String), Schema.Array(Schema.String), {
    strict: true,
    decode: (text) => text === null || text === "" ? [] : text.split(" "),
    encode: (ids) => ids.length === 0 ? null : ids.join(" ")
  }))
})

/** The decoders of the storage's rows (whole rows, and the columns some statements read), under `prefix`. */
const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    task: SqlRows.decoder(names.tasks, TaskRow),
    owner: SqlRows.decoder(names.tasks, TaskRow.pick("accountId", "keyId", "environment")),
    status: SqlRows.decoder(names.tasks, TaskRow.pick("status")),
    noted: SqlRows.decoder(names.tasks, TaskRow.pick("model", "upstreamJobId")),
    count: SqlRows.decoder(names.tasks, Schema.Struct({ n: SqlRows.Number })),
    channelLoad: SqlRows.decoder(names.tasks, Schema.Struct({ channelId: column("channel_id", Schema.String), n: SqlRows.Number })),
    channelUsage: SqlRows.decoder(names.tasks, Schema.Struct({
      channelId: column("channel_id", Schema.String),
      model: Schema.String,
      tasks: SqlRows.Number,
      succeeded: SqlRows.Number,
      failed: SqlRows.Number,
      chargedMicros: column("charged_micros", SqlRows.Number),
      upstreamSeconds: column("upstream_seconds", SqlRows.Number),
      upstreamCostMicros: column("upstream_cost_micros", SqlRows.Number),
      reported: SqlRows.Number
    })),
    counted: SqlRows.decoder(names.counts, Schema.Struct({ n: SqlRows.Number })),
    byStatus: SqlRows.decoder(names.counts, Schema.Struct({ value: Schema.String, n: SqlRows.Number })),
    node: SqlRows.decoder(names.nodes, NodeRow),
    due: SqlRows.decoder(names.tasks, Schema.Struct({ unleased: nullable(SqlRows.Number), leased: nullable(SqlRows.Number) })),
    outbox: SqlRows.decoder(names.outbox, OutboxRow),
    horizon: SqlRows.decoder("pg_stat_activity", Schema.Struct({
      horizon: SqlRows.Number,
      heldBack: column("held", Schema.Boolean)
    })),
    idempotency: SqlRows.decoder(names.idempotency, Schema.Struct({
      fingerprint: Schema.String,
      taskId: column("task_id", Schema.String),
      createdAt: column("created_at", SqlRows.Number)
    }))
  }
}

/** An idempotency key claimed by a concurrent accept after we looked it up: the accept is tried again. */
class IdempotencyRace extends Schema.TaggedError<IdempotencyRace>()("IdempotencyRace", {}) {}

/** Times are stored as integer milliseconds. */
const ms = (value: number): number => Math.floor(value)


/** A dimension of `<prefix>task_counts` and its value. */
interface Counted {
  readonly dim: "all" | "status" | "provider" | "model"
  readonly value: string
}

/**
 * Where a list's total is read from the counts (`<prefix>task_counts`): no filter, or exactly one of status,
 * provider and model (the cursor never changes the total). Other combinations (two or three of those, a date range,
 * an id prefix) answer none: their total counts the matching rows.
 */
const countedBy = (query: ListQuery): Counted | undefined => {
  if (query.createdAfter !== undefined || query.createdBefore !== undefined) return undefined
  if (query.idPrefix !== undefined && query.idPrefix !== "") return undefined
  const filters: Array<Counted> = []
  if (query.status !== undefined) filters.push({ dim: "status", value: query.status })
  if (query.provider !== undefined) filters.push({ dim: "provider", value: query.provider })
  if (query.model !== undefined) filters.push({ dim: "model", value: query.model })
  return filters.length > 1 ? undefined : filters[0] ?? { dim: "all", value: "" }
}

/** The smallest string above every string starting with `prefix` (for an index range scan), if any. */
const prefixEnd = (prefix: string): string | undefined => {
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
interface Finishing {
  readonly id: string
  readonly fence: number
  readonly outcome: Outcome
  readonly upstreamJobId: string | undefined
  readonly channelId: string | undefined
  /** The task as its worker claimed it (`FinishOptions.task`). */
  readonly task: TaskRecord | undefined
}

/** A charged accept waiting in its batch. */
interface Charged {
  readonly record: TaskRecord
  readonly charge: Charge
}

/** A step waiting in its batch. */
interface Stepping {
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
export const outboxLockKeys = (prefix: string): readonly [number, number] =>
  [0x6d676f62, Ids.hash32(`${prefix}task_outbox`) & 0x7fffffff]

/**
 * The outbox readers' horizon on PostgreSQL (a 64-bit transaction id): the oldest transaction id of the sessions
 * holding the outbox lock ({@link outboxLockKeys}) in this database, or the next transaction id if none has one. A
 * writer takes the lock before it gets its transaction id, so a writer the reader does not see with an id will get
 * one at or above the next id: every outbox row below the horizon is committed (or rolled back) when the horizon is
 * read. Read in a statement before the outbox rows, whose snapshot then sees those commits. `pg_locks` and
 * `pg_stat_activity` show them to any role. Prepared (two-phase) transactions are not listed: Mediagate does not use
 * them.
 */
const outboxHorizon = (prefix: string) => {
  const [key1, key2] = outboxLockKeys(prefix)
  return `WITH s AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next)
  SELECT COALESCE(MIN(((s.next >> 32) << 32) + a.xid
    - CASE WHEN a.xid > (s.next & 4294967295) THEN 4294967296 ELSE 0 END), MIN(s.next)) AS horizon
  FROM s LEFT JOIN (
    SELECT act.backend_xid::text::bigint AS xid FROM pg_locks l JOIN pg_stat_activity act ON act.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.classid = ${key1} AND l.objid = ${key2} AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND act.backend_xid IS NOT NULL
  ) a ON true`
}

/** The error of an expired task. */
const expiredError = json({ code: "TASK_EXPIRED", message: "task did not finish before its deadline" })

/** How many tasks' last read rows are remembered with their decoded records (see `SqlRows.remembering`). */
const rememberedTasks = 1024

/** The most calls committed together. */
const maxBatch = 256

/**
 * Batches of charged accepts that may run at once on PostgreSQL, each on a connection of the pool (an accept is a
 * few round trips, which one connection would serialize); SQLite has one connection, so one. An account's accepts
 * always join the same batcher ({@link accountPartition}): two batches running at once never lock the same account
 * row, so neither waits for the other's commit, and one account's burst makes one batch as large as what waits
 * instead of several that queue on its row one after another.
 */
const chargedBatchers = 4

/**
 * Batches of finishes that may run at once on PostgreSQL, each on a connection of the pool: a finish holds its
 * worker's slot until it commits (a round trip for the worker's succeeded finishes, four in a transaction for the
 * others), so a finish that arrives while one batch is under way starts the next at once instead of waiting for it.
 * Two batches never wait for each other: their tasks are different rows (the fence), the outbox lock is shared and
 * each connection writes its own count shard.
 */
const finishBatchers = 2

/** The batcher of an account's charged accepts (a hash of its id). */
const accountPartition = (accountId: string): number => Hash.string(accountId)

/** The spans of the batched operations on the caller's side (the batch's statements run on the storage's fiber). */
const acceptSpan = Tracing.span(`${storeName}.accept`)
const stepSpan = Tracing.span(`${storeName}.step`)
const finishSpan = Tracing.span(`${storeName}.finish`)

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
}

/** Whether an accept's exit is final: a success, or a refusal of its charge (a storage failure is not). */
const isRefusedOrDone = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isSuccess(exit) || Option.exists(
    Cause.failureOption(exit.cause),
    (e) => e instanceof Errors.InsufficientBalance || e instanceof Errors.SpendLimitExceeded
  )

const isIdempotencyRace = (u: unknown): u is IdempotencyRace => u instanceof IdempotencyRace

/** Storage failures (and a lost idempotency race) become {@link PersistenceError}. */
const persistence = SqlStore.persistence(storeName, isIdempotencyRace)

/**
 * Builds the SQL task storage on the `SqlClient` in context (SQLite or PostgreSQL), after running the engine's
 * migrations, with its tables under `options.prefix` (default `mediagate_`; an invalid prefix fails with a
 * {@link PersistenceError}).
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  TaskStorage["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | Billing | Scope.Scope
> =>
  Effect.gen(function*() {
    const client = yield* SqlClient.SqlClient
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const billing = yield* Billing
    const time = options.time ?? "database"
    const rows = decoders(prefix)
    const channel = wakeupChannel(prefix)
    const signals = yield* PubSub.sliding<void>(1)
    const wake = PubSub.publish(signals, undefined)
    const notify = pg ? sql`SELECT pg_notify(${channel}, ${"wake"})`.pipe(Effect.asVoid) : Effect.void
    /** The wakeup of other processes as part of a write (PostgreSQL: `RETURNING (SELECT pg_notify(...))`, sent on commit). */
    const notifying = pg ? sql` RETURNING (SELECT pg_notify(${channel}, ${"wake"})) AS woke` : sql.literal("")
    const outboxName = outboxChannel(prefix)
    const outboxSignals = yield* PubSub.sliding<void>(1)
    /** Wakes this process's outbox readers (after the commit). */
    const outboxWake = PubSub.publish(outboxSignals, undefined)
    /** The wakeup of other processes' outbox readers as part of the outbox insert (PostgreSQL; sent on commit). */
    const outboxNotifying = pg ? sql` RETURNING (SELECT pg_notify(${outboxName}, ${"wake"})) AS woke` : sql.literal("")
    /** The first statement of a transaction that writes the outbox (PostgreSQL; see {@link outboxLockKeys}). */
    const [outboxKey1, outboxKey2] = outboxLockKeys(prefix)
    const outboxLock = pg ? Effect.asVoid(sql`SELECT pg_advisory_xact_lock_shared(${outboxKey1}, ${outboxKey2})`) : Effect.void
    /**
     * The same lock taken by the first statement that writes instead of a statement of its own (one round trip
     * less): a CTE of that statement, and {@link outboxLocked} in its `WHERE`. The condition refers to nothing of the
     * row, so PostgreSQL evaluates it once (an init plan) before the statement yields its first row to write: the
     * lock is held before the transaction gets its id, as the outbox readers' horizon needs.
     */
    const outboxLockCte = pg
      ? sql`outbox_lock AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(${outboxKey1}, ${outboxKey2})), `
      : sql.literal("")
    const outboxLocked = pg ? sql.literal(" AND EXISTS (SELECT 1 FROM outbox_lock)") : sql.literal("")

    /** "now" as an SQL expression: the database clock, or the reading of Effect's `Clock` as a parameter. */
    const nowSql: Effect.Effect<Fragment> = time === "database"
      ? Effect.succeed(sql.literal(SqlStore.nowExpression(pg)))
      : Effect.map(Clock.currentTimeMillis, (now) => sql`CAST(${ms(now)} AS BIGINT)`)
    /** "now" computed once per statement: `WITH clock AS (SELECT <now> AS now) ...`, read as {@link NOW}. */
    const withClock = Effect.map(nowSql, (now) => sql`WITH clock AS ${sql.literal(pg ? "MATERIALIZED " : "")}(SELECT ${now} AS now)`)
    const NOW = sql.literal("(SELECT now FROM clock)")
    const ACTIVE = sql.literal(`status IN ${activeList}`)
    const REAL = sql.literal(SqlStore.columns(sql).real)

    /** The storage clock as a value (inside a transaction: one reading for the whole transition). */
    const currentTime = SqlStore.storageNow(sql, pg, time)

    const taskById = (id: string) => sql`SELECT * FROM ${t.tasks} WHERE id = ${id}`
    const selectTask = (id: string) => Effect.flatMap(taskById(id), rows.task.first)
    // a task read on its own (not in a transaction): through the read connection when there is one
    const reader = options.reader
    const readTaskQuery = `SELECT * FROM "${tables(prefix).tasks}" WHERE id = ${pg ? "$1" : "?"}`
    // a task polled while it waits is read again and again unchanged: its row is decoded once per change
    const readRows = SqlRows.remembering(rows.task, "id", rememberedTasks)
    const readTask = reader === undefined
      ? (id: string) => Effect.flatMap(taskById(id), readRows.first)
      : (id: string) => Effect.flatMap(reader.all(readTaskQuery, [id]), readRows.first)

    /** The refund a task that just became terminal is owed (failed, expired, cancelled), recorded; the task after it. */
    const refund = (task: TaskRecord) =>
      Effect.gen(function*() {
        const owed = refundFor(task, task.status)
        if (owed === undefined) return task
        if (billing.unmetered !== true) yield* billing.refund(owed)
        yield* sql`UPDATE ${t.tasks} SET refunded_micros = refunded_micros + ${owed.amountMicros} WHERE id = ${task.id}`
        return { ...task, refundedMicros: task.refundedMicros + owed.amountMicros }
      })

    /** Refund (failed, expired, cancelled) and outbox event of a task that just became terminal. */
    const settle = (task: TaskRecord, now: number) =>
      Effect.gen(function*() {
        const ended = yield* refund(task)
        yield* sql`INSERT INTO ${t.outbox} ${
          sql.insert({
            account_id: ended.accountId,
            task_id: ended.id,
            webhook_url: ended.webhookUrl,
            event: json(toEvent(ended, Ids.eventId(now), now)),
            created_at: now
          })
        }${outboxNotifying}`
        return ended
      })

    const persistAccept = persistence("accept")

    /** A new task's row (see {@link taskRowOf}). */
    const encodeTask = (record: TaskRecord) => Either.mapLeft(taskRowOf(record), (error) => SqlRows.rowError(tables(prefix).tasks, error))

    /** Inserts new tasks in one statement (with the wakeup of other processes, at the commit). */
    const insertRows = (records: ReadonlyArray<TaskRecord>) =>
      Effect.forEach(records, encodeTask).pipe(
        Effect.flatMap((encoded) => sql`INSERT INTO ${t.tasks} ${sql.insert(encoded)}${notifying}`),
        persistAccept
      )
    /** {@link insertRows} on its own, then this process's workers woken. */
    const insertAll = (records: ReadonlyArray<TaskRecord>) => Effect.zipRight(insertRows(records), wake)

    /**
     * Accepts without a charge or an idempotency key, batched: the tasks accepted while an insert is under way are
     * inserted together; if that fails (a duplicate id), each is inserted on its own.
     */
    // SQLite's statements are synchronous: its batches gather the accepts of requests that arrived together
    const sqliteBatches = { gather: !pg }
    const inserting = yield* GroupCommit.make(maxBatch, (records: ReadonlyArray<TaskRecord>) =>
      Effect.flatMap(Effect.exit(insertAll(records)), (together) =>
        Exit.isSuccess(together) || records.length === 1
          ? Effect.succeed(records.map(() => together))
          : Effect.forEach(records, (record) => Effect.exit(insertAll([record])))), sqliteBatches)

    const taskColumnList = sql.literal(taskColumns.join(", "))
    /**
     * PostgreSQL: the insert of the tasks of `rows` whose 0-based positions `made` answers (the charges made, in
     * billing's statement: see `acceptingCharged`), from one JSON parameter (with the wakeup of other processes).
     */
    const insertMade = (rows: ReadonlyArray<TaskRow>, made: Fragment) =>
      sql`INSERT INTO ${t.tasks} (${taskColumnList}) SELECT ${taskColumnList}
        FROM json_populate_recordset(NULL::${t.tasks}, ${JSON.stringify(rows)}) WITH ORDINALITY AS r
        WHERE r.ordinality - 1 IN (${made})${notifying}`

    /** A task's insert (with the wakeup of other processes). */
    const insertOne = (record: TaskRecord) =>
      Effect.flatMap(encodeTask(record), (row) => sql`INSERT INTO ${t.tasks} ${sql.insert(row)}${notifying}`)

    /**
     * The task first, the charge last, in the caller's transaction (which a refusal rolls back): the account row the
     * charge locks is held the shortest time, and taken after the task rows' locks as every terminal transition
     * takes them (status update, then refund).
     */
    const insertCharged = (record: TaskRecord, charge: Charge) =>
      Effect.zipRight(insertOne(record), (billing.chargeInTransaction ?? billing.charge)(charge))

    /** How a charged accept of a batch ends. */
    type AcceptExit = Exit.Exit<void, Effect.Effect.Error<ReturnType<typeof insertCharged>>>

    const writer = options.writer
    const chargeBatch = billing.chargeBatch
    // the write connection's insert (SQLite), its text written once
    const insertTaskQuery = `INSERT INTO "${tables(prefix).tasks}" (${taskColumns.join(", ")}) VALUES (${taskColumns.map(() => "?").join(", ")})`
    const chargeStatements = billing.chargeStatements
    /**
     * A batch of charged accepts as one synchronous transaction on the write connection (SQLite): each accept in a
     * savepoint (the task's insert, then the charge's statements), rolled back to on a refusal, and on a charge
     * billing defers (an auto top-up due), which then runs on its own through the client. Answers each accept's
     * outcome, by position in the batch.
     */
    const writeCharged = writer === undefined || chargeStatements === undefined
      ? undefined
      : (batch: ReadonlyArray<Charged>, order: ReadonlyArray<number>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          writer.transaction((transaction) => {
            const outcomes = new Array<ChargeOutcome>(batch.length)
            for (const i of order) {
              const { charge, record } = batch[i]!
              outcomes[i] = transaction.attempt((): ChargeOutcome => {
                const row = encodeTask(record)
                if (Either.isLeft(row)) return Either.left(row.left)
                const values = row.right
                transaction.execute(insertTaskQuery, taskColumns.map((name) => values[name]))
                return SqlProgram.runSync(chargeStatements(charge, now), transaction)
              }, isCharged)
            }
            return outcomes
          }))

    /**
     * Charged accepts without an idempotency key, batched: one transaction (on PostgreSQL one statement) for the
     * batch, which takes the accounts' rows in account order, so that two batches (of this or another process) never
     * wait on each other in a cycle.
     * - PostgreSQL (billing's `chargeBatch`): one statement, without a transaction around it (one round trip for a
     *   batch of any size): billing's charge function on the charges (it locks the accounts and writes nothing for
     *   a refused charge), and the insert of the tasks of the charges made ({@link insertMade}). The new tasks' rows
     *   are locked after the accounts', which no other transaction can wait on (they exist from the commit on). A
     *   charge billing defers (an auto top-up may follow it) runs on its own, with every charge after it.
     * - SQLite with a write connection: see {@link writeCharged}.
     * - Otherwise: each accept in a savepoint of its own (its task, then its charge; a refused charge rolls back
     *   only its task).
     * If the transaction (statement) fails as a whole, nothing of it is written and each accept runs again in a
     * transaction of its own.
     */
    const acceptingCharged = yield* GroupCommit.make(maxBatch, (batch: ReadonlyArray<Charged>) => {
      const account = (i: number) => batch[i]!.record.accountId
      // a stable sort: an account's accepts keep their order
      const order = batch.map((_, i) => i).sort((a, b) => account(a) < account(b) ? -1 : account(a) > account(b) ? 1 : 0)
      const alone = (item: Charged) => Effect.exit(sql.withTransaction(insertCharged(item.record, item.charge)))
      if (writeCharged !== undefined) {
        return writeCharged(batch, order).pipe(
          Effect.exit,
          Effect.flatMap((written) =>
            Exit.isSuccess(written)
              ? Effect.forEach(written.value, (outcome, i) =>
                Either.isLeft(outcome)
                  ? Effect.succeed(Exit.fail(outcome.left))
                  : outcome.right === "charged"
                  ? Effect.succeed(Exit.void)
                  : alone(batch[i]!))
              // the transaction failed as a whole: nothing of it is written; each accept runs on its own
              : Effect.forEach(batch, alone)
          ),
          Effect.tap(wake)
        )
      }
      if (chargeBatch !== undefined) {
        const ordered = order.map((i) => batch[i]!)
        return Effect.forEach(ordered, (item) => encodeTask(item.record)).pipe(
          Effect.flatMap((encoded) => chargeBatch(ordered.map((item) => item.charge), (made) => insertMade(encoded, made))),
          Effect.exit,
          Effect.flatMap((together) => {
            // the statement failed: nothing of it is written; each accept runs on its own
            if (Exit.isFailure(together)) return Effect.forEach(batch, alone)
            const exits = new Array<Effect.Effect<AcceptExit>>(batch.length)
            together.value.forEach((outcome, j) => {
              const i = order[j]!
              exits[i] = Either.isLeft(outcome)
                ? Effect.succeed(Exit.fail(outcome.left))
                : outcome.right === "charged"
                ? Effect.succeed(Exit.void)
                // an auto top-up may follow the charge: the accept on its own, in a transaction
                : alone(batch[i]!)
            })
            return Effect.all(exits)
          }),
          Effect.tap(wake)
        )
      }
      if (batch.length === 1) return Effect.forEach(batch, alone).pipe(Effect.tap(wake))
      return Effect.forEach(order, (i) => Effect.map(alone(batch[i]!), (exit) => [i, exit] as const)).pipe(
        sql.withTransaction,
        Effect.map((answers) => {
          const exits = new Array<AcceptExit>(batch.length)
          for (const [i, exit] of answers) exits[i] = exit
          return exits
        }),
        Effect.exit,
        Effect.flatMap((together) =>
          Exit.isSuccess(together)
            // an accept that failed on something else than a refusal (e.g. a deadlock with another process's
            // batch) runs again on its own
            ? Effect.forEach(together.value, (exit, i) => isRefusedOrDone(exit) ? Effect.succeed(exit) : alone(batch[i]!))
            : Effect.forEach(batch, alone)),
        Effect.tap(wake)
      )
    }, pg ? { fibers: chargedBatchers, partition: (item) => accountPartition(item.record.accountId) } : sqliteBatches)

    const accept: TaskStorage["Type"]["accept"] = ({ charge, idempotency: claim, task }) => {
      const record = fromNew(task, ms(task.createdAt), ms(task.deadlineAt))
      const charged = charge !== undefined && charge.amountMicros > 0 && billing.unmetered !== true
      if (claim === undefined) {
        const created = { _tag: "Created", task: record } as const
        // nothing else to write: the task joins the next multi-row insert (one statement, no transaction); with a
        // charge, the next batch of charged accepts (one transaction)
        return charged
          ? Effect.as(acceptingCharged({ record, charge }), created).pipe(persistAccept)
          : Effect.as(inserting(record), created).pipe(acceptSpan)
      }
      const attempt = sql.withTransaction(Effect.gen(function*() {
        if (claim !== undefined) {
          const previous = yield* sql`SELECT fingerprint, task_id, created_at FROM ${t.idempotency}
            WHERE account_id = ${task.accountId} AND "key" = ${claim.key}`.pipe(
            Effect.flatMap(rows.idempotency.first),
            Effect.map(Option.getOrUndefined)
          )
          const verdict = IdempotencyWindow.judge(previous, claim)
          if (verdict === "Reused") {
            return yield* new Errors.IdempotencyKeyReused({ message: IdempotencyWindow.reusedMessage })
          }
          if (verdict === "Replay" && previous !== undefined) {
            const original = yield* selectTask(previous.taskId)
            if (Option.isSome(original)) return { _tag: "Replayed", task: original.value } as const
          }
          // take the key: insert it, or replace exactly the row read above (expired, or its task gone); a
          // concurrent accept that took it first leaves nothing to return, and the whole accept runs again
          const createdAt = yield* nowSql
          const taken = yield* sql`INSERT INTO ${t.idempotency} (account_id, "key", fingerprint, task_id, created_at)
            VALUES (${task.accountId}, ${claim.key}, ${claim.fingerprint}, ${task.id}, ${createdAt})
            ON CONFLICT (account_id, "key") DO UPDATE SET fingerprint = excluded.fingerprint,
              task_id = excluded.task_id, created_at = excluded.created_at
            WHERE ${t.idempotency}.task_id = ${previous?.taskId ?? null}
            RETURNING task_id`
          if (taken.length === 0) return yield* new IdempotencyRace()
        }
        yield* (charged ? insertCharged(record, charge) : insertOne(record))
        return { _tag: "Created", task: record } as const
      }))
      return attempt.pipe(
        Effect.retry({ times: 3, while: (e) => e instanceof IdempotencyRace }),
        persistAccept,
        Effect.tap((result) => result._tag === "Created" ? wake : Effect.void)
      )
    }

    const list: TaskStorage["Type"]["list"] = (accountId, query) =>
      Effect.gen(function*() {
        const limit = Math.max(0, Math.floor(query.limit))
        const empty: ListPage = { items: [], hasMore: false, total: 0 }
        if (hasNul(accountId, query.status, query.provider, query.model, query.idPrefix)) return empty
        // no account: every account's tasks (operators); the totals then sum every account's counts (and no
        // environment: both environments')
        const filters: Array<Fragment> = accountId === undefined ? [] : [sql`account_id = ${accountId}`]
        if (query.environment !== undefined) filters.push(sql`environment = ${query.environment}`)
        // the count rows of the scope: the account's (or all), of the environment (or both)
        const scope = [...filters]
        if (query.status !== undefined) filters.push(sql`status = ${query.status}`)
        if (query.provider !== undefined) filters.push(sql`provider = ${query.provider}`)
        if (query.model !== undefined) filters.push(sql`model = ${query.model}`)
        // created_at holds whole milliseconds: `>= 1.5` is `>= 2`, `< 1.5` is `< 2`
        if (query.createdAfter !== undefined) filters.push(sql`created_at >= ${Math.ceil(query.createdAfter)}`)
        if (query.createdBefore !== undefined) filters.push(sql`created_at < ${Math.ceil(query.createdBefore)}`)
        if (query.idPrefix !== undefined && query.idPrefix !== "") {
          filters.push(sql`id >= ${query.idPrefix}`)
          const end = prefixEnd(query.idPrefix)
          if (end !== undefined) filters.push(sql`id < ${end}`)
        }
        const page = [...filters]
        if (query.beforeId !== undefined) {
          // ids hold no NUL: `id < "ab\0..."` is `id <= "ab"`
          const nul = query.beforeId.indexOf("\u0000")
          page.push(nul < 0 ? sql`id < ${query.beforeId}` : sql`id <= ${query.beforeId.slice(0, nul)}`)
        }
        // the total: from the counts (a few rows, whatever the account's size) or by counting the matching rows
        const counted = countedBy(query)
        const total = counted === undefined
          ? sql`SELECT COUNT(*) AS n FROM ${t.tasks} WHERE ${sql.and(filters)}`.pipe(Effect.flatMap(rows.count.single))
          : (counted.dim === "status"
            ? sql`SELECT COALESCE(SUM(CASE WHEN dim = 'status_in' THEN n ELSE -n END), 0) AS n FROM ${t.counts}
              WHERE ${sql.and([...scope, sql`dim IN ('status_in', 'status_out')`, sql`value = ${counted.value}`])}`
            : sql`SELECT COALESCE(SUM(n), 0) AS n FROM ${t.counts}
              WHERE ${sql.and([...scope, sql`dim = ${counted.dim}`, sql`value = ${counted.value}`])}`).pipe(
              Effect.flatMap(rows.counted.single)
            )
        const [items, { n }] = yield* Effect.all([
          sql`SELECT * FROM ${t.tasks} WHERE ${sql.and(page)} ORDER BY id DESC LIMIT ${limit + 1}`.pipe(
            Effect.flatMap(rows.task.all)
          ),
          total
        ], { concurrency: 2 })
        return { items: items.slice(0, limit), hasMore: items.length > limit, total: n }
      }).pipe(persistence("list"))

    const claim: TaskStorage["Type"]["claim"] = (owner, limit, leaseMs, exclude = []) =>
      Effect.suspend(() => {
        const n = Math.max(0, Math.floor(limit))
        if (n === 0) return Effect.succeed([])
        // tasks accepted by the nodes the caller is apart from are left to them (Placement)
        const apart = exclude.length === 0 ? sql.literal("") : sql` AND (node_id IS NULL OR node_id NOT IN ${sql.in(exclude)})`
        return withClock.pipe(
          Effect.flatMap((clock) =>
            sql`${clock}
          UPDATE ${t.tasks} SET
            fence = fence + 1,
            lease_owner = ${owner},
            lease_expires_at = ${NOW} + ${ms(leaseMs)},
            status = CASE WHEN status = 'pending' THEN 'queued' ELSE status END,
            started_at = COALESCE(started_at, ${NOW}),
            submit_fence = CASE WHEN upstream_job_id IS NULL THEN COALESCE(submit_fence, fence + 1) ELSE submit_fence END
          WHERE id IN (
            SELECT id FROM ${t.tasks}
            WHERE ${ACTIVE}
              AND next_run_at <= ${NOW}
              AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})${apart}
            ORDER BY next_run_at, id
            LIMIT ${n}${sql.literal(pg ? " FOR UPDATE SKIP LOCKED" : "")}
          )
          RETURNING *`
          ),
          Effect.flatMap(rows.task.all),
          Effect.map((tasks) => tasks.sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0) || (a.id < b.id ? -1 : 1)))
        )
      }).pipe(persistence("claim"))

    /**
     * Applies a batch of steps (none with extra charges) in one statement: a fenced `UPDATE ... FROM` the batch's
     * values. Answers the ids written.
     */
    const stepAll = (batch: ReadonlyArray<Stepping>) => {
      const values = batch.map(({ fence, id, update }) =>
        sql`(${id}, CAST(${fence} AS BIGINT), ${update.status ?? null}, CAST(${update.progress ?? null} AS ${REAL}), ${
          update.upstreamJobId ?? null
        }, ${update.channelId ?? null}, CAST(${update.resubmit === true ? 1 : 0} AS INTEGER), CAST(${
          update.polled === true ? 1 : 0
        } AS INTEGER), CAST(${ms(update.nextRunAt)} AS BIGINT))`
      )
      return sql`WITH stepped (s_id, s_fence, s_status, s_progress, s_job, s_channel, s_resubmit, s_polled, s_next) AS (
          VALUES ${sql.csv(values)})
        UPDATE ${t.tasks} SET status = COALESCE(stepped.s_status, status),
          progress = COALESCE(stepped.s_progress, progress),
          upstream_job_id = CASE WHEN stepped.s_resubmit = 1 THEN NULL
            WHEN stepped.s_job LIKE ${markerPattern} AND upstream_job_id NOT LIKE ${markerPattern} THEN upstream_job_id
            ELSE COALESCE(stepped.s_job, upstream_job_id) END,
          channel_id = CASE WHEN stepped.s_resubmit = 1 THEN NULL ELSE COALESCE(stepped.s_channel, channel_id) END,
          submit_fence = CASE WHEN stepped.s_resubmit = 1 THEN NULL ELSE submit_fence END,
          polls = polls + stepped.s_polled,
          next_run_at = CASE WHEN deadline_at < stepped.s_next THEN deadline_at ELSE stepped.s_next END,
          lease_owner = NULL,
          lease_expires_at = NULL
        FROM stepped
        WHERE ${t.tasks}.id = stepped.s_id AND ${t.tasks}.fence = stepped.s_fence AND lease_owner IS NOT NULL
          AND ${ACTIVE}
          AND (stepped.s_status IS NULL OR stepped.s_status <> 'queued' OR status IN ('pending', 'queued'))
        RETURNING ${t.tasks}.id`.pipe(
        Effect.map((written) => new Set(written.map((row) => String(row["id"])))),
        persistence("step")
      )
    }

    /**
     * Steps without extra charges, batched: the steps made while a write is under way are applied together (a
     * task twice in one batch: the later steps on their own); if that fails, each is applied on its own.
     */
    const stepping = yield* GroupCommit.make(maxBatch, (batch: ReadonlyArray<Stepping>) =>
      Effect.gen(function*() {
        const seen = new Set<string>()
        const together: Array<Stepping> = []
        for (const item of batch) {
          if (seen.has(item.id)) continue
          seen.add(item.id)
          together.push(item)
        }
        const all = yield* Effect.exit(stepAll(together))
        const joined = new Set(together)
        const alone = (item: Stepping) => Effect.exit(Effect.map(stepAll([item]), (written) => written.has(item.id)))
        return yield* Effect.forEach(batch, (item) => {
          if (!joined.has(item)) return alone(item)
          if (Exit.isSuccess(all)) return Effect.succeed(Exit.succeed(all.value.has(item.id)))
          return together.length === 1 ? Effect.succeed(Exit.failCause(all.cause)) : alone(item)
        })
      }))

    const step: TaskStorage["Type"]["step"] = (id, fence, update) =>
      Effect.suspend(() => {
        if (!Number.isSafeInteger(fence)) return Effect.succeed(false)
        const extra = extraCharges(update)
        if (extra.length === 0) return stepping({ id, fence, update }).pipe(stepSpan)
        // extra charges: charged with the step, in one transaction (a refusal rolls the step back)
        const nextRunAt = ms(update.nextRunAt)
        const set: Array<Fragment> = []
        if (update.status !== undefined) set.push(sql`status = ${update.status}`)
        if (update.progress !== undefined) set.push(sql`progress = ${update.progress}`)
        if (update.upstreamJobId !== undefined) set.push(sql`upstream_job_id = ${update.upstreamJobId}`)
        if (update.channelId !== undefined) set.push(sql`channel_id = ${update.channelId}`)
        if (update.resubmit === true) set.push(sql`upstream_job_id = NULL`, sql`channel_id = NULL`, sql`submit_fence = NULL`)
        if (update.polled === true) set.push(sql`polls = polls + 1`)
        set.push(
          sql`next_run_at = CASE WHEN deadline_at < ${nextRunAt} THEN deadline_at ELSE ${nextRunAt} END`,
          sql`lease_owner = NULL`,
          sql`lease_expires_at = NULL`
        )
        // running never goes back to queued
        const guard = update.status === "queued" ? sql.literal(`status IN ('pending', 'queued')`) : ACTIVE
        return sql.withTransaction(Effect.gen(function*() {
          const written = yield* sql`UPDATE ${t.tasks} SET ${sql.csv(set)}
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND ${guard}
            RETURNING account_id, key_id, environment`.pipe(Effect.flatMap(rows.owner.first))
          if (Option.isNone(written)) return false
          const owner = written.value
          if (owner.environment !== "live") return true
          for (const charge of extra) {
            yield* billing.charge({ accountId: owner.accountId, keyId: owner.keyId, taskId: id, ...charge })
          }
          const total = extra.reduce((sum, charge) => sum + charge.amountMicros, 0)
          yield* sql`UPDATE ${t.tasks} SET charged_micros = charged_micros + ${total} WHERE id = ${id}`
          return true
        })).pipe(persistence("step"))
      })

    /**
     * Whether a finish can be one statement with its event (PostgreSQL): it comes with its claim's record (the event
     * is built from it) and owes no refund (succeeded).
     */
    const isDirect = (item: Finishing) => pg && item.task !== undefined && item.outcome._tag === "Succeeded"

    /**
     * The fenced `UPDATE ... FROM` the values of a batch of finishes that ends their tasks (the clock read once, in
     * it; on PostgreSQL the outbox lock taken by it), answering the ended rows. With `events` (PostgreSQL, finishes
     * with their claim's record: {@link isDirect}) the same statement also inserts each ended task's event, built
     * before it and timed by the row ({@link toUntimedEvent}): the whole finish is then this one statement.
     */
    const endTasks = (batch: ReadonlyArray<Finishing>, events: boolean) =>
      Effect.gen(function*() {
        const eventAt = events ? yield* Clock.currentTimeMillis : 0
        const values = batch.map(({ channelId, fence, id, outcome, task, upstreamJobId }) => {
          const status = statusOfOutcome(outcome)
          const result = outcome._tag === "Succeeded" ? outcome.result : null
          const event = events && task !== undefined
            ? sql`, ${json(toUntimedEvent({ ...task, status, result: result ?? task.result }, Ids.eventId(eventAt)))}`
            : sql.literal("")
          const usage = outcome._tag === "Expired" ? {} : usageColumns(outcome.usage)
          return sql`(${id}, CAST(${fence} AS BIGINT), ${status}, ${result === null ? null : json(result)}, ${
            outcome._tag === "Failed" ? json(outcome.error) : outcome._tag === "Expired" ? expiredError : null
          }, ${upstreamJobId ?? null}, ${channelId ?? null}, ${
            sql`CAST(${usage.upstreamSeconds ?? null} AS DOUBLE PRECISION), CAST(${usage.upstreamCostMicros ?? null} AS BIGINT)`
          }${event})`
        })
        const update = sql`UPDATE ${t.tasks} SET status = finished.f_status, lease_owner = NULL, lease_expires_at = NULL,
            next_run_at = NULL, completed_at = ${NOW},
            result = COALESCE(finished.f_result, result),
            error = COALESCE(finished.f_error, error),
            progress = CASE WHEN finished.f_status = 'succeeded' THEN 100 ELSE progress END,
            upstream_job_id = COALESCE(finished.f_job, upstream_job_id),
            channel_id = COALESCE(finished.f_channel, channel_id),
            upstream_seconds = COALESCE(finished.f_seconds, upstream_seconds),
            upstream_cost_micros = COALESCE(finished.f_cost, upstream_cost_micros)
          FROM finished
          WHERE ${t.tasks}.id = finished.f_id AND ${t.tasks}.fence = finished.f_fence AND lease_owner IS NOT NULL
            AND ${ACTIVE}${outboxLocked}
          RETURNING ${pg ? sql`${t.tasks}.*` : sql.literal("*")}`
        const head = sql`${yield* withClock}, ${outboxLockCte}finished (${
          sql.literal("f_id, f_fence, f_status, f_result, f_error, f_job, f_channel, f_seconds, f_cost")
        }${
          sql.literal(events ? ", f_event" : "")
        }) AS (VALUES ${sql.csv(values)})`
        const statement = events
          ? sql`${head}, ended AS (${update}),
            events AS (INSERT INTO ${t.outbox} (account_id, task_id, webhook_url, event, created_at)
              SELECT ended.account_id, ended.id, ended.webhook_url, finished.f_event, ended.completed_at
              FROM ended JOIN finished ON finished.f_id = ended.id ORDER BY ended.id${outboxNotifying})
            SELECT * FROM ended`
          : sql`${head} ${update}`
        return yield* Effect.flatMap(statement, rows.task.all)
      })

    /**
     * Ends the tasks of a batch of finishes ({@link endTasks}). On PostgreSQL, finishes with their claim's record that
     * owe no refund ({@link isDirect}) are one statement (no transaction around it); the others are one transaction:
     * the update, the refunds, and one `INSERT` of every event built from the ended rows. Answers the ended tasks by
     * id.
     */
    const finishAll = (batch: ReadonlyArray<Finishing>) =>
      (batch.every(isDirect)
        ? Effect.map(endTasks(batch, true), (ended) => new Map(ended.map((task) => [task.id, task])))
        : sql.withTransaction(Effect.gen(function*() {
          const ended = yield* endTasks(batch, false)
          const settled = new Map<string, TaskRecord>()
          for (const task of ended) settled.set(task.id, yield* refund(task))
          const events = batch.flatMap(({ id }) => {
            const task = settled.get(id)
            if (task === undefined) return []
            const now = task.completedAt ?? 0
            return [{
              account_id: task.accountId,
              task_id: task.id,
              webhook_url: task.webhookUrl,
              event: json(toEvent(task, Ids.eventId(now), now)),
              created_at: now
            }]
          })
          if (events.length > 0) yield* sql`INSERT INTO ${t.outbox} ${sql.insert(events)}${outboxNotifying}`
          return settled
        }))).pipe(
          persistence("finish"),
          Effect.tap((settled) => settled.size > 0 ? outboxWake : Effect.void)
        )

    /**
     * Runs a batch of finishes: together, each once — on PostgreSQL in two writes at most, one statement for the
     * finishes that can be one ({@link isDirect}) and one transaction for the others. If a write fails (a storage
     * failure), each of its finishes runs again on its own, so that one failure fails only its own call. Finishes
     * that may owe a refund (failed, expired) run on their own unless billing is unmetered: a billing outside the
     * storage's transaction (not on its SQL client) is never asked twice for a refund because another finish failed.
     */
    const finishBatch = (batch: ReadonlyArray<Finishing>) =>
      Effect.gen(function*() {
        // a task twice in one batch (two writers with the same fence): the later ones run on their own
        const seen = new Set<string>()
        const direct: Array<Finishing> = []
        const together: Array<Finishing> = []
        for (const item of batch) {
          if (!Number.isSafeInteger(item.fence) || seen.has(item.id)) continue
          if (item.outcome._tag !== "Succeeded" && billing.unmetered !== true) continue
          seen.add(item.id)
          ;(isDirect(item) ? direct : together).push(item)
        }
        // each group that has finishes is one write; a finish's answer is its group's
        const groupOf = new Map<Finishing, {
          readonly group: ReadonlyArray<Finishing>
          readonly exit: Exit.Exit<Map<string, TaskRecord>, PersistenceError>
        }>()
        for (const group of [direct, together]) {
          if (group.length === 0) continue
          const written = { group, exit: yield* Effect.exit(finishAll(group)) }
          for (const item of group) groupOf.set(item, written)
        }
        const alone = (item: Finishing) =>
          Effect.exit(Effect.map(finishAll([item]), (settled) => Option.fromNullable(settled.get(item.id))))
        return yield* Effect.forEach(batch, (item) => {
          if (!Number.isSafeInteger(item.fence)) return Effect.succeed(Exit.succeed(Option.none<TaskRecord>()))
          const joined = groupOf.get(item)
          if (joined === undefined) return alone(item)
          const { exit, group } = joined
          if (Exit.isSuccess(exit)) return Effect.succeed(Exit.succeed(Option.fromNullable(exit.value.get(item.id))))
          return group.length === 1 ? Effect.succeed(Exit.failCause(exit.cause)) : alone(item)
        })
      })

    const finishing = yield* GroupCommit.make(maxBatch, finishBatch, pg ? { fibers: finishBatchers } : sqliteBatches)

    const finish: TaskStorage["Type"]["finish"] = (id, fence, outcome, options) =>
      finishing({ id, fence, outcome, upstreamJobId: options?.upstreamJobId, channelId: options?.channelId, task: options?.task })
        .pipe(finishSpan)

    /** The condition of a task of `environment`, or of either when undefined. */
    const ofEnvironment = (environment: TaskRecord["environment"] | undefined) =>
      environment === undefined ? sql.literal("1 = 1") : sql`environment = ${environment}`

    const cancel: TaskStorage["Type"]["cancel"] = (accountId, id, environment) =>
      Effect.suspend((): Effect.Effect<CancelResult, SqlStore.StorageFailure | PersistenceError> => {
        if (hasNul(accountId, id)) return Effect.succeed({ _tag: "NotFound" })
        return sql.withTransaction(Effect.gen(function*() {
          yield* outboxLock
          const now = yield* currentTime
          const cancelled = yield* sql`UPDATE ${t.tasks} SET status = 'cancelled', fence = fence + 1, lease_owner = NULL,
              lease_expires_at = NULL, next_run_at = NULL, completed_at = ${now}
            WHERE id = ${id} AND account_id = ${accountId} AND ${ofEnvironment(environment)}
              AND status IN ('pending', 'queued')
            RETURNING *`.pipe(Effect.flatMap(rows.task.first))
          if (Option.isSome(cancelled)) return { _tag: "Cancelled", task: yield* settle(cancelled.value, now) } as const
          const current = yield* sql`SELECT status FROM ${t.tasks}
            WHERE id = ${id} AND account_id = ${accountId} AND ${ofEnvironment(environment)}`.pipe(
            Effect.flatMap(rows.status.first)
          )
          return Option.match(current, {
            onNone: () => ({ _tag: "NotFound" }) as const,
            onSome: ({ status }) => ({ _tag: "NotCancellable", status }) as const
          })
        }))
      }).pipe(persistence("cancel"), Effect.tap((result) => result._tag === "Cancelled" ? outboxWake : Effect.void))

    const heartbeat: TaskStorage["Type"]["heartbeat"] = (owner, leaseMs) =>
      Effect.flatMap(withClock, (clock) =>
        sql`${clock} UPDATE ${t.tasks} SET lease_expires_at = ${NOW} + ${ms(leaseMs)}
          WHERE lease_owner = ${owner} AND ${ACTIVE} RETURNING id`).pipe(
          Effect.map((updated) => updated.length),
          persistence("heartbeat")
        )

    const releaseAll: TaskStorage["Type"]["releaseAll"] = (owner) =>
      sql.withTransaction(Effect.gen(function*() {
        const released = yield* sql`${yield* withClock} UPDATE ${t.tasks} SET lease_owner = NULL, lease_expires_at = NULL,
            next_run_at = CASE WHEN next_run_at IS NULL OR next_run_at > ${NOW} THEN ${NOW} ELSE next_run_at END
          WHERE lease_owner = ${owner} AND ${ACTIVE} RETURNING id`
        if (released.length > 0) yield* notify
        return released.length
      })).pipe(persistence("releaseAll"), Effect.tap(() => wake))

    const markDue: TaskStorage["Type"]["markDue"] = (ids) =>
      Effect.suspend(() => {
        const valid = ids.filter((id) => !hasNul(id))
        // due in creation order (`created_at`, or now if that is later): a task whose job is done goes before the
        // tasks accepted after it, so that finishing keeps up while new tasks pour in; one statement, the wakeup of
        // other processes on it (PostgreSQL: sent only when a task was made due)
        const due = sql.literal(`CASE WHEN created_at < (SELECT now FROM clock) THEN created_at ELSE (SELECT now FROM clock) END`)
        return valid.length === 0 ? Effect.void : Effect.flatMap(withClock, (clock) =>
          sql`${clock} UPDATE ${t.tasks}
            SET next_run_at = CASE WHEN next_run_at IS NULL OR next_run_at > ${due} THEN ${due} ELSE next_run_at END
            WHERE ${sql.in("id", valid)} AND ${ACTIVE}${notifying}`)
      }).pipe(persistence("markDue"), Effect.zipRight(wake), Effect.asVoid)

    // the earliest due time: unleased tasks by `next_run_at` (due index), leased ones (lease index) once their
    // lease runs out
    const nextDueAt: TaskStorage["Type"]["nextDueAt"] = Effect.flatMap(withClock, (clock) =>
      sql`${clock} SELECT
        (SELECT next_run_at FROM ${t.tasks}
          WHERE ${ACTIVE} AND next_run_at IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})
          ORDER BY next_run_at LIMIT 1) AS unleased,
        (SELECT MIN(CASE WHEN next_run_at > lease_expires_at THEN next_run_at ELSE lease_expires_at END) FROM ${t.tasks}
          WHERE lease_owner IS NOT NULL AND ${ACTIVE} AND next_run_at IS NOT NULL AND lease_expires_at > ${NOW}
        ) AS leased`).pipe(
        Effect.flatMap(rows.due.single),
        Effect.map(({ leased, unleased }) => {
          const candidates = [unleased, leased].filter((n) => n !== null)
          return candidates.length === 0 ? Option.none<number>() : Option.some(Math.min(...candidates))
        }),
        persistence("nextDueAt")
      )

    // an entry's columns and its task's environment (tasks are never deleted; `live` should one be missing)
    const outboxColumns = sql.literal(
      "o.seq, o.account_id, o.task_id, o.webhook_url, o.event, o.created_at, COALESCE(t.environment, 'live') AS environment"
    )
    const readOutbox: TaskStorage["Type"]["readOutbox"] = (cursor, limit) =>
      Effect.gen(function*() {
        const size = Math.max(0, Math.floor(limit))
        if (!pg) {
          // one writer at a time: sequence order is commit order
          const after = Math.max(0, Math.floor(Number(cursor ?? "0") || 0))
          const read = yield* sql`SELECT ${outboxColumns} FROM ${t.outbox} o LEFT JOIN ${t.tasks} t ON t.id = o.task_id
            WHERE o.seq > ${after} ORDER BY o.seq LIMIT ${size}`.pipe(Effect.flatMap(rows.outbox.all))
          return { entries: read.map(outboxEntry), cursor: String(read.at(-1)?.seq ?? after) }
        }
        // PostgreSQL: concurrent transactions commit out of sequence order, so a reader walks (txid, seq) and only
        // up to the oldest transaction still running: nothing can appear behind such a cursor later
        const [lastTxid = 0, lastSeq = 0] = (cursor ?? "0:0").split(":").map((part) => Math.max(0, Math.floor(Number(part) || 0)))
        // the horizon, and whether committed entries are held back by it (the reader then looks again shortly)
        const { heldBack, horizon } = yield* sql.unsafe(`WITH hz AS (${outboxHorizon(prefix)})
          SELECT hz.horizon, EXISTS (SELECT 1 FROM ${tables(prefix).outbox} WHERE txid >= hz.horizon) AS held FROM hz`).pipe(
          Effect.flatMap(rows.horizon.single)
        )
        const read = yield* sql`SELECT o.txid, ${outboxColumns} FROM ${t.outbox} o LEFT JOIN ${t.tasks} t ON t.id = o.task_id
          WHERE (o.txid > ${lastTxid} OR (o.txid = ${lastTxid} AND o.seq > ${lastSeq})) AND o.txid < ${horizon}
          ORDER BY o.txid, o.seq LIMIT ${size}`.pipe(Effect.flatMap(rows.outbox.all))
        const last = read.at(-1)
        return {
          entries: read.map(outboxEntry),
          cursor: last === undefined ? `${lastTxid}:${lastSeq}` : `${last.txid ?? lastTxid}:${last.seq}`,
          heldBack
        }
      }).pipe(persistence("readOutbox"))

    const pruneIdempotency: TaskStorage["Type"]["pruneIdempotency"] = (before) =>
      Effect.suspend(() =>
        sql`DELETE FROM ${t.idempotency} WHERE created_at < ${Math.floor(before)} RETURNING account_id`
      ).pipe(Effect.map((pruned) => pruned.length), persistence("pruneIdempotency"))

    // retention (added for issue 13): outbox entries behind the dispatcher's cursor, result scans and sizes
    const retentionRows = SqlRows.decoder(tables(prefix).tasks, TaskRow.pick("id", "accountId", "status", "result"))
    const pruneOutbox: TaskStorage["Type"]["pruneOutbox"] = (cursor, before) =>
      Effect.suspend(() => {
        if (cursor === undefined) return Effect.succeed([])
        const written = Math.floor(before)
        if (!pg) {
          const passed = Math.max(0, Math.floor(Number(cursor) || 0))
          return sql`DELETE FROM ${t.outbox} WHERE seq <= ${passed} AND created_at < ${written} RETURNING seq`
        }
        // the cursor walks (txid, seq): everything at or before it has been read
        const [txid = 0, seq = 0] = cursor.split(":").map((part) => Math.max(0, Math.floor(Number(part) || 0)))
        return sql`DELETE FROM ${t.outbox} WHERE (txid < ${txid} OR (txid = ${txid} AND seq <= ${seq}))
          AND created_at < ${written} RETURNING seq`
      }).pipe(Effect.map((pruned) => pruned.length), persistence("pruneOutbox"))
    const scanResults: TaskStorage["Type"]["scanResults"] = (environment, afterId, beforeId, limit) =>
      Effect.suspend(() =>
        sql`SELECT id, account_id, status, result FROM ${t.tasks}
          WHERE id > ${afterId ?? ""} AND id < ${beforeId} AND environment = ${environment}
          ORDER BY id LIMIT ${Math.max(0, Math.floor(limit))}`
      ).pipe(Effect.flatMap(retentionRows.all), persistence("scanResults"))
    const resultBytes: TaskStorage["Type"]["resultBytes"] = (accountId, environment, sinceId) =>
      Effect.suspend(() =>
        hasNul(accountId, sinceId)
          ? Effect.succeed([])
          : sql`SELECT id, account_id, status, result FROM ${t.tasks}
          WHERE account_id = ${accountId} AND status = 'succeeded' AND id >= ${sinceId} AND environment = ${environment}`
            .pipe(Effect.flatMap(retentionRows.all))
      ).pipe(
        Effect.map((found) => found.reduce((total, task) => total + resultSize(task.result), 0)),
        persistence("resultBytes")
      )

    /** The in-flight counts (added for the rate limits): the account's from the counters, the key's by the index. */
    const activeCounts: TaskStorage["Type"]["activeCounts"] = (accountId, keyId) =>
      sql<{ readonly account: number | string | null; readonly key: number | string | null }>`SELECT
  (SELECT COALESCE(SUM(CASE WHEN dim = 'status_in' THEN n ELSE -n END), 0) FROM ${t.counts}
    WHERE account_id = ${accountId} AND dim IN ('status_in', 'status_out') AND value IN ${sql.literal(activeList)}) AS account,
  (SELECT COUNT(*) FROM ${t.tasks} WHERE account_id = ${accountId} AND ${ACTIVE} AND key_id = ${keyId}) AS ${sql("key")}`.pipe(
        Effect.map(([row]) => ({ account: Number(row?.account ?? 0), key: Number(row?.key ?? 0) })),
        persistence("activeCounts")
      )

    /**
     * Operators (issue 14): every account's tasks per state from the counters (summed over accounts and shards) and
     * the active tasks due now and not leased (the due index).
     */
    const overview: TaskStorage["Type"]["overview"] = Effect.gen(function*() {
      const clock = yield* withClock
      const [counted, [due]] = yield* Effect.all([
        sql`SELECT value, SUM(CASE WHEN dim = 'status_in' THEN n ELSE -n END) AS n FROM ${t.counts}
          WHERE dim IN ('status_in', 'status_out') GROUP BY value`.pipe(Effect.flatMap(rows.byStatus.all)),
        sql`${clock} SELECT COUNT(*) AS n FROM ${t.tasks}
          WHERE ${ACTIVE} AND next_run_at <= ${NOW} AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})`.pipe(
          Effect.flatMap(rows.count.all)
        )
      ], { concurrency: 2 })
      const byStatus = Object.fromEntries(Task.taskStatuses.map((status) => [status, 0])) as Record<Task.TaskStatus, number>
      for (const { n, value } of counted) if (value in byStatus) byStatus[value as Task.TaskStatus] = n
      return { byStatus, due: due?.n ?? 0 }
    }).pipe(persistence("overview"))

    /** The node registry: one upsert per heartbeat, `last_seen_at` (and `started_at` on the first) the storage clock. */
    const beatNode: TaskStorage["Type"]["beatNode"] = (beat) =>
      Effect.flatMap(nowSql, (now) =>
        sql`INSERT INTO ${t.nodes} (id, host, pid, concurrency, heartbeat_ms, leases, started_at, last_seen_at,
            apart_from)
          VALUES (${beat.id}, ${beat.host}, ${Math.floor(beat.pid)}, ${Math.floor(beat.concurrency)},
            ${ms(beat.heartbeatMs)}, ${Math.floor(beat.leases)}, ${now}, ${now}, ${beat.apartFrom?.join(" ") || null})
          ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, concurrency = excluded.concurrency,
            heartbeat_ms = excluded.heartbeat_ms, leases = excluded.leases, last_seen_at = excluded.last_seen_at,
            apart_from = excluded.apart_from`).pipe(
        Effect.asVoid,
        persistence("beatNode")
      )

    const removeNode: TaskStorage["Type"]["removeNode"] = (id) =>
      sql`DELETE FROM ${t.nodes} WHERE id = ${id}`.pipe(Effect.asVoid, persistence("removeNode"))

    const nodes: TaskStorage["Type"]["nodes"] = (dropBefore) =>
      sql`DELETE FROM ${t.nodes} WHERE last_seen_at < ${ms(dropBefore)}`.pipe(
        Effect.zipRight(sql`SELECT * FROM ${t.nodes} ORDER BY started_at, id`),
        Effect.flatMap(rows.node.all),
        persistence("nodes")
      )

    /**
     * A channel slot: the fenced write of the channel, only while fewer than `limit` other active tasks are on it.
     * SQLite runs one write statement at a time, so the count and the write are atomic; PostgreSQL serializes the
     * reservations of one channel with a transaction-scoped advisory lock taken before the statement (whose
     * snapshot then sees every reservation committed before it).
     */
    const reserveChannel: TaskStorage["Type"]["reserveChannel"] = (id, fence, channelId, limit) =>
      Effect.suspend(() => {
        if (!Number.isSafeInteger(fence) || hasNul(id, channelId)) return Effect.succeed(false)
        const capped = limit > 0
          ? sql`AND (SELECT COUNT(*) FROM ${t.tasks} WHERE channel_id = ${channelId} AND ${ACTIVE} AND id <> ${id}) < ${
            Math.floor(limit)
          }`
          : sql.literal("")
        const write = sql`UPDATE ${t.tasks} SET channel_id = ${channelId}
          WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND ${ACTIVE} ${capped}
          RETURNING id`.pipe(Effect.map((written) => written.length > 0))
        return pg && limit > 0
          ? sql.withTransaction(Effect.zipRight(sql`SELECT pg_advisory_xact_lock(hashtext(${`${prefix}channel:${channelId}`}))`, write))
          : write
      }).pipe(persistence("reserveChannel"))

    const noteJob: TaskStorage["Type"]["noteJob"] = (id, channelId, jobOf) =>
      Effect.gen(function*() {
        if (hasNul(id, channelId)) return false
        const [known] = yield* sql`SELECT model, upstream_job_id FROM ${t.tasks} WHERE id = ${id} AND ${ACTIVE}`.pipe(
          Effect.flatMap(rows.noted.all)
        )
        if (known === undefined || (known.upstreamJobId !== null && markedAt(known.upstreamJobId) === undefined)) {
          return false
        }
        // written only over what was read: a job recorded meanwhile (the submit's own step) is kept
        const same = known.upstreamJobId === null ? sql`upstream_job_id IS NULL` : sql`upstream_job_id = ${known.upstreamJobId}`
        const written = yield* sql`UPDATE ${t.tasks} SET upstream_job_id = ${jobOf(known.model)}, channel_id = ${channelId}
          WHERE id = ${id} AND ${ACTIVE} AND ${same} RETURNING id`
        return written.length > 0
      }).pipe(persistence("noteJob"))

    const channelUsage: TaskStorage["Type"]["channelUsage"] = (since) =>
      sql`SELECT channel_id, model, COUNT(*) AS tasks,
          SUM(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END) AS succeeded,
          SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
          SUM(charged_micros - refunded_micros) AS charged_micros,
          COALESCE(SUM(upstream_seconds), 0) AS upstream_seconds,
          COALESCE(SUM(upstream_cost_micros), 0) AS upstream_cost_micros,
          COUNT(upstream_cost_micros) AS reported
        FROM ${t.tasks}
        WHERE channel_id IS NOT NULL AND environment = 'live' AND status IN ${sql.literal(terminalList)}
          AND created_at >= ${ms(since)}
        GROUP BY channel_id, model ORDER BY channel_id, model`.pipe(
        Effect.flatMap(rows.channelUsage.all),
        persistence("channelUsage")
      )

    const channelLoad: TaskStorage["Type"]["channelLoad"] = sql`SELECT channel_id, COUNT(*) AS n FROM ${t.tasks}
      WHERE channel_id IS NOT NULL AND ${ACTIVE} GROUP BY channel_id`.pipe(
      Effect.flatMap(rows.channelLoad.all),
      Effect.map((loads) => new Map(loads.map(({ channelId, n }) => [channelId, n]))),
      persistence("channelLoad")
    )

    // without a client that can LISTEN (SQLite), wakeups are local only (workers still poll)
    // a lost LISTEN connection (restart, killed backend) is found by a probe and opened again; wakeups never fail
    const remote = Listen.notifications(client, channel)
    const remoteOutbox = Listen.notifications(client, outboxName)

    const getOperation = persistence("get")
    const getByIdOperation = persistence("getById")
    const service: TaskStorage["Type"] = {
      now: persistence("now")(currentTime),
      accept,
      get: (accountId, id, environment) =>
        hasNul(accountId, id)
          ? Effect.succeedNone
          : readTask(id).pipe(Effect.map(Option.filter((task) => ownedBy(task, accountId, environment))), getOperation),
      getById: (id) => hasNul(id) ? Effect.succeedNone : getByIdOperation(readTask(id)),
      list,
      claim,
      step,
      finish,
      cancel,
      heartbeat,
      releaseAll,
      markDue,
      nextDueAt,
      readOutbox,
      pruneIdempotency,
      pruneOutbox,
      scanResults,
      resultBytes,
      activeCounts,
      overview,
      beatNode,
      removeNode,
      nodes,
      wakeups: Stream.merge(Stream.fromPubSub(signals), remote),
      outboxWakeups: Stream.merge(Stream.fromPubSub(outboxSignals), remoteOutbox),
      reserveChannel,
      noteJob,
      channelLoad,
      channelUsage
    }
    return service
  })

/** The SQL storage as a layer (runs the migrations). */
export const layer = (
  options: SqlOptions = {}
): Layer.Layer<
  TaskStorage | Ports,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | Billing
> => Layer.provideMerge(layerPorts, Layer.scoped(TaskStorage, make(options)))
