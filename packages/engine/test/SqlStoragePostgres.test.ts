/**
 * The SQL task storage on PostgreSQL across processes: separate clients (instances) on one database, their
 * notifications, outbox readers, leases and counts.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Task } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Billing } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { fromNew, toEvent } from "../src/TaskRecord.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { pgClient, pgSchema, runPostgres } from "./databases.js"
import { chargeOf, makeRecordingBilling, newTask } from "./support.js"
import { instance } from "./supportSql.js"

/** A client of its own on `schema` (another session), closed with the scope. */
const clientOn = (schema: string) => Layer.build(pgClient(schema)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))

/**
 * An outbox row for `taskId` written by `sql` in its transaction, as every writer of the outbox writes one: the
 * shared outbox lock first, then the row.
 */
const insert = (sql: SqlClient.SqlClient, taskId: string) => {
  const [key1, key2] = SqlTaskStorage.outboxLockKeys(SqlStore.defaultPrefix)
  return Effect.zipRight(
    sql`SELECT pg_advisory_xact_lock_shared(${key1}, ${key2})`,
    sql`INSERT INTO ${sql(SqlTaskStorage.tables().outbox)} (account_id, task_id, webhook_url, event, created_at)
    VALUES ('acct_a', ${taskId}, NULL, ${
      JSON.stringify(
        toEvent({ ...fromNew(newTask({ createdAt: 0 })), id: taskId, status: "succeeded" }, `evt_${taskId}`, 0)
      )
    }, 0)`
  )
}

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
        const writerA = yield* clientOn(schema)
        const writerB = yield* clientOn(schema)
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
        const writerC = yield* clientOn(schema)
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
    "a writer whose transaction id is above the snapshot's xmax holds back only what is behind it",
    () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        const reader = yield* instance(schema)
        const [older, writer, committer] = yield* Effect.all(
          [0, 1, 2].map(() => clientOn(schema))
        )
        /** A transaction of `client` running `body`, kept open until `release`; answers once `body` has run. */
        const holdOpen = (client: SqlClient.SqlClient, body: Effect.Effect<unknown, unknown>) =>
          Effect.gen(function*() {
            const ran = yield* Deferred.make<void>()
            const release = yield* Deferred.make<void>()
            const fiber = yield* Effect.fork(client.withTransaction(
              Effect.zipRight(body, Effect.zipRight(Deferred.succeed(ran, undefined), Deferred.await(release)))
            ))
            yield* Deferred.await(ran)
            return Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(fiber))
          })
        yield* committer.withTransaction(insert(committer, "zeroth"))
        // an older transaction that writes no outbox row keeps the snapshot's xmax at its id; a writer gets a later id
        const endOlder = yield* holdOpen(
          older,
          older`INSERT INTO ${older(SqlTaskStorage.tables().idempotency)} (account_id, "key", fingerprint, task_id,
            created_at) VALUES ('acct_a', 'older', 'f', 't', 0)`
        )
        const endWriter = yield* holdOpen(writer, insert(writer, "first"))
        // read while both are open; the transactions end before any assertion, whose failure would leave them open
        const during = yield* reader.readOutbox(undefined, 10)
        yield* endWriter
        yield* endOlder
        // "zeroth" committed before both: only "first" waits (an id above xmax was once taken for the last epoch's)
        expect(during.entries.map((e) => e.taskId)).toEqual(["zeroth"])
        const after = yield* reader.readOutbox(during.cursor, 10)
        expect(after.entries.map((e) => e.taskId)).toEqual(["first"])
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
        const writer = yield* clientOn(schema)
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
        yield* writer.withTransaction(insert(writer, "later"))
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
          const expected = toEvent(task, entry.eventId, task.completedAt!)
          expect(JSON.stringify(yield* entry.event)).toBe(JSON.stringify(expected))
        }
        // the lost fence ended nothing
        expect(Option.getOrThrow(yield* storage.get(d!.accountId, d!.id)).completedAt).toBeNull()
        // stored: the events written with the update have no time of their own (the row's), the other one has its time
        const sql = yield* clientOn(schema)
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
