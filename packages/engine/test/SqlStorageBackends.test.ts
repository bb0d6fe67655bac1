/**
 * SQL-only behaviour of the task storage on every database: the database clock, a billing on the storage's client
 * committing and rolling back with it, storage failures and corrupt rows as PersistenceErrors, local wakeups, and the
 * hot paths' use of the indexes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { chargeOf, newTask, readOutboxAtLeast } from "./support.js"
import { databases, ledgerOf, sqlBilling, storageOn } from "./supportSql.js"

for (const [name, database] of databases) {
  describe(`SqlTaskStorage on ${name}`, () => {
    const withStorage = storageOn(database)

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
        // on PostgreSQL a page stops at the oldest running transaction of the cluster (other suites'): read until it is there
        const [event] = (yield* readOutboxAtLeast(storage, 1)).entries
        expect((yield* event!.event).created_at).toBe(new Date(done.completedAt!).toISOString())
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
        // the event is held back while another transaction of the database runs (PostgreSQL's gap-free horizon:
        // other suites share it): read until it shows, for at most 10 s
        const readEvents = (
          left: number
        ): Effect.Effect<Effect.Effect.Success<ReturnType<typeof storage.readOutbox>>, PersistenceError> =>
          Effect.flatMap(storage.readOutbox(undefined, 10), (read) =>
            read.entries.length > 0 || left === 0
              ? Effect.succeed(read)
              : Effect.zipRight(Effect.sleep("20 millis"), readEvents(left - 1)))
        const written = yield* readEvents(500)
        expect(written.entries.map((e) => e.taskId)).toEqual([task.id])
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

        // an outbox event: its id and type are read with the entry, the rest when the entry's event runs
        const outbox = SqlTaskStorage.tables().outbox
        yield* sql`UPDATE ${sql(tasks)} SET result = NULL WHERE id = ${task.id}`
        yield* storage.cancel(task.accountId, task.id)
        const event = (yield* readOutboxAtLeast(storage, 1)).entries[0]!
        expect([event.eventType, (yield* event.event).type]).toEqual(["task.cancelled", "task.cancelled"])
        const stored = JSON.parse(
          (yield* sql<{ event: string }>`SELECT event FROM ${sql(outbox)}`)[0]!.event
        ) as Record<string, unknown>
        yield* sql`UPDATE ${sql(outbox)} SET event = ${JSON.stringify({ ...stored, data: { task: 3 } })}`
        const [entry] = (yield* storage.readOutbox(undefined, 10)).entries
        expect([entry!.eventId, entry!.eventType]).toEqual([event.eventId, "task.cancelled"])
        const data = yield* Effect.flip(entry!.event)
        assert.instanceOf(data, PersistenceError)
        expect(data.message).toMatch(new RegExp(`^task storage: readOutbox failed: ${outbox}\\.event\\.data\\.task: `))
        yield* sql`UPDATE ${sql(outbox)} SET event = ${JSON.stringify({ ...stored, type: "task.bogus" })}`
        const type = yield* Effect.flip(storage.readOutbox(undefined, 10))
        expect(type.message).toMatch(new RegExp(`^task storage: readOutbox failed: ${outbox}\\.event\\.type: `))
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
