/**
 * The database layer gives a SQLite file a read connection and a write connection, PostgreSQL a reader on its pool
 * (the task reads of `GET /api/v1/tasks/{id}` go through it) and no writer, and neither to an in-memory database or
 * a host app's own client. Every connection to a SQLite file keeps its temporary storage in memory.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as WriteConnection from "@mediagate/persistence/WriteConnection"
import { pgSchema, pgUrl, runPostgres } from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/Database.js"

describe("Database.layer and the read and write connections", () => {
  it.scoped("a SQLite file: a reader that sees what the client committed", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "mediagate-db-"))),
        (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
      )
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const reader = yield* ReadConnection.ReadConnection
        assert.isDefined(reader)
        yield* sql`CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)`
        yield* sql`INSERT INTO t (id, n) VALUES ('a', 1)`
        expect(yield* reader!.all("SELECT id, n FROM t WHERE id = ?", ["a"])).toEqual([{ id: "a", n: 1 }])
        // a read-only connection: a write through it fails as a SqlError
        const refused = yield* Effect.flip(reader!.all("INSERT INTO t (id, n) VALUES ('b', 2) RETURNING id", []))
        expect(refused._tag).toBe("SqlError")
        // and a writer whose commits the client and the reader see
        const writer = yield* WriteConnection.WriteConnection
        assert.isDefined(writer)
        yield* writer!.transaction((tx) => tx.run(sql`INSERT INTO t (id, n) VALUES ('c', 3)`))
        expect(yield* sql`SELECT n FROM t WHERE id = 'c'`).toEqual([{ n: 3 }])
        expect(yield* reader!.all("SELECT n FROM t WHERE id = ?", ["c"])).toEqual([{ n: 3 }])
        // every connection keeps its temporary storage (statement journals, sorts) in memory: 2 = MEMORY
        expect(yield* sql`PRAGMA temp_store`).toEqual([{ temp_store: 2 }])
        expect(yield* reader!.all("PRAGMA temp_store", [])).toEqual([{ temp_store: 2 }])
        expect(yield* writer!.transaction((tx) => tx.execute("PRAGMA temp_store", []))).toEqual([{ temp_store: 2 }])
      }).pipe(Effect.provide(Database.layer({ sqlite: join(dir, "data", "mediagate.db") })), Effect.scoped)
    }))

  it.scoped.skipIf(!runPostgres)(
    "PostgreSQL: a reader on the client's pool, in the same search_path",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const reader = yield* ReadConnection.ReadConnection
          assert.isDefined(reader)
          expect(yield* WriteConnection.WriteConnection).toBeUndefined()
          yield* sql`CREATE TABLE t (id TEXT PRIMARY KEY, n BIGINT)`
          yield* sql`INSERT INTO t (id, n) VALUES ('a', 1)`
          expect(yield* reader!.all("SELECT id, n FROM t WHERE id = $1", ["a"])).toEqual([{ id: "a", n: "1" }])
          const failed = yield* Effect.flip(reader!.all("SELECT * FROM missing_table", []))
          expect(failed._tag).toBe("SqlError")
        }).pipe(
          Effect.provide(
            Database.layer({ postgres: `${pgUrl()}?options=${encodeURIComponent(`-c search_path=${schema}`)}` })
          ),
          Effect.scoped
        )
      })
  )

  it.scoped("in memory, and a host app's client: no reader", () =>
    Effect.gen(function*() {
      const memory = yield* Effect.provide(ReadConnection.ReadConnection, Database.layer({ sqlite: ":memory:" }))
      expect(memory).toBeUndefined()
      const host = yield* Effect.provide(
        ReadConnection.ReadConnection,
        Database.layer({ layer: SqliteClient.layer({ filename: ":memory:" }) })
      )
      expect(host).toBeUndefined()
      const writers = yield* Effect.forEach(
        [
          Database.layer({ sqlite: ":memory:" }),
          Database.layer({ layer: SqliteClient.layer({ filename: ":memory:" }) })
        ],
        (layer) => Effect.provide(WriteConnection.WriteConnection, layer)
      )
      expect(writers).toEqual([undefined, undefined])
    }))
})
