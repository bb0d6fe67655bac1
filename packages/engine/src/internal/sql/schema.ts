/**
 * The SQL task storage's tables and migrations (SQLite and PostgreSQL), under the store's table prefix.
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { Task } from "@mediagate/contract"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import { createSearch, createSearchCounts } from "./search.js"

/** The tables of the storage under `prefix`. */
export const tables = (prefix: string = SqlStore.defaultPrefix) =>
  ({
    tasks: `${prefix}tasks`,
    idempotency: `${prefix}task_idempotency`,
    outbox: `${prefix}task_outbox`,
    counts: `${prefix}task_counts`,
    /** The prompts' search table (search.ts): SQLite's FTS5 table, PostgreSQL's documents. */
    search: `${prefix}task_search`,
    nodes: `${prefix}nodes`
  }) as const

/** The tables of the storage under `prefix` that only PostgreSQL has: the counts of the prompts' words (search.ts). */
export const pgTables = (prefix: string = SqlStore.defaultPrefix) =>
  ({
    searchCounts: `${prefix}task_search_counts`
  }) as const

/** The table the engine's migrations are recorded in: `<prefix>engine_migrations`. */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}engine_migrations`

/** The PostgreSQL `NOTIFY` channel of wakeups: `<prefix>tasks`. */
export const wakeupChannel = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}tasks`

/** The PostgreSQL `NOTIFY` channel of outbox writes (terminal transitions, for the webhook dispatcher): `<prefix>outbox`. */
export const outboxChannel = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}outbox`

export const storeName = "task storage"

/** The SQL list of the active statuses; one string so that queries match the partial index predicate exactly. */
export const activeList = "('pending', 'queued', 'running')"
/** The terminal statuses, as an SQL list. */
export const terminalList = "('succeeded', 'failed', 'cancelled', 'expired')"

// -----------------------------------------------------------------------------------------------------------------
// migrations
// -----------------------------------------------------------------------------------------------------------------

export const createTables = (prefix: string) =>
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
export const countKey = (environments: boolean, prefix = "") =>
  environments ? `${prefix}account_id, ${prefix}environment` : `${prefix}account_id`

/** PostgreSQL: the count rows of one account, dimension and value are spread over this many shards. */
export const countShards = 8

/** The (dimension, value) pairs a task row `r` counts in (a `VALUES` list; `status` is signed, see below). */
export const countDimensions = (r: string) =>
  `VALUES ('all', ''), ('provider', ${r}.provider), ('model', ${r}.model), ('status', ${r}.status)`

/**
 * PostgreSQL: a trigger function adding the net count change of one statement, given as `deltas` (rows
 * `account_id, dim, value, n` with a signed `n`; dimension `status` signed), to the counts. The change is summed per
 * (account, dimension, value) first, so a statement writes each count row at most once, and the rows are written
 * in one order (account, dimension, value): concurrent statements take their count rows' locks in that order and
 * cannot deadlock on them. A status that gains tasks counts in `status_in`, one that loses tasks in `status_out`:
 * accepts (`status_in` of pending) and transitions (`status_out` of the status left) never write the same row.
 */
export const pgCountFunction = (name: string, counts: string, deltas: string, environments: boolean) =>
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
export const pgDeltas = (rows: string, sign: 1 | -1, environments: boolean) =>
  `SELECT ${countKey(environments, "r.")}, d.dim, d.value, ${sign} AS n FROM ${rows} AS r
    CROSS JOIN LATERAL (${countDimensions("r")}) AS d (dim, value)`

/** SQLite: one upsert of count rows (`(account_id, dim, value, shard, n)` tuples) in a trigger. */
export const sqliteCountUpsert = (counts: string, tuples: ReadonlyArray<string>, environments: boolean) =>
  `INSERT INTO ${counts} (${countKey(environments)}, dim, value, shard, n) VALUES ${tuples.join(", ")}
    ON CONFLICT (${countKey(environments)}, dim, value, shard) DO UPDATE SET n = n + excluded.n;`

/** SQLite: the count tuples a task row adds (`NEW`) or takes away (`OLD`). */
export const sqliteCountTuples = (row: "NEW" | "OLD", environments: boolean) => {
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
export const createCounts = (prefix: string, environments: boolean) =>
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
export const countByEnvironment = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = tables(prefix)
    if (SqlStore.columns(sql).pg) {
      for (const name of ["insert", "update", "delete", "truncate"]) {
        yield* sql.unsafe(`DROP FUNCTION ${t.tasks}_count_${name}() CASCADE`)
      }
    } else {
      for (const name of ["insert", "status", "move", "delete"]) {
        yield* sql.unsafe(`DROP TRIGGER ${t.tasks}_count_${name}`)
      }
    }
    yield* sql.unsafe(`DROP TABLE ${t.counts}`)
    yield* createCounts(prefix, true)
    yield* sql.unsafe(
      `CREATE INDEX ${t.tasks}_account_environment_idx ON ${t.tasks} (account_id, environment, id DESC)`
    )
  })

/**
 * `<prefix>nodes`: the processes running workers, written by each one's heartbeat (one upsert per beat; times are
 * the storage clock), read by the operators' system status (`TaskAdmin`).
 */
export const createNodes = (prefix: string) =>
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
      // test and live tasks apart (decisions.md §5): list totals and the list index per environment
      "0009_task_counts_environment": countByEnvironment(prefix),
      // the node that accepted a task (claims of nodes apart from it skip it) and the nodes a node is apart from
      "0010_task_node": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN node_id TEXT`),
          sql.unsafe(`ALTER TABLE ${t.nodes} ADD COLUMN apart_from TEXT`)
        )),
      // the claim that began submitting a task without a job (a worker that died while submitting is noticed)
      "0011_task_submit_fence": Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN submit_fence BIGINT`)
      ),
      // what the upstream reported of a task's job besides its state (queue position, log lines; JSON)
      "0012_task_upstream_report": Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN upstream_report TEXT`)
      ),
      // the list's search by the words of the prompt (search.ts)
      "0013_task_search": createSearch(t),
      // when a task's visible state last changed (the account's event stream reads the changes in that order);
      // tasks written before it keep NULL until their next change
      "0014_task_changed_at": Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN changed_at BIGINT`),
          sql.unsafe(
            `CREATE INDEX ${t.tasks}_changes_idx ON ${t.tasks} (account_id, changed_at, id) WHERE changed_at IS NOT NULL`
          )
        )),
      // PostgreSQL: the counts of the prompts' words, for the total of a search for one word (search.ts)
      "0015_task_search_counts": createSearchCounts({ ...t, counts: pgTables(prefix).searchCounts }, countShards),
      // the claim (its fence) during which an upstream's change made a leased task due: that claim's step keeps it due
      "0016_task_woken_fence": Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe(`ALTER TABLE ${t.tasks} ADD COLUMN woken_fence BIGINT`)
      )
    }
  })

/**
 * Runs the engine's migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)
