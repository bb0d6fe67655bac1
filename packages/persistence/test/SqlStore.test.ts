/**
 * What the kernel does for every SQL store by itself: table prefixes (validation, the refusal's message, prefixed
 * migrations), the migrations runner (its own table, once, and another try after a failed start), the storage clock
 * (database or Effect `Clock`), and storage failures as PersistenceError (a corrupt row named, SQL text never shown,
 * a failed COMMIT's defect caught, other errors left alone).
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { PersistenceError } from "../src/PersistenceError.js"
import * as SqlRows from "../src/SqlRows.js"
import * as SqlStore from "../src/SqlStore.js"
import { postgres, runPostgres, sqlite } from "./databases.js"

const invalid = ["Acme_", "1acme_", "acme-", "acme mg_", "a".repeat(31), "mg_; DROP TABLE x; --", "\u00e9t\u00e9_"]

describe("table prefixes", () => {
  it("accepts the empty prefix and lowercase identifiers of up to 30 characters, nothing else", () => {
    for (const valid of ["", "mediagate_", "acme_mg_", "_", "a", "x9_", "a".repeat(30)]) {
      assert.isTrue(SqlStore.isValidPrefix(valid), valid)
    }
    for (const prefix of invalid) assert.isFalse(SqlStore.isValidPrefix(prefix), prefix)
    expect(SqlStore.defaultPrefix).toBe("mediagate_")
  })

  it.effect("resolvePrefix: the default, a valid one, or a PersistenceError naming the store", () =>
    Effect.gen(function*() {
      expect(yield* SqlStore.resolvePrefix("acme storage")).toBe("mediagate_")
      expect(yield* SqlStore.resolvePrefix("acme storage", { prefix: "" })).toBe("")
      expect(yield* SqlStore.resolvePrefix("acme storage", { prefix: "acme_" })).toBe("acme_")
      const error = yield* Effect.flip(SqlStore.resolvePrefix("acme storage", { prefix: "Acme" }))
      assert.instanceOf(error, PersistenceError)
      expect(error.message).toBe(
        `acme storage: invalid table prefix "Acme": a prefix is empty or matches /^[a-z_][a-z0-9_]{0,29}$/ ` +
          `(lowercase letters, digits and _, not starting with a digit, at most 30 characters)`
      )
    }))

  it.effect("prefixedMigrations: an invalid prefix fails the loader before any migration runs", () =>
    Effect.gen(function*() {
      let built = 0
      const record = (prefix: string) => {
        built++
        return { [`0001_${prefix}x`]: Effect.void }
      }
      const error = yield* Effect.flip(SqlStore.prefixedMigrations("acme storage", "Bad", record))
      assert.instanceOf(error, Migrator.MigrationError)
      expect(error.message).toContain(`acme storage: invalid table prefix "Bad"`)
      expect(built).toBe(0)
      const loaded = yield* SqlStore.prefixedMigrations("acme storage", "acme_", record)
      expect(loaded.map(([id, name]) => [id, name])).toEqual([[1, "acme_x"]])
    }))
})

describe("hasNul", () => {
  it("an argument holding NUL matches nothing stored", () => {
    expect(SqlStore.hasNul("acct_a", undefined, "task_1")).toBe(false)
    expect(SqlStore.hasNul("acct_a", "task_\u0000")).toBe(true)
    expect(SqlStore.hasNul()).toBe(false)
  })
})

describe("persistence: storage failures as PersistenceError", () => {
  const persistence = SqlStore.persistence("acme storage")

  it.effect("an SQL failure keeps its text out of the message (it may hold data)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        persistence("read")(Effect.fail(new SqlError({ message: "relation acme_items: secret", cause: "x" })))
      )
      assert.instanceOf(error, PersistenceError)
      expect(error.message).toBe("acme storage: read failed")
      assert.instanceOf(error.cause, SqlError)
    }))

  it.effect("a corrupt row names its table and column", () =>
    Effect.gen(function*() {
      const rows = SqlRows.decoder("acme_items", Schema.Struct({ status: SqlRows.literal("a", "b") }))
      const error = yield* Effect.flip(persistence("list")(rows.all([{ status: "c" }])))
      expect(error.message).toBe(`acme storage: list failed: acme_items.status: Expected "a" | "b", actual "c"`)
      expect(error.cause).toMatchObject({ _tag: "RowError", table: "acme_items", column: "status" })
    }))

  it.effect("a failed COMMIT (a defect of @effect/sql) becomes a failure; other defects and errors stay", () =>
    Effect.gen(function*() {
      const commit = yield* Effect.flip(persistence("commit")(Effect.die(new SqlError({ message: "commit failed" }))))
      expect(commit).toMatchObject({ _tag: "PersistenceError", message: "acme storage: commit failed" })
      const bug = yield* Effect.exit(persistence("x")(Effect.die("bug")))
      assert.isTrue(bug._tag === "Failure" && bug.cause._tag === "Die")
      const domain = yield* Effect.flip(persistence("x")(Effect.fail("refused" as const)))
      expect(domain).toBe("refused")
    }))

  it.effect("the operation runs in a span named after the store and the operation", () =>
    Effect.gen(function*() {
      const span = yield* persistence("claim")(Effect.currentSpan)
      expect(span.name).toBe("acme storage.claim")
    }))

  it.effect("isAlso names a store's own failures to treat the same way", () =>
    Effect.gen(function*() {
      class Race extends Schema.TaggedError<Race>()("Race", {}) {}
      const error = yield* Effect.flip(
        SqlStore.persistence("acme storage", (u): u is Race => u instanceof Race)("accept")(Effect.fail(new Race()))
      )
      expect(error).toMatchObject({ _tag: "PersistenceError", message: "acme storage: accept failed" })
    }))
})

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`the kernel on ${name}`, () => {
    it.effect("storeClient: the dialect, and column types that hold epoch ms and sort ULIDs", () =>
      Effect.gen(function*() {
        const { pg, sql } = yield* SqlStore.storeClient("acme storage")
        expect(pg).toBe(name === "postgres")
        const columns = SqlStore.columns(sql)
        expect(columns).toEqual(
          pg
            ? { pg: true, big: "BIGINT", real: "DOUBLE PRECISION", id: `TEXT COLLATE "C"` }
            : { pg: false, big: "INTEGER", real: "REAL", id: "TEXT" }
        )
        yield* sql.unsafe(`CREATE TABLE acme_ids (id ${columns.id} PRIMARY KEY, at ${columns.big} NOT NULL)`)
        yield* sql`INSERT INTO acme_ids (id, at) VALUES ('01a', 1), ('01B', 2), ('01_', 3)`
        const ids = yield* sql<{ id: string }>`SELECT id FROM acme_ids ORDER BY id`
        expect(ids.map((row) => row.id)).toEqual(["01B", "01_", "01a"])
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.effect("storage time: the database clock by default, Effect's Clock with time: clock", () =>
      Effect.gen(function*() {
        const { pg, sql } = yield* SqlStore.storeClient("acme storage")
        yield* TestClock.setTime(1_700_000_000_123.7)
        expect(yield* SqlStore.storageNow(sql, pg, "clock")).toBe(1_700_000_000_123)
        yield* TestClock.adjust("1 hour")
        expect(yield* SqlStore.storageNow(sql, pg, "clock")).toBe(1_700_003_600_123)
        // the database clock is the database's: a whole epoch ms, far from the TestClock's
        const database = yield* SqlStore.storageNow(sql, pg)
        assert.isTrue(Number.isSafeInteger(database))
        expect(database).toBeGreaterThan(Date.UTC(2024, 0, 1))
        expect(yield* SqlStore.databaseNow(sql, pg)).toBeGreaterThanOrEqual(database)
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.effect("migrator: runs a store's migrations once, in its own table", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const loader = Migrator.fromRecord({
          "0001_items": sql`CREATE TABLE acme_items (id TEXT)`,
          "0002_notes": sql`CREATE TABLE acme_notes (id TEXT)`
        })
        expect(yield* SqlStore.migrator(loader, "acme_migrations")).toEqual([[1, "items"], [2, "notes"]])
        expect(yield* SqlStore.migrator(loader, "acme_migrations")).toEqual([])
        const applied = yield* sql<{ name: string }>`SELECT name FROM acme_migrations ORDER BY migration_id`
        expect(applied.map((row) => row.name)).toEqual(["items", "notes"])
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.effect("migrator: a failed attempt (the start-up race) is tried again, twice at most", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        let attempts = 0
        /** A loader failing its first `failures` attempts, as a process losing the start-up race would. */
        const flaky = (failures: number): Migrator.Loader =>
          Effect.suspend(() =>
            attempts++ < failures
              ? Effect.fail(new Migrator.MigrationError({ reason: "bad-state", message: "lost the race" }))
              : Migrator.fromRecord({ "0001_items": sql`CREATE TABLE acme_items (id TEXT)` })
          )
        expect(yield* SqlStore.migrator(flaky(2), "acme_migrations")).toEqual([[1, "items"]])
        expect(attempts).toBe(3)
        attempts = 0
        const error = yield* Effect.flip(SqlStore.migrator(flaky(3), "acme_other_migrations"))
        expect(error).toMatchObject({ _tag: "MigrationError", message: "lost the race" })
        expect(attempts).toBe(3)
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.effect("open: the prefix, the client and dialect, the migrations run, the tables as identifiers", () =>
      Effect.gen(function*() {
        const definition = {
          tables: (prefix: string) => ({ items: `${prefix}items` }),
          migrationsTable: (prefix: string) => `${prefix}acme_migrations`,
          migrations: (prefix: string) =>
            SqlStore.prefixedMigrations("acme storage", prefix, (p) => ({
              "0001_items": Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE TABLE ${p}items (id TEXT)`))
            }))
        }
        const store = yield* SqlStore.open("acme storage", { prefix: "acme_" }, definition)
        expect({ prefix: store.prefix, pg: store.pg }).toEqual({ prefix: "acme_", pg: name === "postgres" })
        yield* store.sql`INSERT INTO ${store.t.items} (id) VALUES ('a')`
        expect(yield* store.sql<{ id: string }>`SELECT id FROM acme_items`).toEqual([{ id: "a" }])
        // opened again: nothing migrates twice
        yield* SqlStore.open("acme storage", { prefix: "acme_" }, definition)
        const applied = yield* store.sql<{ name: string }>`SELECT name FROM acme_acme_migrations`
        expect(applied.map((row) => row.name)).toEqual(["items"])
        const error = yield* Effect.flip(SqlStore.open("acme storage", { prefix: "Acme" }, definition))
        expect(error).toMatchObject({
          _tag: "PersistenceError",
          message: expect.stringMatching(/^acme storage: invalid table prefix "Acme"/)
        })
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.effect("migrateWith: refuses an invalid prefix before the database is touched, else migrates under it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const migrate = SqlStore.migrateWith(
          "acme storage",
          (prefix) =>
            SqlStore.prefixedMigrations(
              "acme storage",
              prefix,
              (p) => ({ "0001_items": sql.unsafe(`CREATE TABLE ${p}items (id TEXT)`) })
            ),
          (prefix) => `${prefix}acme_migrations`
        )
        const error = yield* Effect.flip(migrate("Bad"))
        assert.instanceOf(error, PersistenceError)
        expect(yield* migrate("x_")).toEqual([[1, "items"]])
        expect(yield* migrate()).toEqual([[1, "items"]])
        const tables = yield* sql.onDialectOrElse({
          pg: () =>
            sql<
              { name: string }
            >`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`,
          orElse: () =>
            sql<
              { name: string }
            >`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1`
        })
        expect(tables.map((row) => row.name)).toEqual([
          "mediagate_acme_migrations",
          "mediagate_items",
          "x_acme_migrations",
          "x_items"
        ])
      }).pipe(Effect.provide(database()), Effect.scoped))
  })
}

describe.skipIf(!runPostgres)("migrator on PostgreSQL", () => {
  it.effect("processes starting together on an empty database all migrate, and the migrations run once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const loader = Migrator.fromRecord({ "0001_items": sql`CREATE TABLE acme_items (id TEXT)` })
      const results = yield* Effect.all(
        Array.from({ length: 4 }, () => SqlStore.migrator(loader, "acme_migrations")),
        { concurrency: "unbounded" }
      )
      expect(results.flat()).toEqual([[1, "items"]])
      const applied = yield* sql<{ name: string }>`SELECT name FROM acme_migrations`
      expect(applied.map((row) => row.name)).toEqual(["items"])
    }).pipe(Effect.provide(postgres()), Effect.scoped))
})
