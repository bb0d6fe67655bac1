/**
 * Conformance of the `TaskLifecycle` port (accepting (charges, refusals, idempotency keys, concurrency) and cancelling
 * tasks): every task storage (memory, SQLite, PostgreSQL) must pass it; `TaskStorageSuite.ts` registers it with the
 * other ports' suites.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Errors } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { TaskStorage } from "../src/TaskStorage.js"
import {
  type Backend,
  chargeOf,
  hour,
  limitedAccount,
  newTask,
  now,
  poorAccount,
  readOutboxAtLeast,
  runOn
} from "./support.js"

/** Registers the suite for one backend. */
export const acceptSuite = (name: string, backend: Backend) =>
  describe(`TaskLifecycle: accept and cancel conformance: ${name}`, () => {
    const run = runOn(backend)

    it.effect("accepts a task as pending with its charge, scoped to its account", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          const result = yield* storage.accept({ task, charge: chargeOf(task), idempotency: undefined })
          assert.strictEqual(result._tag, "Created")
          expect(result.task).toMatchObject({
            id: task.id,
            status: "pending",
            fence: 0,
            chargedMicros: 3_200_000,
            refundedMicros: 0
          })
          expect(ledger.charges.map((c) => c.taskId)).toEqual([task.id])
          const read = yield* storage.get("acct_a", task.id)
          assert.isTrue(Option.isSome(read))
          expect(Option.getOrThrow(read).input).toEqual(task.input)
          assert.isTrue(Option.isNone(yield* storage.get("acct_other", task.id)))
          assert.isTrue(Option.isSome(yield* storage.getById(task.id)))
        })
      ))

    it.effect("stores nothing when billing refuses", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          for (const accountId of [poorAccount, limitedAccount]) {
            const task = newTask({ createdAt: yield* now, accountId })
            const exit = yield* Effect.exit(storage.accept({ task, charge: chargeOf(task), idempotency: undefined }))
            assert.isTrue(Exit.isFailure(exit))
            assert.isTrue(Option.isNone(yield* storage.getById(task.id)))
          }
          const failures = yield* Effect.flip(storage.accept({
            task: newTask({ createdAt: yield* now, accountId: poorAccount }),
            charge: chargeOf(newTask({ createdAt: yield* now, accountId: poorAccount })),
            idempotency: undefined
          }))
          assert.instanceOf(failures, Errors.InsufficientBalance)
          expect(ledger.charges).toEqual([])
        })
      ))

    it.effect("replays an idempotency key with the same fingerprint and refuses another; forgets old keys", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const claim = (fingerprint: string) =>
            Effect.map(now, (at) => ({ key: "k1", fingerprint, notBefore: at - 24 * hour }))
          const first = newTask({ createdAt: yield* now })
          const created = yield* storage.accept({
            task: first,
            charge: chargeOf(first),
            idempotency: yield* claim("f1")
          })
          assert.strictEqual(created._tag, "Created")
          const second = newTask({ createdAt: yield* now })
          const replay = yield* storage.accept({
            task: second,
            charge: chargeOf(second),
            idempotency: yield* claim("f1")
          })
          assert.strictEqual(replay._tag, "Replayed")
          assert.strictEqual(replay.task.id, first.id)
          assert.isTrue(Option.isNone(yield* storage.getById(second.id)))
          expect(ledger.charges).toHaveLength(1)
          const reused = yield* Effect.flip(
            storage.accept({ task: second, charge: chargeOf(second), idempotency: yield* claim("f2") })
          )
          assert.instanceOf(reused, Errors.IdempotencyKeyReused)
          // another account may use the same key
          const other = newTask({ createdAt: yield* now, accountId: "acct_b" })
          assert.strictEqual(
            (yield* storage.accept({ task: other, charge: chargeOf(other), idempotency: yield* claim("f9") }))._tag,
            "Created"
          )
          // after the window the key is free again
          yield* TestClock.adjust(25 * hour)
          const later = newTask({ createdAt: yield* now })
          const fresh = yield* storage.accept({ task: later, charge: chargeOf(later), idempotency: yield* claim("f2") })
          assert.strictEqual(fresh._tag, "Created")
          assert.strictEqual(fresh.task.id, later.id)
          // pruning forgets records older than the given time, and only those
          expect(yield* storage.pruneIdempotency((yield* now) - hour)).toBe(1) // acct_b's k1
          expect(yield* storage.pruneIdempotency((yield* now) - hour)).toBe(0)
          const replayLater = yield* storage.accept({
            task: newTask({ createdAt: yield* now }),
            charge: undefined,
            idempotency: yield* claim("f2")
          })
          assert.strictEqual(replayLater._tag, "Replayed")
        })
      ))

    it.effect("concurrent accepts are each stored once, and each answered", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const at = yield* now
          const tasks = Array.from({ length: 30 }, (_, i) => newTask({ createdAt: at - 30 + i }))
          const results = yield* Effect.all(
            tasks.map((task, i) =>
              storage.accept({ task, charge: i % 3 === 0 ? chargeOf(task) : undefined, idempotency: undefined })
            ),
            { concurrency: "unbounded" }
          )
          expect(results.map((r) => [r._tag, r.task.id])).toEqual(tasks.map((t) => ["Created", t.id]))
          const page = yield* storage.list("acct_a", { limit: 100 })
          expect(page.total).toBe(30)
          expect(page.items.map((t) => t.id).sort()).toEqual(tasks.map((t) => t.id).sort())
          expect(yield* storage.claim("w1", 100, 30_000)).toHaveLength(30)
        })
      ))

    it.effect("cancels pending and queued tasks (refunded, with an event) and nothing else", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const pending = newTask({ createdAt: yield* now })
          yield* storage.accept({ task: pending, charge: chargeOf(pending), idempotency: undefined })
          const cancelled = yield* storage.cancel("acct_a", pending.id)
          assert.strictEqual(cancelled._tag, "Cancelled")
          expect(cancelled._tag === "Cancelled" && cancelled.task).toMatchObject({
            status: "cancelled",
            refundedMicros: 3_200_000
          })
          expect(yield* storage.cancel("acct_a", pending.id)).toEqual({ _tag: "NotCancellable", status: "cancelled" })
          expect(yield* storage.cancel("acct_b", pending.id)).toEqual({ _tag: "NotFound" })
          expect(yield* storage.cancel("acct_a", Ids.taskId())).toEqual({ _tag: "NotFound" })

          const queued = newTask({ createdAt: yield* now })
          yield* storage.accept({ task: queued, charge: chargeOf(queued), idempotency: undefined })
          const [held] = yield* storage.claim("w1", 1, 30_000)
          assert.strictEqual((yield* storage.cancel("acct_a", queued.id))._tag, "Cancelled")
          // the worker that held it can no longer write
          assert.isFalse(yield* storage.step(queued.id, held!.fence, { status: "running", nextRunAt: yield* now }))
          assert.isTrue(Option.isNone(yield* storage.finish(queued.id, held!.fence, { _tag: "Succeeded", result: [] })))

          const running = newTask({ createdAt: yield* now })
          yield* storage.accept({ task: running, charge: chargeOf(running), idempotency: undefined })
          const [r] = yield* storage.claim("w1", 1, 30_000)
          yield* storage.step(running.id, r!.fence, { status: "running", progress: 10, nextRunAt: (yield* now) + 1000 })
          expect(yield* storage.cancel("acct_a", running.id)).toEqual({ _tag: "NotCancellable", status: "running" })
          expect(ledger.refunds.map((x) => x.taskId)).toEqual([pending.id, queued.id])
          const { entries: events } = yield* readOutboxAtLeast(storage, 2, undefined, 10)
          expect(events.map((e) => e.eventType)).toEqual(["task.cancelled", "task.cancelled"])
        })
      ))

    it.effect("test-key tasks without a charge are never refunded", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now, environment: "test", chargedMicros: 0 })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          const [claimed] = yield* storage.claim("w1", 1, 30_000)
          yield* storage.finish(task.id, claimed!.fence, {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "x" }
          })
          expect(ledger.refunds).toEqual([])
        })
      ))
  })
