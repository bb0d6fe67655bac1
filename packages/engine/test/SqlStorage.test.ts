import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { Task } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Billing, layerUnmetered } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { fromNew, type TaskRecord, toEvent } from "../src/TaskRecord.js"
import { type ListQuery, TaskStorage } from "../src/TaskStorage.js"
import { pgAvailable, pgClient, pgNotRunning, pgSchema, postgres, runPostgres, sqlite } from "./databases.js"
import { stateMachineProperty } from "./StateMachineProperty.js"
import { chargeOf, makeRecordingBilling, newTask } from "./support.js"
import { type Backend, taskStorageSuite } from "./TaskStorageSuite.js"

const notRunning = `${pgNotRunning}: its tests are skipped`

/** The ids of every engine migration, in order (what a migrated database records). */
const migrationIds = Effect.map(SqlTaskStorage.migrations(), (all) => all.map(([id]) => id))
if (!runPostgres) console.warn(notRunning)

type Database = () => Layer.Layer<SqlClient.SqlClient, unknown>

const databases: ReadonlyArray<readonly [string, Database]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

// -----------------------------------------------------------------------------------------------------------------
// the conformance suite
// -----------------------------------------------------------------------------------------------------------------

const sqliteBackend: Backend = (billing) =>
  SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(sqlite(), billing)))
const postgresBackend: Backend = (billing) =>
  SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(postgres(), billing)))

taskStorageSuite("sqlite", sqliteBackend)
stateMachineProperty("sqlite", sqliteBackend, 100)

if (runPostgres) {
  taskStorageSuite("postgres", postgresBackend)
  stateMachineProperty("postgres", postgresBackend, 25)
}

describe("taskRowOf", () => {
  const base = fromNew(newTask({ createdAt: 1_764_000_000_000, metadata: { order: 7, vip: true, note: null } }))
  const records: ReadonlyArray<TaskRecord> = [
    base,
    {
      ...base,
      status: "succeeded",
      progress: 100,
      result: [
        { url: "https://files.example/a.mp4", duration: 5, format: "mp4", size_bytes: 32_768, kind: "output" },
        { url: "https://files.example/a.png", format: "png", size_bytes: 1_024, width: 1280, height: 720 }
      ],
      upstreamJobId: "job_1",
      channelId: "chan_a",
      traceContext: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      fence: 3,
      leaseOwner: "node_1",
      leaseExpiresAt: 1_764_000_060_000,
      nextRunAt: null,
      polls: 4,
      startedAt: 1_764_000_001_000,
      completedAt: 1_764_000_030_000,
      refundedMicros: 1_000
    },
    {
      ...base,
      status: "failed",
      error: { code: "UPSTREAM_ERROR", message: "the upstream said no" },
      webhookUrl: "https://hooks.example/x"
    }
  ]

  it("writes what the TaskRow Schema encodes, every column in taskColumns' order", () => {
    const encode = Schema.encodeSync(SqlTaskStorage.TaskRow)
    for (const record of records) {
      const row = Either.getOrThrow(SqlTaskStorage.taskRowOf(record))
      expect(Object.keys(row)).toEqual([...SqlTaskStorage.taskColumns])
      expect(row).toEqual(encode(record))
    }
    // a record read from a row without the later columns: they are written as null, their default
    const { channelId: _channel, traceContext: _trace, ...older } = base
    const encoded = encode(older)
    assert.isFalse("trace_context" in encoded)
    expect(Either.getOrThrow(SqlTaskStorage.taskRowOf(older))).toEqual({
      ...encoded,
      trace_context: null,
      channel_id: null
    })
  })

  it("fails where the Schema fails: a result or error its Schema refuses", () => {
    const badResult = { ...base, result: [{ url: 7 }] } as unknown as TaskRecord
    const badError = { ...base, error: { code: "X" } } as unknown as TaskRecord
    for (const record of [badResult, badError]) {
      assert.isTrue(Either.isLeft(SqlTaskStorage.taskRowOf(record)))
      assert.isTrue(Either.isLeft(Schema.encodeEither(SqlTaskStorage.TaskRow)(record)))
    }
  })
})

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})

// -----------------------------------------------------------------------------------------------------------------
// SQL-only behaviour, on every database
// -----------------------------------------------------------------------------------------------------------------

