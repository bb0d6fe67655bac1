/**
 * The table prefix of the SQL task storage: the conformance suite under a custom prefix, every object the
 * migrations create named with it (SQLite and PostgreSQL catalogs), two prefixes side by side in one database, the
 * wakeup channel, and invalid prefixes refused before the database is touched.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { layerUnmetered } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { outsidePrefix, pgClient, pgSchema, postgres, runPostgres, schemaObjects, sqlite } from "./databases.js"
import { newTask, readOutboxAtLeast } from "./support.js"
import { taskStorageSuite } from "./TaskStorageSuite.js"

const prefix = "acme_mg_"

type Database = () => Layer.Layer<SqlClient.SqlClient, unknown>

const databases: ReadonlyArray<readonly [string, Database]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  taskStorageSuite(
    `${name}, prefix ${prefix}`,
    (billing) => SqlTaskStorage.layer({ time: "clock", prefix }).pipe(Layer.provide(Layer.merge(database(), billing)))
  )
}

/** A storage under `options` on the client in context. */
const storageOn = (options: SqlTaskStorage.SqlOptions) =>
  Layer.build(SqlTaskStorage.layer(options).pipe(Layer.provide(layerUnmetered))).pipe(
    Effect.map(Context.get(TaskStorage))
  )

/** Accepts (with an idempotency key), claims and finishes one task: every table of the storage gets a row. */
const roundTrip = (storage: TaskStorage["Type"], accountId = "acct_a") =>
  Effect.gen(function*() {
    const task = newTask({ createdAt: yield* storage.now, accountId })
    const claim = { key: `key-${task.id}`, fingerprint: "f", notBefore: 0 }
    assert.strictEqual((yield* storage.accept({ task, charge: undefined, idempotency: claim }))._tag, "Created")
    assert.strictEqual((yield* storage.accept({ task, charge: undefined, idempotency: claim }))._tag, "Replayed")
    const [claimed] = yield* storage.claim("w1", 5, 60_000)
    expect(claimed?.id).toBe(task.id)
    assert.isTrue(Option.isSome(yield* storage.finish(task.id, claimed!.fence, { _tag: "Succeeded", result: [] })))
    return task
  })

