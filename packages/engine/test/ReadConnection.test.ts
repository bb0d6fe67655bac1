/**
 * The task storage with a read connection (`@mediagate/persistence/ReadConnection`: a second connection to a SQLite
 * file, or a `pg` pool): the whole conformance suite and the state-machine property hold when `get`/`getById` read
 * through it (SQLite and PostgreSQL),
 * and the reads see every committed write at once, nothing uncommitted, and fail on a corrupt row as the
 * `SqlClient` path does.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, expect, it } from "@effect/vitest"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { type Billing, layerUnmetered } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { type Ports, TaskStorage } from "../src/TaskStorage.js"
import { pgClient, pgSchema, pgUrl, runPostgres } from "./databases.js"
import { stateMachineProperty } from "./StateMachineProperty.js"
import { newTask } from "./support.js"
import { type Backend, taskStorageSuite } from "./TaskStorageSuite.js"

/** A fresh SQLite file (removed when the layer is released), its client, and reads counted through the reader. */
const sqliteFile = () => {
  const reads = { count: 0 }
  const layer = Layer.unwrapScoped(Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "mediagate-reader-"))),
      (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
    )
    const file = join(dir, "tasks.db")
    const counted = Layer.scoped(
      ReadConnection.ReadConnection,
      Effect.map(ReadConnection.make(file), (reader): ReadConnection.Reader => ({
        all: (query, params) =>
          Effect.tap(reader.all(query, params), () =>
            Effect.sync(() => {
              reads.count++
            }))
      }))
    )
    return Layer.merge(SqliteClient.layer({ filename: file }), counted)
  }))
  return { reads, layer }
}

/** The storage on a fresh SQLite file, `get`/`getById` through its read connection. */
const withReader = (options: SqlTaskStorage.SqlOptions = {}) => {
  const file = sqliteFile()
  const storage = Layer.unwrapEffect(
    Effect.map(ReadConnection.ReadConnection, (reader) => SqlTaskStorage.layer({ ...options, reader }))
  )
  return {
    reads: file.reads,
    layer: (billing = layerUnmetered) => Layer.provideMerge(storage, Layer.merge(file.layer, billing))
  }
}

const readerBackend: Backend = (billing) => withReader({ time: "clock" }).layer(billing)

taskStorageSuite("sqlite file with a read connection", readerBackend)
stateMachineProperty("sqlite file with a read connection", readerBackend, 50)