/** A billing port writing to a table on the storage's own client, so it commits and rolls back with it. */
const sqlBilling = (refusedRefunds: string) =>
  Layer.effect(
    Billing,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE ledger (task_id TEXT NOT NULL, amount BIGINT NOT NULL)`
      const write = (taskId: string, amount: number) =>
        sql`INSERT INTO ledger (task_id, amount) VALUES (${taskId}, ${amount})`.pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new PersistenceError({ message: "ledger", cause }))
        )
      return {
        charge: (charge) => write(charge.taskId, charge.amountMicros),
        refund: (refund) =>
          refund.accountId === refusedRefunds
            ? Effect.zipRight(
              write(refund.taskId, -refund.amountMicros),
              new PersistenceError({ message: "ledger down" })
            )
            : write(refund.taskId, -refund.amountMicros)
      }
    })
  )

const ledgerOf = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ task_id: string; amount: number | string }>`SELECT task_id, amount FROM ledger`
).pipe(
  Effect.map((rows) => rows.map((r) => [r.task_id, Number(r.amount)] as const))
)

for (const [name, database] of databases) {
  describe(`SqlTaskStorage on ${name}`, () => {
    /** The storage on a fresh database (the database clock unless `clock` is given), with the client in context. */
    const withStorage = (billing: Layer.Layer<Billing, unknown, SqlClient.SqlClient> = layerUnmetered) => {
      const db = database()
      return Layer.provideMerge(SqlTaskStorage.layer(), Layer.provideMerge(billing, db))
    }

    it.live("database clock: claims a just-accepted task and takes a lapsed lease over", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const now = yield* storage.now
        expect(Math.abs(now - Date.now())).toBeLessThan(5_000)
        const task = newTask({ createdAt: now })
        yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        const [claimed] = yield* storage.claim("w1", 5, 200)
        expect(claimed).toMatchObject({ id: task.id, status: "queued", fence: 1, leaseOwner: "w1" })
        // one reading of the clock per statement
        expect(claimed!.leaseExpiresAt! - claimed!.startedAt!).toBe(200)
        expect(yield* storage.claim("w2", 5, 200)).toEqual([])
        expect(yield* storage.nextDueAt).toEqual(Option.some(claimed!.leaseExpiresAt!))
        yield* Effect.sleep("300 millis")
        const [taken] = yield* storage.claim("w2", 5, 200)
        expect(taken).toMatchObject({ id: task.id, fence: 2, leaseOwner: "w2", startedAt: claimed!.startedAt })
        assert.isTrue(Option.isNone(yield* storage.finish(task.id, 1, { _tag: "Succeeded", result: [] })))
        const done = Option.getOrThrow(yield* storage.finish(task.id, 2, { _tag: "Succeeded", result: [] }))
        expect(done.status).toBe("succeeded")
        expect(done.completedAt!).toBeGreaterThanOrEqual(taken!.startedAt!)
        const [event] = (yield* storage.readOutbox(undefined, 10)).entries
        expect(event!.event.created_at).toBe(new Date(done.completedAt!).toISOString())
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("an SQL billing on the same client commits and rolls back with the storage", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const now = yield* storage.now
        const task = newTask({ createdAt: now })
        yield* storage.accept({ task, charge: chargeOf(task), idempotency: undefined })
        // the same id again: the insert fails after the charge, and the charge goes with it
        const duplicate = yield* Effect.flip(storage.accept({ task, charge: chargeOf(task), idempotency: undefined }))
        assert.instanceOf(duplicate, PersistenceError)
        expect(duplicate.message).not.toMatch(/UNIQUE|duplicate|constraint/i)
        expect(yield* ledgerOf).toEqual([[task.id, 3_200_000]])
        // a refund that fails leaves the task as it was, without an event
        const unlucky = newTask({ createdAt: now, accountId: "acct_unlucky" })
        yield* storage.accept({ task: unlucky, charge: chargeOf(unlucky), idempotency: undefined })
        const failed = yield* Effect.exit(storage.cancel("acct_unlucky", unlucky.id))
        assert.isTrue(Exit.isFailure(failed))
        expect(Option.getOrThrow(yield* storage.getById(unlucky.id)).status).toBe("pending")
        expect((yield* storage.readOutbox(undefined, 10)).entries).toEqual([])
        // a refund that works is recorded with the state and the event
        assert.strictEqual((yield* storage.cancel("acct_a", task.id))._tag, "Cancelled")
        expect(yield* ledgerOf).toEqual([[task.id, 3_200_000], [unlucky.id, 3_200_000], [task.id, -3_200_000]])
        expect((yield* storage.readOutbox(undefined, 10)).entries.map((e) => e.taskId)).toEqual([task.id])
      }).pipe(Effect.provide(withStorage(sqlBilling("acct_unlucky"))), Effect.scoped))

    it.live("storage failures are PersistenceErrors, not defects", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const sql = yield* SqlClient.SqlClient
        yield* sql`DROP TABLE ${sql(SqlTaskStorage.tables().tasks)}`
        for (
          const effect of [
            storage.getById("task_x"),
            storage.list("acct_a", { limit: 10 }),
            storage.claim("w1", 1, 1000),
            storage.finish("task_x", 1, { _tag: "Expired" }),
            storage.cancel("acct_a", "task_x"),
            storage.nextDueAt
          ] as const
        ) {
          // a defect would fail the test here
          const error = yield* Effect.flip(effect as Effect.Effect<unknown, PersistenceError>)
          assert.instanceOf(error, PersistenceError)
          expect(error.message).not.toMatch(/tasks|table|relation/i)
        }
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("a corrupt row is a PersistenceError naming its table and column, not a defect", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const sql = yield* SqlClient.SqlClient
        const tasks = SqlTaskStorage.tables().tasks
        const task = newTask({ createdAt: yield* storage.now })
        yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        // a value the CHECK constraint would refuse, written behind the storage's back
        yield* sql.onDialectOrElse({
          pg: () => sql.unsafe(`ALTER TABLE ${tasks} DROP CONSTRAINT ${tasks}_status_check`),
          orElse: () => sql.unsafe("PRAGMA ignore_check_constraints = ON")
        })
        yield* sql`UPDATE ${sql(tasks)} SET status = 'bogus' WHERE id = ${task.id}`
        const status = yield* Effect.flip(storage.getById(task.id))
        assert.instanceOf(status, PersistenceError)
        expect(status.message).toBe(
          `task storage: getById failed: ${tasks}.status: Expected "pending" | "queued" | "running" | "succeeded" | ` +
            `"failed" | "cancelled" | "expired", actual "bogus"`
        )
        assert.instanceOf(status.cause, SqlRows.RowError)
        expect(status.cause).toMatchObject({ table: tasks, column: "status" })
        yield* sql`UPDATE ${sql(tasks)} SET status = 'pending', input = ${"{oops"} WHERE id = ${task.id}`
        const input = yield* Effect.flip(storage.list("acct_a", { limit: 5 }))
        expect(input.message).toMatch(new RegExp(`^task storage: list failed: ${tasks}\\.input: `))
        expect(input.cause).toMatchObject({ _tag: "RowError", table: tasks, column: "input" })
        yield* sql`UPDATE ${sql(tasks)} SET input = '{}', result = ${"[{\"url\":3}]"} WHERE id = ${task.id}`
        const result = yield* Effect.flip(storage.claim("w1", 5, 1000))
        expect(result.message).toBe(`task storage: claim failed: ${tasks}.result[0].url: Expected string, actual 3`)
        expect(result.cause).toMatchObject({ _tag: "RowError", table: tasks, column: "result" })
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("ids with NUL match nothing (no database error)", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const task = newTask({ createdAt: yield* storage.now })
        yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        assert.isTrue(Option.isNone(yield* storage.getById("task_\u0000")))
        assert.isTrue(Option.isNone(yield* storage.get("acct_a", "task_\u0000")))
        expect(yield* storage.cancel("acct_a", "task_\u0000")).toEqual({ _tag: "NotFound" })
        expect((yield* storage.list("acct_a", { limit: 5, idPrefix: "task_\u0000" })).total).toBe(0)
        expect((yield* storage.list("acct_a", { limit: 5, beforeId: "task_\u0000" })).items).toEqual([])
        const page = yield* storage.list("acct_a", { limit: 5, beforeId: `${task.id}\u0000x` })
        expect(page.items.map((t) => t.id)).toEqual([task.id])
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("migrations run once; a second storage on the same database reuses them", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const first = yield* TaskStorage
        const task = newTask({ createdAt: yield* first.now })
        yield* first.accept({ task, charge: undefined, idempotency: undefined })
        const second = yield* Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(layerUnmetered))).pipe(
          Effect.map(Context.get(TaskStorage))
        )
        assert.isTrue(Option.isSome(yield* second.getById(task.id)))
        const applied = yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${
          sql(SqlTaskStorage.migrationsTable())
        }`
        expect(applied.map((r) => Number(r.migration_id))).toEqual(yield* migrationIds)
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("tasks written before the counts migration are counted by it (backfill); totals stay exact after", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tasks = SqlTaskStorage.tables().tasks
        // the schema before the counts: the engine's first three migrations
        yield* Migrator.make({})({
          loader: Effect.map(SqlTaskStorage.migrations(), (all) => all.filter(([id]) => id <= 3)),
          table: SqlTaskStorage.migrationsTable()
        })
        const at = Date.UTC(2026, 10, 21, 12)
        const statuses = [
          "succeeded",
          "succeeded",
          "failed",
          "pending",
          "queued",
          "running",
          "cancelled",
          "expired"
        ] as const
        const records: Array<TaskRecord> = statuses.flatMap((status, i) =>
          ["acct_a", "acct_b"].slice(0, i % 3 === 0 ? 2 : 1).map((accountId) => ({
            ...fromNew(newTask({
              createdAt: at + i,
              accountId,
              provider: i % 2 === 0 ? "vendor3" : "vendor7",
              model: i % 4 === 0 ? "vendor3-3_fast" : "vendor3-3",
              environment: i % 3 === 1 ? "test" : "live"
            })),
            status
          }))
        )
        const encode = SqlRows.decoder(tasks, SqlTaskStorage.TaskRow).encode
        for (const record of records) {
          // rows of that schema: without the columns of later migrations (trace context, channel, node, ...)
          const later = new Set(["channel_id", "trace_context", "upstream_seconds", "upstream_cost_micros", "node_id"])
          const row = Object.fromEntries(Object.entries(yield* encode(record)).filter(([column]) => !later.has(column)))
          yield* sql`INSERT INTO ${sql(tasks)} ${sql.insert(row)}`
        }
        // the storage runs the counts migration
        const storage = yield* Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(layerUnmetered))).pipe(
          Effect.map(Context.get(TaskStorage))
        )
        const applied = yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${
          sql(SqlTaskStorage.migrationsTable())
        }`
        expect(applied.map((r) => Number(r.migration_id))).toEqual(yield* migrationIds)
        const expectTotals = Effect.gen(function*() {
          const stored = (yield* Effect.forEach(records, (r) => storage.getById(r.id))).flatMap(Option.toArray)
          for (const accountId of ["acct_a", "acct_b", "acct_c"]) {
            const mine = stored.filter((t) => t.accountId === accountId)
            const queries: Array<readonly [ListQuery, (t: TaskRecord) => boolean]> = [
              [{ limit: 2 }, () => true],
              ...Task.taskStatuses.map((status) =>
                [{ limit: 2, status }, (t: TaskRecord) => t.status === status] as const
              ),
              [{ limit: 2, provider: "vendor7" }, (t) => t.provider === "vendor7"],
              [{ limit: 2, model: "vendor3-3_fast" }, (t) => t.model === "vendor3-3_fast"],
              [
                { limit: 2, status: "succeeded", provider: "vendor3" },
                (t) => t.status === "succeeded" && t.provider === "vendor3"
              ],
              // per environment (migration 0009 counts them apart)
              ...(["live", "test"] as const).flatMap((environment) => [
                [{ limit: 2, environment }, (t: TaskRecord) => t.environment === environment] as const,
                [
                  { limit: 2, environment, provider: "vendor7" },
                  (t: TaskRecord) => t.environment === environment && t.provider === "vendor7"
                ] as const,
                [
                  { limit: 2, environment, status: "succeeded" },
                  (t: TaskRecord) => t.environment === environment && t.status === "succeeded"
                ] as const
              ])
            ]
            for (const [query, matches] of queries) {
              expect((yield* storage.list(accountId, query)).total, `${accountId} ${JSON.stringify(query)}`).toBe(
                mine.filter(matches).length
              )
            }
          }
        })
        yield* expectTotals
        // later writes keep them exact
        const [claimed] = yield* storage.claim("w1", 1, 60_000)
        assert.isTrue(
          Option.isSome(
            yield* storage.finish(claimed!.id, claimed!.fence, { _tag: "Failed", error: { code: "X", message: "x" } })
          )
        )
        const added = newTask({ createdAt: yield* storage.now, accountId: "acct_c" })
        yield* storage.accept({ task: added, charge: undefined, idempotency: undefined })
        records.push(fromNew(added))
        yield* expectTotals
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.live(
      "hand-written SQL on the tasks table keeps the totals exact: the triggers count every write",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const storage = yield* TaskStorage
          const tasks = sql(SqlTaskStorage.tables().tasks)
          const now = yield* storage.now
          const accepted = [
            newTask({ createdAt: now, provider: "vendor3", model: "vendor3-3" }),
            newTask({ createdAt: now + 1, provider: "vendor3", model: "vendor3-3_fast" }),
            newTask({ createdAt: now + 2, provider: "vendor7", model: "vendor3-3" }),
            newTask({ createdAt: now + 3, accountId: "acct_b" })
          ]
          for (const task of accepted) yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          const expectTotals = (label: string) =>
            Effect.gen(function*() {
              for (const accountId of ["acct_a", "acct_b"]) {
                const count = (where: ReturnType<typeof sql.and>) =>
                  sql<
                    { n: string | number }
                  >`SELECT COUNT(*) AS n FROM ${tasks} WHERE account_id = ${accountId} AND ${where}`.pipe(
                    Effect.map((rows) => Number(rows[0]!.n))
                  )
                const queries: Array<readonly [ListQuery, ReturnType<typeof sql.and>]> = [
                  [{ limit: 1 }, sql.and([sql`1 = 1`])],
                  ...Task.taskStatuses.map((status) =>
                    [{ limit: 1, status }, sql.and([sql`status = ${status}`])] as const
                  ),
                  ...["vendor3", "vendor7"].map((provider) =>
                    [{ limit: 1, provider }, sql.and([sql`provider = ${provider}`])] as const
                  ),
                  ...["vendor3-3", "vendor3-3_fast", "m2"].map((model) =>
                    [{ limit: 1, model }, sql.and([sql`model = ${model}`])] as const
                  ),
                  ...(["live", "test"] as const).flatMap((environment) => [
                    [{ limit: 1, environment }, sql.and([sql`environment = ${environment}`])] as const,
                    [
                      { limit: 1, environment, status: "expired" },
                      sql.and([sql`environment = ${environment}`, sql`status = 'expired'`])
                    ] as const
                  ])
                ]
                for (const [query, where] of queries) {
                  expect(
                    (yield* storage.list(accountId, query)).total,
                    `${label}: ${accountId} ${JSON.stringify(query)}`
                  ).toBe(
                    yield* count(where)
                  )
                }
              }
            })
          yield* expectTotals("accepted")
          // several rows in one statement, statuses both ways
          yield* sql`UPDATE ${tasks} SET status = 'failed' WHERE account_id = 'acct_a' AND model = 'vendor3-3'`
          yield* sql`UPDATE ${tasks} SET status = 'pending' WHERE id = ${accepted[0]!.id}`
          yield* expectTotals("statuses")
          // columns the storage never changes: model, provider, the account
          yield* sql`UPDATE ${tasks} SET model = 'm2', provider = 'vendor1' WHERE id = ${accepted[1]!.id}`
          yield* sql`UPDATE ${tasks} SET account_id = 'acct_b', status = 'expired' WHERE id = ${accepted[2]!.id}`
          yield* sql`UPDATE ${tasks} SET environment = 'test' WHERE id = ${accepted[3]!.id}`
          yield* expectTotals("moved")
          yield* sql`DELETE FROM ${tasks} WHERE id = ${accepted[0]!.id}`
          yield* expectTotals("deleted")
          yield* sql.onDialectOrElse({ pg: () => sql`TRUNCATE ${tasks}`, orElse: () => sql`DELETE FROM ${tasks}` })
          yield* expectTotals("emptied")
          yield* storage.accept({ task: newTask({ createdAt: now + 9 }), charge: undefined, idempotency: undefined })
          yield* expectTotals("accepted again")
        }).pipe(Effect.provide(withStorage()), Effect.scoped),
      30_000
    )

    it.live("an accept wakes the local wakeups", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const woke = yield* storage.wakeups.pipe(Stream.take(1), Stream.runDrain, Effect.fork)
        yield* Effect.sleep("20 millis")
        yield* storage.accept({
          task: newTask({ createdAt: yield* storage.now }),
          charge: undefined,
          idempotency: undefined
        })
        yield* Fiber.join(woke).pipe(Effect.timeout("5 seconds"))
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("the hot paths use the indexes", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* TaskStorage
        const tasks = SqlTaskStorage.tables().tasks
        const queries = {
          claim: `SELECT id FROM ${tasks} WHERE status IN ('pending', 'queued', 'running') AND next_run_at <= 5
            AND (lease_expires_at IS NULL OR lease_expires_at <= 5) ORDER BY next_run_at, id LIMIT 10`,
          list: `SELECT * FROM ${tasks} WHERE account_id = 'a' ORDER BY id DESC LIMIT 11`,
          environment:
            `SELECT * FROM ${tasks} WHERE (account_id = 'a' AND environment = 'test') ORDER BY id DESC LIMIT 11`,
          status: `SELECT * FROM ${tasks} WHERE (account_id = 'a' AND status = 'failed') ORDER BY id DESC LIMIT 11`,
          prefix:
            `SELECT * FROM ${tasks} WHERE (account_id = 'a' AND id >= 'task_01' AND id < 'task_02') ORDER BY id DESC LIMIT 11`,
          lease: `SELECT id FROM ${tasks} WHERE lease_owner = 'w1' AND status IN ('pending', 'queued', 'running')`
        }
        const expected = {
          claim: `${tasks}_due_idx`,
          list: `${tasks}_account_idx`,
          environment: `${tasks}_account_environment_idx`,
          status: `${tasks}_account_status_idx`,
          prefix: `${tasks}_account_idx`,
          lease: `${tasks}_lease_idx`
        }
        const plans = yield* sql.onDialectOrElse({
          pg: () =>
            sql.withTransaction(Effect.gen(function*() {
              yield* sql`SET LOCAL enable_seqscan = off`
              const out: Record<string, string> = {}
              for (const [key, query] of Object.entries(queries)) {
                const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN ${query}`)
                out[key] = rows.map((r) => r["QUERY PLAN"]).join("\n")
              }
              return out
            })),
          orElse: () =>
            Effect.gen(function*() {
              const out: Record<string, string> = {}
              for (const [key, query] of Object.entries(queries)) {
                const rows = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`)
                out[key] = rows.map((r) => r.detail).join("\n")
              }
              return out
            })
        })
        for (const [key, index] of Object.entries(expected)) expect(plans[key], key).toContain(index)
        expect(plans.list).not.toMatch(/TEMP B-TREE|Sort/)
      }).pipe(Effect.provide(withStorage()), Effect.scoped))
  })
}

// -----------------------------------------------------------------------------------------------------------------
// PostgreSQL across processes (separate clients on one database)
// -----------------------------------------------------------------------------------------------------------------

/** A storage instance with a client of its own on `schema`. */
const instance = (schema: string, billing: Layer.Layer<Billing> = layerUnmetered) =>
  Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(Layer.merge(pgClient(schema), billing)))).pipe(
    Effect.map(Context.get(TaskStorage))
  )

describe.skipIf(!runPostgres)("SqlTaskStorage across PostgreSQL clients", () => {
  it.scopedLive("a pg_notify from accept in one instance reaches the wakeups of another", () =>
    Effect.gen(function*() {
      const schema = yield* pgSchema
      const a = yield* instance(schema)
      const b = yield* instance(schema)
      const woke = yield* b.wakeups.pipe(Stream.take(1), Stream.runDrain, Effect.fork)
      // LISTEN starts asynchronously: accept until the wakeup arrives
      const accepting = Effect.forever(
        Effect.flatMap(a.now, (now) =>
          a.accept({ task: newTask({ createdAt: now }), charge: undefined, idempotency: undefined })).pipe(
            Effect.zipRight(Effect.sleep("150 millis"))
          )
      )
      yield* Fiber.join(woke).pipe(
        Effect.race(accepting),
        Effect.timeoutFail({
          duration: "5 seconds",
          onTimeout: () =>
            "no wakeup"
        })
      )
    }), { timeout: 20_000 })

  it.scopedLive(
    "the outbox cursor is gap-free when transactions commit out of sequence order",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const reader = yield* instance(schema)
        const writerA = yield* Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
        const writerB = yield* Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
        // as every writer of the outbox: the shared outbox lock first, then the row
        const [key1, key2] = SqlTaskStorage.outboxLockKeys(SqlStore.defaultPrefix)
        const insert = (sql: SqlClient.SqlClient, taskId: string) =>
          Effect.zipRight(
            sql`SELECT pg_advisory_xact_lock_shared(${key1}, ${key2})`,
            sql`INSERT INTO ${sql(SqlTaskStorage.tables().outbox)} (account_id, task_id, webhook_url, event, created_at)
          VALUES ('acct_a', ${taskId}, NULL, ${
              JSON.stringify(
                toEvent({ ...fromNew(newTask({ createdAt: 0 })), id: taskId, status: "succeeded" }, `evt_${taskId}`, 0)
              )
            }, 0)`
          )
        // a busy transaction that never writes the outbox (an accept waiting on a balance row) holds nobody back
        const busy = yield* Deferred.make<void>()
        const done = yield* Deferred.make<void>()
        const other = yield* Effect.fork(writerB.withTransaction(
          Effect.zipRight(
            writerB`INSERT INTO ${
              writerB(SqlTaskStorage.tables().idempotency)
            } (account_id, "key", fingerprint, task_id, created_at)
            VALUES ('acct_a', 'busy', 'f', 't', 0)`,
            Effect.zipRight(Deferred.succeed(busy, undefined), Deferred.await(done))
          )
        ))
        yield* Deferred.await(busy)
        const writerC = yield* Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
        yield* writerC.withTransaction(insert(writerC, "zeroth"))
        const unblocked = yield* reader.readOutbox(undefined, 10)
        expect(unblocked.entries.map((e) => e.taskId)).toEqual(["zeroth"])
        yield* Deferred.succeed(done, undefined)
        yield* Fiber.join(other)
        // A takes the lower seq and stays open; B takes a higher seq and commits first
        const inserted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const a = yield* Effect.fork(writerA.withTransaction(
          Effect.zipRight(
            insert(writerA, "first"),
            Effect.zipRight(Deferred.succeed(inserted, undefined), Deferred.await(release))
          )
        ))
        yield* Deferred.await(inserted)
        yield* writerB.withTransaction(insert(writerB, "second"))
        const early = yield* reader.readOutbox(unblocked.cursor, 10)
        // "second" is held back while an older transaction runs: reading it now would let "first" fall behind
        expect(early.entries.map((e) => e.taskId)).toEqual([])
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(a)
        const later = yield* reader.readOutbox(early.cursor, 10)
        expect(later.entries.map((e) => e.taskId)).toEqual(["first", "second"])
        expect((yield* reader.readOutbox(later.cursor, 10)).entries).toEqual([])
      }),
    { timeout: 20_000 }
  )

  it.scopedLive(
    "a finish holds the outbox lock from its first write: an outbox row committed after it waits for it",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        // a refund runs inside the finish's transaction, after its UPDATE: held there, the transaction stays open
        const refunding = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holding = Layer.succeed(Billing, {
          charge: () => Effect.void,
          refund: () => Effect.zipRight(Deferred.succeed(refunding, undefined), Deferred.await(release))
        })
        const finisher = yield* instance(schema, holding)
        const reader = yield* instance(schema)
        const writer = yield* Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
        const now = yield* finisher.now
        const task = newTask({ createdAt: now - 1000 })
        yield* finisher.accept({ task, charge: chargeOf(task), idempotency: undefined })
        const [claimed] = yield* finisher.claim("w1", 1, 60_000)
        const start = yield* reader.readOutbox(undefined, 10)
        const failing = yield* Effect.fork(
          finisher.finish(claimed!.id, claimed!.fence, {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "no" }
          })
        )
        yield* Deferred.await(refunding)
        // another writer commits an outbox row (a later transaction id) while the finish is open
        const [key1, key2] = SqlTaskStorage.outboxLockKeys(SqlStore.defaultPrefix)
        yield* writer.withTransaction(Effect.zipRight(
          writer`SELECT pg_advisory_xact_lock_shared(${key1}, ${key2})`,
          writer`INSERT INTO ${
            writer(SqlTaskStorage.tables().outbox)
          } (account_id, task_id, webhook_url, event, created_at)
          VALUES ('acct_a', 'later', NULL, ${
            JSON.stringify(
              toEvent({ ...fromNew(newTask({ createdAt: 0 })), id: "later", status: "succeeded" }, "evt_later", 0)
            )
          }, 0)`
        ))
        const early = yield* reader.readOutbox(start.cursor, 10)
        expect(early.entries).toEqual([]) // passing "later" now would leave the finish's event behind the cursor
        yield* Deferred.succeed(release, undefined)
        const ended = yield* Fiber.join(failing)
        expect(Option.map(ended, (t) => t.status)).toEqual(Option.some("failed"))
        const later = yield* reader.readOutbox(early.cursor, 10)
        expect(later.entries.map((e) => e.taskId)).toEqual([claimed!.id, "later"])
      }),
    { timeout: 20_000 }
  )

  it.scopedLive(
    "finishes with their claim's record: the task ends and its event reads back as if built from the row",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const storage = yield* instance(schema)
        const now = yield* storage.now
        const tasks = [0, 1, 2, 3].map((i) =>
          newTask({
            createdAt: now - 1000 + i,
            metadata: i === 0 ? { order: "42" } : {},
            webhookUrl: i === 1 ? "https://example.com/hook" : null
          })
        )
        for (const task of tasks) yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        const claimed = yield* storage.claim("w1", 4, 60_000)
        const byId = new Map(claimed.map((task) => [task.id, task]))
        const [a, b, c, d] = tasks.map((task) => byId.get(task.id)!)
        const result: ReadonlyArray<Task.ResultItem> = [
          {
            url: "https://files.example.com/a.mp4",
            format: "mp4",
            size_bytes: 10,
            width: 2,
            height: 2,
            duration: 5,
            kind: "output"
          }
        ]
        const start = yield* storage.readOutbox(undefined, 10)
        // in one batch: two with their records, one without (built from the row), one whose fence was lost
        const ended = yield* Effect.all([
          storage.finish(a!.id, a!.fence, { _tag: "Succeeded", result }, { task: a }),
          storage.finish(b!.id, b!.fence, { _tag: "Succeeded", result: [] }, { task: b, upstreamJobId: "job_b" }),
          storage.finish(c!.id, c!.fence, { _tag: "Succeeded", result }),
          storage.finish(d!.id, d!.fence + 1, { _tag: "Succeeded", result }, { task: d })
        ], { concurrency: "unbounded" })
        expect(ended.map(Option.isSome)).toEqual([true, true, true, false])
        const [endedA, endedB, endedC] = ended.map((o) => Option.getOrUndefined(o)!)
        expect([endedA!.status, endedA!.progress, endedA!.result, endedB!.upstreamJobId]).toEqual([
          "succeeded",
          100,
          result,
          "job_b"
        ])
        const read = yield* storage.readOutbox(start.cursor, 10)
        expect(read.entries.map((e) => e.taskId).sort()).toEqual([a!.id, b!.id, c!.id].sort())
        for (const task of [endedA!, endedB!, endedC!]) {
          const entry = read.entries.find((e) => e.taskId === task.id)!
          expect([entry.accountId, entry.webhookUrl]).toEqual([task.accountId, task.webhookUrl])
          // the event is the one the row gives, with the row's completion time, key for key and in the same order
          const expected = toEvent(task, entry.event.id, task.completedAt!)
          expect(JSON.stringify(entry.event)).toBe(JSON.stringify(expected))
        }
        // the lost fence ended nothing
        expect(Option.getOrThrow(yield* storage.get(d!.accountId, d!.id)).completedAt).toBeNull()
        // stored: the events written with the update have no time of their own (the row's), the other one has its time
        const sql = yield* Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
        const stored = yield* sql<{ task_id: string; event: string }>`SELECT task_id, event FROM ${
          sql(SqlTaskStorage.tables().outbox)
        }`
        const storedTime = (id: string) => JSON.parse(stored.find((row) => row.task_id === id)!.event).created_at
        expect([storedTime(a!.id), storedTime(b!.id), storedTime(c!.id)]).toEqual([
          null,
          null,
          new Date(endedC!.completedAt!).toISOString()
        ])
      }),
    { timeout: 20_000 }
  )

  it.scopedLive(
    "concurrent claimers on separate clients never lease the same task twice",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const owner = yield* instance(schema)
        const claimers = yield* Effect.forEach([1, 2, 3, 4], () => instance(schema))
        const now = yield* owner.now
        yield* Effect.forEach(
          Array.from({ length: 200 }, () => newTask({ createdAt: now - 1000 })),
          (task) => owner.accept({ task, charge: undefined, idempotency: undefined }),
          { concurrency: 8 }
        )
        const batches = yield* Effect.forEach(
          claimers,
          (storage, i) => Effect.forEach(Array.from({ length: 10 }), () => storage.claim(`w${i}`, 7, 60_000)),
          { concurrency: "unbounded" }
        )
        const ids = batches.flat(2).map((t) => t.id)
        expect(new Set(ids).size).toBe(ids.length)
        const rest = yield* owner.claim("w-rest", 500, 60_000)
        const all = [...ids, ...rest.map((t) => t.id)]
        expect(new Set(all).size).toBe(all.length)
        expect(all.length).toBe(200)
        expect(batches.flat(2).every((t) => t.fence === 1)).toBe(true)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "concurrent accepts with one idempotency key create one task and charge once",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const recording = makeRecordingBilling()
        const a = yield* instance(schema, recording.layer)
        const b = yield* instance(schema, recording.layer)
        const now = yield* a.now
        for (let round = 0; round < 10; round++) {
          const claim = { key: `k${round}`, fingerprint: "f", notBefore: now - 3_600_000 }
          const tasks = [newTask({ createdAt: now }), newTask({ createdAt: now })]
          const results = yield* Effect.all(
            [a, b].map((storage, i) =>
              storage.accept({ task: tasks[i]!, charge: chargeOf(tasks[i]!), idempotency: claim })
            ),
            { concurrency: "unbounded" }
          )
          expect(results.map((r) => r._tag).sort()).toEqual(["Created", "Replayed"])
          expect(results[0]!.task.id).toBe(results[1]!.task.id)
        }
        expect(recording.ledger.charges).toHaveLength(10)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "concurrent writers of one account on separate clients keep its totals exact, without deadlocks",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const sql = yield* Layer.build(pgClient(schema, 2)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
        yield* sql`CREATE TABLE balances (account_id TEXT PRIMARY KEY, micros BIGINT NOT NULL)`
        yield* sql`INSERT INTO balances VALUES ('acct_a', 0), ('acct_b', 0)`
        // billing as the SQL billing does it: the account's balance row, locked on the storage's own connection
        const balances = Layer.effect(
          Billing,
          Effect.map(SqlClient.SqlClient, (client) => {
            const move = (accountId: string, micros: number) =>
              client`UPDATE balances SET micros = micros + ${micros} WHERE account_id = ${accountId}`.pipe(
                Effect.asVoid,
                Effect.mapError((cause) => new PersistenceError({ message: "balance", cause }))
              )
            return {
              charge: (charge) => move(charge.accountId, -charge.amountMicros),
              refund: (refund) => move(refund.accountId, refund.amountMicros)
            }
          })
        )
        const storages = yield* Effect.forEach([1, 2, 3, 4], () =>
          Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(Layer.provideMerge(balances, pgClient(schema, 4)))))
            .pipe(
              Effect.map(Context.get(TaskStorage))
            ))
        // accepts (charged), cancels of pending tasks (refunded), claims, steps and finishes, all at once
        const work = (storage: TaskStorage["Type"], worker: number) =>
          Effect.gen(function*() {
            for (let round = 0; round < 12; round++) {
              const now = yield* storage.now
              const accepted = yield* Effect.forEach([0, 1, 2], (i) => {
                const task = newTask({
                  createdAt: now,
                  accountId: i === 2 ? "acct_b" : "acct_a",
                  provider: i === 1 ? "vendor7" : "vendor3"
                })
                return storage.accept({ task, charge: chargeOf(task), idempotency: undefined })
              }, { concurrency: "unbounded" })
              const claimed = yield* storage.claim(`w${worker}`, 4, 60_000)
              yield* Effect.all([
                storage.cancel(accepted[0]!.task.accountId, accepted[0]!.task.id),
                Effect.forEach(claimed, (task, i) => {
                  const kind = (i + round + worker) % 4
                  return kind === 2
                    ? Effect.asVoid(storage.step(task.id, task.fence, { status: "running", nextRunAt: now }))
                    : Effect.asVoid(storage.finish(
                      task.id,
                      task.fence,
                      kind === 0
                        ? { _tag: "Succeeded", result: [] }
                        : kind === 1
                        ? { _tag: "Failed", error: { code: "X", message: "x" } }
                        : { _tag: "Expired" }
                    ))
                }, { concurrency: "unbounded" })
              ], { concurrency: "unbounded" })
            }
          })
        yield* Effect.forEach(storages, work, { concurrency: "unbounded" })
        const tasks = sql(SqlTaskStorage.tables().tasks)
        const storage = storages[0]!
        for (const accountId of ["acct_a", "acct_b"]) {
          const count = (column: string | undefined, value: string) =>
            sql<{ n: string | number }>`SELECT COUNT(*) AS n FROM ${tasks} WHERE account_id = ${accountId}
            ${column === undefined ? sql`` : sql`AND ${sql(column)} = ${value}`}`.pipe(
              Effect.map((rows) =>
                Number(rows[0]!.n)
              )
            )
          expect((yield* storage.list(accountId, { limit: 1 })).total).toBe(yield* count(undefined, ""))
          for (const status of Task.taskStatuses) {
            expect((yield* storage.list(accountId, { limit: 1, status })).total, status).toBe(
              yield* count("status", status)
            )
          }
          for (const provider of ["vendor3", "vendor7"]) {
            expect((yield* storage.list(accountId, { limit: 1, provider })).total, provider).toBe(
              yield* count("provider", provider)
            )
          }
          expect((yield* storage.list(accountId, { limit: 1, model: "vendor3-3" })).total).toBe(
            yield* count("model", "vendor3-3")
          )
        }
        // the connections wrote their own shards
        const shards = yield* sql<{ n: string | number }>`SELECT COUNT(DISTINCT shard) AS n FROM ${
          sql(SqlTaskStorage.tables().counts)
        }`
        expect(Number(shards[0]!.n)).toBeGreaterThan(1)
      }),
    { timeout: 60_000 }
  )
})
