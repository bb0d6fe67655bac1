/**
 * The database from the environment: `MEDIAGATE_DB_MAX_CONNECTIONS` sizes the PostgreSQL pool (an operator's
 * connection budget: each thread of the production server opens its own pool), checked at start;
 * `MEDIAGATE_DB_PREPARED_STATEMENTS` turns the prepared hot statements off (a pooler that cannot keep them);
 * `MEDIAGATE_SQLITE_SYNCHRONOUS` sets how SQLite's writing connections make commits durable.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as WriteConnection from "@mediagate/persistence/WriteConnection"
import * as Databases from "@mediagate/testing/databases"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/Database.js"

const { runPostgres } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

const configFrom = (variables: Record<string, string>) =>
  Effect.withConfigProvider(Database.config, ConfigProvider.fromMap(new Map(Object.entries(variables))))

describe("the database from the environment", () => {
  it.effect("a PostgreSQL pool of 10 unless MEDIAGATE_DB_MAX_CONNECTIONS sets it", () =>
    Effect.gen(function*() {
      const url = Databases.pgUrl()
      expect(yield* configFrom({ DATABASE_URL: url })).toMatchObject({ maxConnections: 10 })
      expect(yield* configFrom({ DATABASE_URL: url, MEDIAGATE_DB_MAX_CONNECTIONS: "4" })).toMatchObject({
        maxConnections: 4
      })
      // SQLite has one connection: the variable is not used
      expect(yield* configFrom({ MEDIAGATE_DATA_DIR: "/tmp/x", MEDIAGATE_DB_MAX_CONNECTIONS: "4" })).toEqual({
        sqlite: "/tmp/x/mediagate.db",
        synchronous: "normal"
      })
    }))

  it.effect("a pool size that is not a whole number from 2 to 1000 is refused with the variable's name", () =>
    Effect.gen(function*() {
      for (const value of ["1", "0", "1001", "ten", "2.5"]) {
        const error = yield* Effect.flip(
          configFrom({ DATABASE_URL: Databases.pgUrl(), MEDIAGATE_DB_MAX_CONNECTIONS: value })
        )
        assert.include(String(error), "MEDIAGATE_DB_MAX_CONNECTIONS", value)
      }
    }))

  it.effect("hot statements are prepared unless MEDIAGATE_DB_PREPARED_STATEMENTS is false", () =>
    Effect.gen(function*() {
      const url = Databases.pgUrl()
      expect(yield* configFrom({ DATABASE_URL: url })).toMatchObject({ preparedStatements: true })
      expect(yield* configFrom({ DATABASE_URL: url, MEDIAGATE_DB_PREPARED_STATEMENTS: "false" })).toMatchObject({
        preparedStatements: false
      })
      const error = yield* Effect.flip(configFrom({ DATABASE_URL: url, MEDIAGATE_DB_PREPARED_STATEMENTS: "maybe" }))
      assert.include(String(error), "MEDIAGATE_DB_PREPARED_STATEMENTS")
    }))

  it.effect("SQLite commits sync the log at checkpoints unless MEDIAGATE_SQLITE_SYNCHRONOUS is full", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "mg-sync-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const error = yield* Effect.flip(configFrom({ MEDIAGATE_DATA_DIR: dir, MEDIAGATE_SQLITE_SYNCHRONOUS: "off" }))
      assert.include(String(error), "MEDIAGATE_SQLITE_SYNCHRONOUS")
      // PRAGMA synchronous as the client's connection and the write connection have it: 1 normal, 2 full
      const levels = (variables: Record<string, string>) =>
        Effect.gen(function*() {
          const database = yield* configFrom({ MEDIAGATE_DATA_DIR: dir, ...variables })
          return yield* Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const client = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
            const writer = (yield* WriteConnection.WriteConnection)!
            const written = yield* writer.transaction((transaction) =>
              transaction.execute("PRAGMA synchronous", []) as ReadonlyArray<{ synchronous: number }>
            )
            return [client[0]!.synchronous, written[0]!.synchronous]
          }).pipe(Effect.provide(Layer.fresh(Database.layer(database))))
        })
      expect(yield* levels({})).toEqual([1, 1])
      expect(yield* levels({ MEDIAGATE_SQLITE_SYNCHRONOUS: "full" })).toEqual([2, 2])
    }).pipe(Effect.scoped))

  it.live.skipIf(!runPostgres)(
    "the pool opens at most that many connections; more queries wait for one",
    () =>
      Effect.gen(function*() {
        const database = yield* configFrom({ DATABASE_URL: Databases.pgUrl(), MEDIAGATE_DB_MAX_CONNECTIONS: "3" })
        const layer = Database.layer(database)
        const observed = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          // beside the client, not in the layer's type
          const pool = Option.getOrThrow(yield* Effect.serviceOption(Database.DatabasePool))
          let inUse = 0
          let waiting = 0
          const sleeps = Effect.all(
            Array.from({ length: 6 }, () => sql`SELECT pg_sleep(0.2)`),
            { concurrency: "unbounded" }
          )
          const sample = Effect.flatMap(pool.stats, (stats) =>
            Effect.sync(() => {
              inUse = Math.max(inUse, stats.inUse)
              waiting = Math.max(waiting, stats.waiting ?? 0)
            }))
          const watch = Effect.repeat(Effect.zipLeft(sample, Effect.sleep("10 millis")), { times: 30 })
          yield* Effect.all([sleeps, watch], { concurrency: "unbounded" })
          return { inUse, waiting, max: (yield* pool.stats).max }
        }).pipe(Effect.provide(Layer.fresh(layer)))
        expect(observed).toEqual({ inUse: 3, waiting: 3, max: 3 })
      })
  )
})