/** PostgreSQL on a fresh schema, task reads by id straight on a `pg` pool of its own (`ReadConnection.fromPool`). */
const pgReader = (
  billing: Layer.Layer<Billing>,
  wrap: (reader: ReadConnection.Reader) => ReadConnection.Reader = (reader) => reader
) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const schema = yield* pgSchema
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new pg.Pool({
          connectionString: `${pgUrl()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
          max: 4
        })
      ),
      (made) => Effect.promise(() => made.end())
    )
    return SqlTaskStorage.layer({ time: "clock", reader: wrap(ReadConnection.fromPool(pool)) }).pipe(
      Layer.provideMerge(Layer.merge(pgClient(schema), billing))
    )
  }))

const pgReaderBackend: Backend = (billing) => pgReader(billing)

if (runPostgres) {
  taskStorageSuite("postgres with reads on the pool", pgReaderBackend)
  stateMachineProperty("postgres with reads on the pool", pgReaderBackend, 25)
}

describe("reads through the read connection", () => {
  it.live("see each committed write at once, and go through the reader", () => {
    const { layer, reads } = withReader()
    return Effect.gen(function*() {
      const storage = yield* TaskStorage
      const task = newTask({ createdAt: yield* storage.now })
      assert.isTrue(Option.isNone(yield* storage.get(task.accountId, task.id)))
      yield* storage.accept({ task, charge: undefined, idempotency: undefined })
      expect(Option.map(yield* storage.get(task.accountId, task.id), (t) => t.status)).toEqual(Option.some("pending"))
      // another account's read of it finds nothing
      assert.isTrue(Option.isNone(yield* storage.get("acct_other", task.id)))
      const [claimed] = yield* storage.claim("w1", 5, 60_000)
      expect(Option.map(yield* storage.getById(task.id), (t) => [t.status, t.fence])).toEqual(
        Option.some(["queued", 1])
      )
      yield* storage.finish(task.id, claimed!.fence, { _tag: "Succeeded", result: [] })
      expect(Option.map(yield* storage.getById(task.id), (t) => t.status)).toEqual(Option.some("succeeded"))
      expect(reads.count).toBe(5)
    }).pipe(Effect.provide(layer()), Effect.scoped)
  })

  it.live("never see a write transaction's uncommitted change", () =>
    Effect.gen(function*() {
      const storage = yield* TaskStorage
      const sql = yield* SqlClient.SqlClient
      const task = newTask({ createdAt: yield* storage.now })
      yield* storage.accept({ task, charge: undefined, idempotency: undefined })
      const during = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`UPDATE mediagate_tasks SET progress = 42 WHERE id = ${task.id}`
        return yield* storage.getById(task.id)
      }))
      expect(Option.map(during, (t) => t.progress)).toEqual(Option.some(0))
      expect(Option.map(yield* storage.getById(task.id), (t) => t.progress)).toEqual(Option.some(42))
    }).pipe(Effect.provide(withReader().layer()), Effect.scoped))

  it.live("a corrupt row is a PersistenceError naming its table and column", () =>
    Effect.gen(function*() {
      const storage = yield* TaskStorage
      const sql = yield* SqlClient.SqlClient
      const task = newTask({ createdAt: yield* storage.now })
      yield* storage.accept({ task, charge: undefined, idempotency: undefined })
      yield* sql`UPDATE mediagate_tasks SET metadata = 'not json' WHERE id = ${task.id}`
      const failure = yield* Effect.flip(storage.get(task.accountId, task.id))
      assert.instanceOf(failure, PersistenceError)
      expect(failure.message).toContain("mediagate_tasks.metadata")
    }).pipe(Effect.provide(withReader().layer()), Effect.scoped))

  const remembered: ReadonlyArray<
    readonly [string, () => Layer.Layer<TaskStorage | Ports | SqlClient.SqlClient, unknown>]
  > = [
    ["a SQLite file", () => withReader().layer()],
    ...(runPostgres ? [["PostgreSQL", () => pgReader(layerUnmetered)] as const] : [])
  ]
  for (const [name, layer] of remembered) {
    it.live(`on ${name}, a task read again unchanged is the record decoded before; every change is read anew`, () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const sql = yield* SqlClient.SqlClient
        const task = newTask({ createdAt: yield* storage.now })
        yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        const first = Option.getOrThrow(yield* storage.get(task.accountId, task.id))
        expect(Option.getOrThrow(yield* storage.getById(task.id))).toBe(first)
        const [claimed] = yield* storage.claim("w1", 5, 60_000)
        yield* storage.step(task.id, claimed!.fence, { progress: 40, nextRunAt: task.createdAt + 60_000 })
        const stepped = Option.getOrThrow(yield* storage.get(task.accountId, task.id))
        expect([stepped.status, stepped.progress, stepped.fence]).toEqual(["queued", 40, 1])
        // a change of one column behind the storage's back is read too, and a corrupt row still fails
        yield* sql`UPDATE mediagate_tasks SET polls = polls + 1 WHERE id = ${task.id}`
        expect(Option.map(yield* storage.getById(task.id), (t) => t.polls)).toEqual(Option.some(stepped.polls + 1))
        yield* sql`UPDATE mediagate_tasks SET metadata = 'not json' WHERE id = ${task.id}`
        const failure = yield* Effect.flip(storage.get(task.accountId, task.id))
        expect(failure.message).toContain("mediagate_tasks.metadata")
      }).pipe(Effect.provide(layer()), Effect.scoped))
  }

  if (runPostgres) {
    it.live("on PostgreSQL, reads asked for together share a statement, each answered with its own task", () => {
      const statements: Array<ReadonlyArray<unknown>> = []
      let failing = false
      const counted = (reader: ReadConnection.Reader): ReadConnection.Reader => ({
        all: (query, params) =>
          Effect.suspend(() => {
            statements.push(params)
            return failing
              ? Effect.fail(new SqlError({ cause: new Error("connection lost") }))
              : reader.all(query, params)
          })
      })
      return Effect.gen(function*() {
        const storage = yield* TaskStorage
        const now = yield* storage.now
        const tasks = Array.from({ length: 12 }, (_, i) => newTask({ createdAt: now, id: `task_batched_${i}` }))
        for (const task of tasks) yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        // each task twice, and an id that is not there, all at once
        const ids = [...tasks.map((task) => task.id), ...tasks.map((task) => task.id), "task_missing"]
        const answers = yield* Effect.all(ids.map((id) => storage.getById(id)), { concurrency: "unbounded" })
        expect(answers.map((answer) => Option.map(answer, (task) => task.id))).toEqual(
          ids.map((id) => id === "task_missing" ? Option.none() : Option.some(id))
        )
        // at most 4 reads go at once; what is asked meanwhile waits for the next, one statement for all of it
        assert.isBelow(statements.length, ids.length)
        assert.isTrue(statements.some((params) => Array.isArray(params[0]) && params[0].length > 1))
        // another account's read of a task in a batch finds nothing
        const [own, other] = yield* Effect.all([
          storage.get(tasks[0]!.accountId, tasks[0]!.id),
          storage.get("acct_other", tasks[0]!.id)
        ], { concurrency: "unbounded" })
        assert.isTrue(Option.isSome(own))
        assert.isTrue(Option.isNone(other))
        // a statement that fails fails every read it held, as a PersistenceError
        failing = true
        const failures = yield* Effect.all(ids.slice(0, 6).map((id) => Effect.flip(storage.getById(id))), {
          concurrency: "unbounded"
        })
        for (const failure of failures) assert.instanceOf(failure, PersistenceError)
      }).pipe(Effect.provide(pgReader(layerUnmetered, counted)), Effect.scoped)
    })
  }

  it.live("a table prefix reads its own table", () =>
    Effect.gen(function*() {
      const storage = yield* TaskStorage
      const task = newTask({ createdAt: yield* storage.now })
      yield* storage.accept({ task, charge: undefined, idempotency: undefined })
      expect(Option.map(yield* storage.getById(task.id), (t) => t.id)).toEqual(Option.some(task.id))
    }).pipe(Effect.provide(withReader({ prefix: "other_" }).layer()), Effect.scoped))
})
