/**
 * Wakeups across processes survive a lost `LISTEN` connection (docs/operations.md#outages): the server kills the
 * listening backend (as a restart or `pg_terminate_backend` does), and within the watchdog's deadline the storage
 * listens again on a new connection, so a `pg_notify` from another process wakes it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { layerUnmetered } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { pgClient, pgNotRunning, pgSchema, runPostgres } from "./databases.js"

if (!runPostgres) console.warn(`${pgNotRunning}: the LISTEN recovery test is skipped`)

describe.skipIf(!runPostgres)("LISTEN recovery", () => {
  it.live("a killed LISTEN connection is found and opened again", () =>
    Effect.gen(function*() {
      const schema = yield* pgSchema
      // a prefix of its own: notification channels are per database, and other suites share it
      const prefix = `${schema}_`
      const channel = SqlTaskStorage.wakeupChannel(prefix)
      const client = pgClient(schema)
      const context = yield* Layer.build(
        Layer.merge(SqlTaskStorage.layer({ prefix }).pipe(Layer.provide(Layer.merge(client, layerUnmetered))), client)
      )
      const storage = Context.get(context, TaskStorage)
      const sql = Context.get(context, SqlClient.SqlClient)
      let woken = 0
      yield* Effect.forkScoped(Stream.runForEach(storage.wakeups, () => Effect.sync(() => woken++)))
      const listening = `LISTEN "${channel}"`
      const listeners = sql<{ n: string }>`SELECT count(*) AS n FROM pg_stat_activity WHERE query = ${listening}`.pipe(
        Effect.map(([row]) => Number(row?.n ?? 0))
      )
      const until = <A>(probe: Effect.Effect<A, unknown>, done: (a: A) => boolean, what: string) =>
        Effect.gen(function*() {
          const deadline = Date.now() + 15_000
          for (;;) {
            if (done(yield* probe)) return
            if (Date.now() > deadline) return assert.fail(`timed out waiting for ${what}`)
            yield* Effect.sleep("200 millis")
          }
        })
      const notify = sql`SELECT pg_notify(${channel}, 'wake')`
      // listening: a notification from elsewhere wakes it
      yield* until(listeners, (n) => n === 1, "LISTEN")
      yield* until(Effect.zipRight(notify, Effect.sync(() => woken)), (n) => n > 0, "the first wakeup")
      // the server kills the listening backend; the driver's stream just goes quiet
      yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = ${listening}`
      yield* until(listeners, (n) => n === 0, "the LISTEN backend to go")
      const before = woken
      // within the watchdog's deadline (2 s probes, 5 s of silence) it listens again, and wakeups flow
      yield* until(listeners, (n) => n === 1, "LISTEN on a new connection")
      yield* until(Effect.zipRight(notify, Effect.sync(() => woken)), (n) => n > before, "a wakeup after the restart")
    }).pipe(Effect.scoped), { timeout: 40_000 })
})