for (const [name, database] of databases) {
  describe(`SqlTaskStorage with the prefix ${prefix} on ${name}`, () => {
    it.live("every table, index, sequence and constraint the migrations create carries the prefix", () =>
      Effect.gen(function*() {
        const storage = yield* storageOn({ prefix })
        const task = yield* roundTrip(storage)
        expect((yield* readOutboxAtLeast(storage, 1)).entries.map((e) => e.taskId)).toEqual([task.id])
        const objects = yield* schemaObjects
        expect(outsidePrefix(objects, prefix)).toEqual([])
        const tables = objects.filter((o) => o.kind === "table").map((o) => o.name).sort()
        // on SQLite the search table is FTS5's, with its shadow tables; the word counts are PostgreSQL's
        const named = SqlTaskStorage.tables(prefix)
        const shadows = name === "sqlite"
          ? ["config", "data", "docsize", "idx"].map((shadow) => `${named.search}_${shadow}`)
          : []
        const pgOnly = name === "sqlite" ? [] : Object.values(SqlTaskStorage.pgTables(prefix))
        expect(tables).toEqual(
          [...Object.values(named), ...pgOnly, SqlTaskStorage.migrationsTable(prefix), ...shadows].sort()
        )
        expect(SqlTaskStorage.migrationsTable(prefix)).toBe("acme_mg_engine_migrations")
        const indexes = objects.filter((o) => o.kind === "index").map((o) => o.name)
        expect(indexes).toEqual(expect.arrayContaining([
          "acme_mg_tasks_account_idx",
          "acme_mg_tasks_account_environment_idx",
          "acme_mg_tasks_due_idx",
          "acme_mg_tasks_lease_idx",
          "acme_mg_tasks_channel_idx",
          "acme_mg_task_idempotency_created_idx"
        ]))
        const sql = yield* SqlClient.SqlClient
        const applied = yield* sql<{ name: string }>`SELECT name FROM ${sql(SqlTaskStorage.migrationsTable(prefix))}`
        const names = (yield* SqlTaskStorage.migrations(prefix)).map(([, name]) => name)
        expect(names.slice(0, 9)).toEqual([
          "tasks",
          "task_idempotency_created",
          "task_outbox_txid",
          "task_counts",
          "nodes",
          "task_trace_context",
          "task_channel",
          "task_upstream_usage",
          "task_counts_environment"
        ])
        expect(applied.map((r) => r.name)).toEqual(names)
        // the counts' and the search's triggers (and, on PostgreSQL, their functions) carry the prefix too
        const triggers = objects.filter((o) => o.kind === "trigger").map((o) => o.name)
        expect(triggers).toEqual(
          expect.arrayContaining([
            "acme_mg_tasks_count_insert",
            "acme_mg_tasks_count_delete",
            "acme_mg_tasks_search_insert",
            "acme_mg_tasks_search_delete"
          ])
        )
        expect(objects.filter((o) => o.kind === "trigger").every((o) => o.table === "acme_mg_tasks")).toBe(true)
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.live("two prefixes in one database keep their tasks apart", () =>
      Effect.gen(function*() {
        const ours = yield* storageOn({ prefix })
        const plain = yield* storageOn({})
        const task = yield* roundTrip(ours)
        assert.isTrue(Option.isNone(yield* plain.getById(task.id)))
        expect((yield* plain.list("acct_a", { limit: 10 })).total).toBe(0)
        expect((yield* plain.readOutbox(undefined, 10)).entries).toEqual([])
        const other = yield* roundTrip(plain)
        assert.isTrue(Option.isNone(yield* ours.getById(other.id)))
        expect((yield* ours.list("acct_a", { limit: 10 })).items.map((t) => t.id)).toEqual([task.id])
        const tables = (yield* schemaObjects).filter((o) => o.kind === "table").map((o) => o.name)
        expect(tables).toEqual(expect.arrayContaining(["acme_mg_tasks", "mediagate_tasks"]))
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.live("the empty prefix gives the plain names", () =>
      Effect.gen(function*() {
        yield* roundTrip(yield* storageOn({ prefix: "" }))
        const tables = (yield* schemaObjects).filter((o) => o.kind === "table").map((o) => o.name).sort()
        expect(tables).toEqual([
          "engine_migrations",
          "nodes",
          "task_counts",
          "task_idempotency",
          "task_outbox",
          "task_search",
          ...(name === "sqlite"
            ? ["task_search_config", "task_search_data", "task_search_docsize", "task_search_idx"]
            : ["task_search_counts"]),
          "tasks"
        ])
      }).pipe(Effect.provide(database()), Effect.scoped))
  })
}

describe.skipIf(!runPostgres)("SqlTaskStorage wakeups under a prefix (PostgreSQL)", () => {
  it.scopedLive("accept notifies on the channel <prefix>tasks", () =>
    Effect.gen(function*() {
      const schema = yield* pgSchema
      const storage = yield* Layer.build(
        SqlTaskStorage.layer({ prefix }).pipe(Layer.provide(Layer.merge(pgClient(schema), layerUnmetered)))
      ).pipe(Effect.map(Context.get(TaskStorage)))
      expect(SqlTaskStorage.wakeupChannel(prefix)).toBe("acme_mg_tasks")
      expect(SqlTaskStorage.wakeupChannel()).toBe("mediagate_tasks")
      const listener = yield* Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(PgClient.PgClient)))
      const heard = yield* listener.listen("acme_mg_tasks").pipe(Stream.take(1), Stream.runCollect, Effect.fork)
      // LISTEN starts asynchronously: accept until the notification arrives
      const accepting = Effect.forever(
        Effect.flatMap(storage.now, (now) =>
          storage.accept({ task: newTask({ createdAt: now }), charge: undefined, idempotency: undefined })).pipe(
            Effect.zipRight(Effect.sleep("150 millis"))
          )
      )
      const payloads = yield* Fiber.join(heard).pipe(
        Effect.race(accepting),
        Effect.timeoutFail({
          duration: "5 seconds",
          onTimeout: () =>
            "no notification on acme_mg_tasks"
        })
      )
      expect(Chunk.toReadonlyArray(payloads)).toEqual(["wake"])
    }), { timeout: 20_000 })
})

describe("invalid table prefixes", () => {
  const invalid = ["Acme_", "1acme_", "acme-", "acme mg_", "a".repeat(31), "mg_; DROP TABLE x; --", "\u00e9t\u00e9_"]

  it.effect("the storage refuses them with a clear PersistenceError before touching the database", () =>
    Effect.gen(function*() {
      for (const bad of invalid) {
        const error = yield* Effect.flip(storageOn({ prefix: bad }))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toBe(
          `task storage: invalid table prefix ${JSON.stringify(bad)}: a prefix is empty or matches ` +
            `/^[a-z_][a-z0-9_]{0,29}$/ (lowercase letters, digits and _, not starting with a digit, at most 30 characters)`
        )
        const migrate = yield* Effect.flip(SqlTaskStorage.migrate(bad))
        assert.instanceOf(migrate, PersistenceError)
        const loader = yield* Effect.flip(SqlTaskStorage.migrations(bad))
        assert.instanceOf(loader, Migrator.MigrationError)
        expect(loader.message).toContain(`invalid table prefix ${JSON.stringify(bad)}`)
      }
      expect(yield* schemaObjects).toEqual([])
    }).pipe(Effect.provide(sqlite()), Effect.scoped))
})
