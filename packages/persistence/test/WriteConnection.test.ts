/**
 * The write connection of a SQLite file: its transactions commit as one (or roll back as one), `attempt` keeps a
 * savepoint only when asked, the client's connection is held while a transaction runs (a transaction of the client
 * is waited for, never overlapped), and one inside a transaction of the client is a defect, not a deadlock.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlProgram from "../src/SqlProgram.js"
import * as WriteConnection from "../src/WriteConnection.js"

/** A fresh SQLite file (removed after), its client and its write connection, with a table `t (n)`. */
const file = Layer.unwrapScoped(Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "mediagate-writer-"))),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
  )
  const filename = join(dir, "db.sqlite")
  const client = SqliteClient.layer({ filename })
  const table = Layer.effectDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE t (n INTEGER NOT NULL)`)
  )
  return Layer.provideMerge(Layer.merge(WriteConnection.layer(filename), table), client)
}))

const writer = Effect.flatMap(
  WriteConnection.WriteConnection,
  (found) => found === undefined ? Effect.dieMessage("no writer") : Effect.succeed(found)
)

const numbers = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.map(sql<{ n: number }>`SELECT n FROM t ORDER BY rowid`, (rows) => rows.map((row) => row.n))
)

describe("WriteConnection", () => {
  it.live("a transaction's writes commit together and are read by the client; a throw rolls them all back", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { transaction } = yield* writer
      const answered = yield* transaction((tx) => {
        tx.run(sql`INSERT INTO t (n) VALUES (${1})`)
        tx.run(sql`INSERT INTO t (n) VALUES (${2})`)
        return tx.run(sql`SELECT COUNT(*) AS c FROM t`)
      })
      expect(answered).toEqual([{ c: 2 }])
      expect(yield* numbers).toEqual([1, 2])
      const failed = yield* Effect.flip(transaction((tx) => {
        tx.run(sql`INSERT INTO t (n) VALUES (${3})`)
        tx.run(sql`INSERT INTO nowhere (n) VALUES (${4})`)
      }))
      assert.instanceOf(failed, SqlError)
      expect(yield* numbers).toEqual([1, 2])
    }).pipe(Effect.provide(file), Effect.scoped))

  it.live("attempt keeps a savepoint's writes only when asked, and answers either way", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { transaction } = yield* writer
      const answers = yield* transaction((tx) =>
        [1, 2, 3, 4].map((n) =>
          tx.attempt(() => {
            tx.run(sql`INSERT INTO t (n) VALUES (${n})`)
            return n
          }, (answer) => answer % 2 === 0)
        )
      )
      expect(answers).toEqual([1, 2, 3, 4])
      expect(yield* numbers).toEqual([2, 4])
    }).pipe(Effect.provide(file), Effect.scoped))

  it.live("waits for a transaction of the client to end instead of overlapping it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { transaction } = yield* writer
      const started = yield* Effect.makeLatch()
      const client = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t (n) VALUES (${1})`
        yield* started.open
        yield* Effect.sleep("100 millis")
        yield* sql`INSERT INTO t (n) VALUES (${2})`
      })))
      yield* started.await
      yield* transaction((tx) => tx.run(sql`INSERT INTO t (n) VALUES (${3})`))
      // the writer ran after the client's transaction committed: its row comes after both of the client's
      expect(yield* numbers).toEqual([1, 2, 3])
      yield* Fiber.join(client)
    }).pipe(Effect.provide(file), Effect.scoped))

  it.live("a transaction inside one of the client is a defect, not a wait for ever", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { transaction } = yield* writer
      const exit = yield* Effect.exit(
        sql.withTransaction(transaction((tx) => tx.run(sql`INSERT INTO t (n) VALUES (${1})`)))
      )
      assert.isTrue(Exit.isFailure(exit))
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("inside one of the SqlClient")
      expect(yield* numbers).toEqual([])
    }).pipe(Effect.provide(file), Effect.scoped))

  it.effect("a database without a write connection provides none", () =>
    Effect.map(WriteConnection.WriteConnection, (found) => expect(found).toBeUndefined()).pipe(
      Effect.provide(WriteConnection.layerNone)
    ))

  it.live("a program's statements (sql statements and texts) run the same through the client and on the writer", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { transaction } = yield* writer
      // inserts n, reads the count back with a text query, answers it doubled
      function* program(n: number): SqlProgram.SqlProgram<number> {
        yield sql`INSERT INTO t (n) VALUES (${n})`
        yield SqlProgram.query("INSERT INTO t (n) VALUES (?)", [n + 1])
        const [row] = (yield SqlProgram.query("SELECT COUNT(*) AS c FROM t WHERE n >= ?", [n])) as ReadonlyArray<
          { c: number }
        >
        return row!.c * 2
      }
      assert.strictEqual(yield* sql.withTransaction(SqlProgram.run(program(10), sql)), 4)
      assert.strictEqual(yield* transaction((tx) => SqlProgram.runSync(program(20), tx)), 4)
      expect(yield* numbers).toEqual([10, 11, 20, 21])
    }).pipe(Effect.provide(file), Effect.scoped))
})
