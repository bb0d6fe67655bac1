/**
 * The conformance suite of the task storage port: every implementation (memory, SQLite, PostgreSQL) must pass it.
 * A backend is given as a function from a billing layer to a storage layer whose clock is Effect's `Clock` (SQL:
 * `time: "clock"`), so the suite controls time (leases, deadlines, idempotency windows) with `TestClock` on every
 * backend alike.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Errors, Task } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import type { Billing } from "../src/Billing.js"
import type { NewTask, TaskRecord } from "../src/TaskRecord.js"
import { type ListQuery, type Ports, TaskStorage } from "../src/TaskStorage.js"
import {
  chargeOf,
  limitedAccount,
  makeRecordingBilling,
  newTask,
  poorAccount,
  readOutboxAtLeast,
  start,
  unrefundableAccount
} from "./support.js"

/** How a backend is built for one test (its storage clock: Effect's `Clock`). */
export type Backend = (billing: Layer.Layer<Billing>) => Layer.Layer<TaskStorage | Ports, unknown>

/** The storage clock (the `TestClock`). */
const now = Clock.currentTimeMillis

const hour = 3_600_000

/** Registers the suite for one backend. */
export const taskStorageSuite = (name: string, backend: Backend) =>
  describe(`TaskStorage conformance: ${name}`, () => {
    const run = <A, E>(
      body: (ctx: { ledger: ReturnType<typeof makeRecordingBilling>["ledger"] }) => Effect.Effect<A, E, TaskStorage>
    ) =>
      Effect.suspend(() => {
        const billing = makeRecordingBilling()
        return Effect.zipRight(
          TestClock.setTime(start),
          body({ ledger: billing.ledger }).pipe(Effect.provide(backend(billing.layer)))
        )
      }).pipe(Effect.scoped)

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

    it.effect("keeps test and live tasks apart: get, list (items, totals, cursors), cancel and outbox events", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accountId = "acct_env"
          const tasks: Array<NewTask> = []
          for (let i = 0; i < 6; i++) {
            yield* TestClock.adjust(1)
            const environment = i % 2 === 0 ? "live" : "test"
            const task = newTask({
              createdAt: yield* now,
              accountId,
              environment,
              model: i < 4 ? "m1" : "m2",
              chargedMicros: 0
            })
            tasks.push(task)
            yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          }
          const ids = (environment: "live" | "test") =>
            tasks.filter((t) => t.environment === environment).map((t) => t.id).reverse()
          const [live, test] = [tasks[0]!, tasks[1]!]

          // a task of the other environment is not there
          assert.isTrue(Option.isSome(yield* storage.get(accountId, live.id, "live")))
          assert.isTrue(Option.isNone(yield* storage.get(accountId, live.id, "test")))
          assert.isTrue(Option.isNone(yield* storage.get(accountId, test.id, "live")))
          assert.isTrue(Option.isSome(yield* storage.get(accountId, test.id)))

          // lists: only the environment's items, totals counted per environment, cursors within it
          for (const environment of ["live", "test"] as const) {
            const first = yield* storage.list(accountId, { limit: 2, environment })
            expect(first.items.map((t) => t.id)).toEqual(ids(environment).slice(0, 2))
            expect(first).toMatchObject({ hasMore: true, total: 3 })
            const rest = yield* storage.list(accountId, { limit: 2, environment, beforeId: first.items[1]!.id })
            expect(rest.items.map((t) => t.id)).toEqual(ids(environment).slice(2))
            expect(rest.hasMore).toBe(false)
            expect((yield* storage.list(accountId, { limit: 10, environment, model: "m1" })).total).toBe(2)
            expect((yield* storage.list(accountId, { limit: 10, environment, status: "pending" })).total).toBe(3)
            const both = yield* storage.list(accountId, { limit: 10, environment, model: "m1", status: "pending" })
            expect(both.items.every((t) => t.environment === environment)).toBe(true)
            expect(both.total).toBe(2)
          }
          // without an environment (operators): both
          expect((yield* storage.list(accountId, { limit: 10 })).total).toBe(6)
          expect((yield* storage.list(undefined, { limit: 10, environment: "test" })).items.map((t) => t.id))
            .toEqual(expect.arrayContaining(ids("test")))

          // cancel: the other environment's task is unknown and stays as it was
          expect((yield* storage.cancel(accountId, live.id, "test"))._tag).toBe("NotFound")
          expect(Option.getOrThrow(yield* storage.getById(live.id)).status).toBe("pending")
          expect((yield* storage.cancel(accountId, test.id, "test"))._tag).toBe("Cancelled")
          expect((yield* storage.cancel(accountId, live.id, "live"))._tag).toBe("Cancelled")
          expect((yield* storage.list(accountId, { limit: 10, environment: "test", status: "cancelled" })).total).toBe(
            1
          )

          // the outbox entries carry their task's environment
          const read = yield* readOutboxAtLeast(storage, 2)
          const byTask = new Map(read.entries.map((entry) => [entry.taskId, entry.environment]))
          expect([byTask.get(live.id), byTask.get(test.id)]).toEqual(["live", "test"])
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

    it.effect("lists newest first with filters, a keyset cursor and the total", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const ids: Array<string> = []
          for (let i = 0; i < 7; i++) {
            yield* TestClock.adjust(1000)
            const task = newTask({
              createdAt: yield* now,
              provider: i % 2 === 0 ? "vendor3" : "vendor7",
              model: i % 2 === 0 ? "vendor3-3" : "vendor7-imagine/text-to-video"
            })
            ids.push(task.id)
            yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          }
          yield* storage.accept({
            task: newTask({ createdAt: yield* now, accountId: "acct_b" }),
            charge: undefined,
            idempotency: undefined
          })
          const newest = [...ids].reverse()
          const page1 = yield* storage.list("acct_a", { limit: 3 })
          expect(page1.items.map((t) => t.id)).toEqual(newest.slice(0, 3))
          expect(page1).toMatchObject({ hasMore: true, total: 7 })
          const page2 = yield* storage.list("acct_a", { limit: 3, beforeId: page1.items[2]!.id })
          expect(page2.items.map((t) => t.id)).toEqual(newest.slice(3, 6))
          const page3 = yield* storage.list("acct_a", { limit: 3, beforeId: page2.items[2]!.id })
          expect(page3.items.map((t) => t.id)).toEqual(newest.slice(6))
          expect(page3).toMatchObject({ hasMore: false, total: 7 })
          const v7 = yield* storage.list("acct_a", { limit: 10, provider: "vendor7" })
          expect(v7.items.map((t) => t.id)).toEqual(newest.filter((_, i) => (6 - i) % 2 === 1))
          expect(v7.total).toBe(3)
          const byModel = yield* storage.list("acct_a", { limit: 10, model: "vendor3-3" })
          expect(byModel.total).toBe(4)
          const windowed = yield* storage.list("acct_a", {
            limit: 10,
            createdAfter: Date.UTC(2026, 10, 21, 12, 0, 2),
            createdBefore: Date.UTC(2026, 10, 21, 12, 0, 5)
          })
          expect(windowed.items.map((t) => t.id)).toEqual([ids[3], ids[2], ids[1]])
          const prefixed = yield* storage.list("acct_a", { limit: 10, idPrefix: ids[4]!.slice(0, 28) })
          expect(prefixed.items.map((t) => t.id)).toContain(ids[4])
          const exact = yield* storage.list("acct_a", { limit: 10, idPrefix: ids[4]! })
          expect(exact.items.map((t) => t.id)).toEqual([ids[4]])
          const none = yield* storage.list("acct_a", { limit: 10, status: "failed" })
          expect(none).toEqual({ items: [], hasMore: false, total: 0 })
        })
      ))

    it.effect("claims due tasks with a lease and a new fence; a live lease is not claimed twice", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const a = newTask({ createdAt: yield* now })
          const b = newTask({ createdAt: yield* now })
          yield* storage.accept({ task: a, charge: undefined, idempotency: undefined })
          yield* storage.accept({ task: b, charge: undefined, idempotency: undefined })
          const first = yield* storage.claim("w1", 1, 30_000)
          expect(first).toHaveLength(1)
          expect(first[0]).toMatchObject({
            status: "queued",
            fence: 1,
            leaseOwner: "w1",
            leaseExpiresAt: (yield* now) + 30_000
          })
          expect(first[0]!.startedAt).toBe(yield* now)
          const second = yield* storage.claim("w2", 5, 30_000)
          expect(second.map((t) => t.id)).toEqual([first[0]!.id === a.id ? b.id : a.id])
          expect(yield* storage.claim("w3", 5, 30_000)).toEqual([])
          // the lease of w1 runs out: another worker takes the task over with a newer fence
          yield* TestClock.adjust(30_001)
          const taken = yield* storage.claim("w3", 5, 30_000)
          expect(taken.map((t) => [t.fence, t.leaseOwner])).toEqual([[2, "w3"], [2, "w3"]])
          // the old holder's writes are refused
          assert.isFalse(yield* storage.step(first[0]!.id, 1, { nextRunAt: yield* now }))
          assert.isTrue(
            Option.isNone(
              yield* storage.finish(first[0]!.id, 1, { _tag: "Failed", error: { code: "X", message: "x" } })
            )
          )
        })
      ))

    it.effect("a fence only carries authority while its claim is leased", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          // never claimed: fence 0 writes nothing
          assert.isFalse(yield* storage.step(task.id, 0, { nextRunAt: yield* now }))
          assert.isTrue(Option.isNone(yield* storage.finish(task.id, 0, { _tag: "Succeeded", result: [] })))
          const [claimed] = yield* storage.claim("w1", 1, 30_000)
          assert.isTrue(yield* storage.step(task.id, claimed!.fence, { nextRunAt: (yield* now) + 1000 }))
          // the step released the lease: the same fence may not write again
          assert.isFalse(yield* storage.step(task.id, claimed!.fence, { nextRunAt: yield* now }))
          assert.isTrue(
            Option.isNone(yield* storage.finish(task.id, claimed!.fence, { _tag: "Succeeded", result: [] }))
          )
          expect(Option.getOrThrow(yield* storage.getById(task.id)).status).toBe("queued")
        })
      ))

    it.effect("a step records the upstream job, progress and the next run, releasing the lease", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          const [claimed] = yield* storage.claim("w1", 1, 30_000)
          assert.isTrue(
            yield* storage.step(task.id, claimed!.fence, { upstreamJobId: "job-1", nextRunAt: (yield* now) + 5000 })
          )
          const stored = Option.getOrThrow(yield* storage.getById(task.id))
          expect(stored).toMatchObject({
            status: "queued",
            upstreamJobId: "job-1",
            leaseOwner: null,
            nextRunAt: (yield* now) + 5000
          })
          expect(yield* storage.claim("w1", 1, 30_000)).toEqual([])
          expect(yield* storage.nextDueAt).toEqual(Option.some((yield* now) + 5000))
          yield* TestClock.adjust(5000)
          const [again] = yield* storage.claim("w1", 1, 30_000)
          expect(again).toMatchObject({ fence: 2, upstreamJobId: "job-1" })
          assert.isTrue(
            yield* storage.step(task.id, 2, {
              status: "running",
              progress: 40,
              polled: true,
              nextRunAt: (yield* now) + 10 * hour
            })
          )
          const running = Option.getOrThrow(yield* storage.getById(task.id))
          // the next run never lies beyond the deadline
          expect(running).toMatchObject({ status: "running", progress: 40, polls: 1, nextRunAt: task.deadlineAt })
          // running never goes back to queued
          yield* TestClock.setTime(task.deadlineAt)
          const [late] = yield* storage.claim("w1", 1, 30_000)
          assert.isFalse(yield* storage.step(task.id, late!.fence, { status: "queued", nextRunAt: yield* now }))
        })
      ))

    it.effect("a step may add charges: charged with the step, refused ones record nothing, test tasks are free", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          yield* storage.accept({ task, charge: chargeOf(task), idempotency: undefined })
          const [claimed] = yield* storage.claim("w1", 1, 30_000)
          const charges = [{ amountMicros: 375_000, description: "reference video seconds" }]
          assert.isTrue(
            yield* storage.step(task.id, claimed!.fence, { upstreamJobId: "j", nextRunAt: yield* now, charges })
          )
          expect(Option.getOrThrow(yield* storage.getById(task.id))).toMatchObject({
            chargedMicros: 3_575_000,
            upstreamJobId: "j"
          })
          expect(ledger.charges.map((c) => [c.taskId, c.amountMicros, c.description])).toEqual([
            [task.id, 3_200_000, "vendor3-3 text-to-video"],
            [task.id, 375_000, "reference video seconds"]
          ])
          // a failed task is refunded everything it was charged
          const [again] = yield* storage.claim("w1", 1, 30_000)
          yield* storage.finish(task.id, again!.fence, {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "x" }
          })
          expect(ledger.refunds.map((r) => r.amountMicros)).toEqual([3_575_000])

          // a refused charge: the step fails and records nothing; the claim still holds
          const limited = newTask({ createdAt: yield* now, accountId: limitedAccount })
          yield* storage.accept({ task: limited, charge: undefined, idempotency: undefined })
          const [held] = yield* storage.claim("w1", 1, 30_000)
          const refused = yield* Effect.flip(
            storage.step(limited.id, held!.fence, { upstreamJobId: "k", nextRunAt: yield* now, charges })
          )
          assert.instanceOf(refused, Errors.SpendLimitExceeded)
          expect(Option.getOrThrow(yield* storage.getById(limited.id))).toMatchObject({
            upstreamJobId: null,
            chargedMicros: 3_200_000,
            leaseOwner: "w1"
          })

          // test tasks are never charged
          const free = newTask({ createdAt: yield* now, environment: "test", chargedMicros: 0 })
          yield* storage.accept({ task: free, charge: undefined, idempotency: undefined })
          const [f] = (yield* storage.claim("w1", 5, 30_000)).filter((t) => t.id === free.id)
          assert.isTrue(yield* storage.step(free.id, f!.fence, { nextRunAt: yield* now, charges }))
          expect(Option.getOrThrow(yield* storage.getById(free.id)).chargedMicros).toBe(0)
          expect(ledger.charges).toHaveLength(2)
        })
      ))

    it.effect("finishing writes the terminal state and its event once; failures and expiry are refunded once", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const ok = newTask({ createdAt: yield* now, webhookUrl: "https://hooks.example.com/x", metadata: { ref: 1 } })
          const bad = newTask({ createdAt: yield* now })
          const late = newTask({ createdAt: yield* now })
          for (const t of [ok, bad, late]) {
            yield* storage.accept({ task: t, charge: chargeOf(t), idempotency: undefined })
          }
          const claimed = yield* storage.claim("w1", 3, 30_000)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          yield* TestClock.adjust(10_000)
          const result = [{ url: "https://files.example.com/a.mp4", duration: 8, format: "mp4", size_bytes: 1000 }]
          const done = yield* storage.finish(ok.id, fenceOf(ok.id), { _tag: "Succeeded", result })
          expect(Option.getOrThrow(done)).toMatchObject({
            status: "succeeded",
            progress: 100,
            result,
            completedAt: yield* now,
            leaseOwner: null,
            nextRunAt: null
          })
          const failed = yield* storage.finish(bad.id, fenceOf(bad.id), {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "boom" }
          })
          expect(Option.getOrThrow(failed)).toMatchObject({
            status: "failed",
            refundedMicros: 3_200_000,
            error: { code: "PROVIDER_ERROR", message: "boom" }
          })
          const expired = yield* storage.finish(late.id, fenceOf(late.id), { _tag: "Expired" })
          expect(Option.getOrThrow(expired)).toMatchObject({
            status: "expired",
            refundedMicros: 3_200_000,
            error: { code: "TASK_EXPIRED" }
          })
          // a second finish with the same fence changes nothing and refunds nothing
          assert.isTrue(Option.isNone(yield* storage.finish(bad.id, fenceOf(bad.id), { _tag: "Expired" })))
          expect(ledger.refunds.map((r) => [r.taskId, r.amountMicros])).toEqual([[bad.id, 3_200_000], [
            late.id,
            3_200_000
          ]])
          const { cursor, entries: events } = yield* readOutboxAtLeast(storage, 3, undefined, 10)
          expect(events.map((e) => [e.taskId, e.event.type])).toEqual([[ok.id, "task.completed"], [
            bad.id,
            "task.failed"
          ], [late.id, "task.expired"]])
          // paging continues exactly after the cursor
          const first = yield* storage.readOutbox(undefined, 2)
          expect(first.entries.map((e) => e.taskId)).toEqual([ok.id, bad.id])
          expect((yield* storage.readOutbox(first.cursor, 10)).entries.map((e) => e.taskId)).toEqual([late.id])
          expect((yield* storage.readOutbox(cursor, 10)).entries).toEqual([])
          expect(events[0]!.webhookUrl).toBe("https://hooks.example.com/x")
          expect(events[0]!.event.data.task).toMatchObject({
            id: ok.id,
            status: "succeeded",
            result,
            metadata: { ref: 1 }
          })
          expect(events[0]!.event.id).toMatch(/^evt_[0-9A-Z]{26}$/)
          expect(events[1]!.event.data.task.error).toEqual({ code: "PROVIDER_ERROR", message: "boom" })
          assert.isTrue(Option.isNone(yield* storage.nextDueAt))
        })
      ))

    it.effect("a finish may record the upstream job with the outcome", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const a = newTask({ createdAt: yield* now })
          const b = newTask({ createdAt: yield* now })
          for (const t of [a, b]) yield* storage.accept({ task: t, charge: undefined, idempotency: undefined })
          const claimed = yield* storage.claim("w1", 2, 30_000)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          const result = [{ url: "https://files.example.com/a.mp4", duration: 8, format: "mp4", size_bytes: 1000 }]
          const done = yield* storage.finish(a.id, fenceOf(a.id), { _tag: "Succeeded", result }, {
            upstreamJobId: "job-a"
          })
          expect(Option.getOrThrow(done)).toMatchObject({ status: "succeeded", upstreamJobId: "job-a", result })
          expect(Option.getOrThrow(yield* storage.getById(a.id)).upstreamJobId).toBe("job-a")
          // without one, the stored job (none here) stays
          yield* storage.finish(b.id, fenceOf(b.id), {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "x" }
          })
          expect(Option.getOrThrow(yield* storage.getById(b.id))).toMatchObject({
            status: "failed",
            upstreamJobId: null
          })
          // a lost fence records nothing, the job neither
          const c = newTask({ createdAt: yield* now })
          yield* storage.accept({ task: c, charge: undefined, idempotency: undefined })
          const [held] = yield* storage.claim("w1", 1, 30_000)
          assert.isTrue(
            Option.isNone(yield* storage.finish(c.id, held!.fence - 1, { _tag: "Expired" }, { upstreamJobId: "job-c" }))
          )
          expect(Option.getOrThrow(yield* storage.getById(c.id))).toMatchObject({
            status: "queued",
            upstreamJobId: null
          })
        })
      ))

    it.effect("concurrent finishes are each answered on their own: one winner per fence, a refused refund fails only its own", () =>
      run(({ ledger }) =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const at = yield* now
          const tasks = [
            ...Array.from({ length: 6 }, () => newTask({ createdAt: at })),
            newTask({ createdAt: at, accountId: unrefundableAccount })
          ]
          for (const t of tasks) yield* storage.accept({ task: t, charge: chargeOf(t), idempotency: undefined })
          const claimed = yield* storage.claim("w1", 10, 30_000)
          expect(claimed).toHaveLength(7)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          const [ok1, ok2, failed, twice, stale, expired, unlucky] = tasks.map((t) => t.id) as [
            string,
            string,
            string,
            string,
            string,
            string,
            string
          ]
          const finishes = [
            storage.finish(ok1, fenceOf(ok1), { _tag: "Succeeded", result: [] }),
            storage.finish(ok2, fenceOf(ok2), { _tag: "Succeeded", result: [] }),
            storage.finish(failed, fenceOf(failed), {
              _tag: "Failed",
              error: { code: "PROVIDER_ERROR", message: "x" }
            }),
            storage.finish(twice, fenceOf(twice), { _tag: "Succeeded", result: [] }),
            storage.finish(twice, fenceOf(twice), { _tag: "Failed", error: { code: "PROVIDER_ERROR", message: "y" } }),
            storage.finish(stale, fenceOf(stale) - 1, { _tag: "Succeeded", result: [] }),
            storage.finish(expired, fenceOf(expired), { _tag: "Expired" }),
            storage.finish(unlucky, fenceOf(unlucky), {
              _tag: "Failed",
              error: { code: "PROVIDER_ERROR", message: "z" }
            })
          ]
          const exits = yield* Effect.all(finishes.map(Effect.exit), { concurrency: "unbounded" })
          const statusOf = (i: number) => {
            const exit = exits[i]!
            return Exit.isFailure(exit)
              ? "error"
              : Option.match(exit.value, { onNone: () => "none", onSome: (t) => t.status })
          }
          expect([0, 1, 2, 5, 6, 7].map(statusOf)).toEqual([
            "succeeded",
            "succeeded",
            "failed",
            "none",
            "expired",
            "error"
          ])
          // the same fence twice: exactly one of the two finishes ended the task
          expect([statusOf(3), statusOf(4)].filter((s) => s !== "none")).toHaveLength(1)
          // the refused refund left its task as it was (still leased, no event); the others are refunded once
          expect(Option.getOrThrow(yield* storage.getById(unlucky))).toMatchObject({
            status: "queued",
            leaseOwner: "w1",
            refundedMicros: 0
          })
          expect(Option.getOrThrow(yield* storage.getById(stale)).status).toBe("queued")
          const twiceEnded = Option.getOrThrow(yield* storage.getById(twice))
          const refunded = [failed, expired, ...(twiceEnded.status === "failed" ? [twice] : [])]
          expect(ledger.refunds.map((r) => r.taskId).sort()).toEqual([...refunded].sort())
          const { entries: events } = yield* readOutboxAtLeast(storage, 5)
          expect(events.map((e) => e.taskId).sort()).toEqual([ok1, ok2, failed, twice, expired].sort())
          // the unlucky task can still be finished once its refund goes through another way: here, it succeeds
          assert.isTrue(
            Option.isSome(yield* storage.finish(unlucky, fenceOf(unlucky), { _tag: "Succeeded", result: [] }))
          )
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
          expect(events.map((e) => e.event.type)).toEqual(["task.cancelled", "task.cancelled"])
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

    it.effect("heartbeats extend leases; releaseAll hands them back, due at once", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          for (let i = 0; i < 3; i++) {
            yield* storage.accept({
              task: newTask({ createdAt: yield* now }),
              charge: undefined,
              idempotency: undefined
            })
          }
          yield* storage.claim("w1", 2, 10_000)
          yield* TestClock.adjust(8000)
          expect(yield* storage.heartbeat("w1", 10_000)).toBe(2)
          yield* TestClock.adjust(8000)
          expect(yield* storage.claim("w2", 5, 10_000)).toHaveLength(1)
          expect(yield* storage.releaseAll("w1")).toBe(2)
          const reclaimed = yield* storage.claim("w2", 5, 10_000)
          expect(reclaimed).toHaveLength(2)
          expect(reclaimed.every((t) => t.fence === 2)).toBe(true)
        })
      ))

    it.effect("markDue makes a waiting task due now", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          const [claimed] = yield* storage.claim("w1", 1, 30_000)
          yield* storage.step(task.id, claimed!.fence, { upstreamJobId: "j", nextRunAt: (yield* now) + 60_000 })
          expect(yield* storage.claim("w1", 1, 30_000)).toEqual([])
          yield* storage.markDue([task.id, "task_unknown"])
          expect((yield* storage.claim("w1", 1, 30_000)).map((t) => t.id)).toEqual([task.id])
        })
      ))

    it.effect("channels: a step records the job's channel, resubmit forgets both, a finish may record them", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const a = newTask({ createdAt: yield* now })
          const b = newTask({ createdAt: yield* now })
          for (const t of [a, b]) yield* storage.accept({ task: t, charge: undefined, idempotency: undefined })
          expect(Option.getOrThrow(yield* storage.getById(a.id)).channelId ?? null).toBeNull()
          const claimed = yield* storage.claim("w1", 2, 30_000)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          assert.isTrue(
            yield* storage.step(a.id, fenceOf(a.id), {
              upstreamJobId: "job-a",
              channelId: "ch_a",
              nextRunAt: yield* now
            })
          )
          expect(Option.getOrThrow(yield* storage.getById(a.id))).toMatchObject({
            upstreamJobId: "job-a",
            channelId: "ch_a"
          })
          expect(yield* storage.channelLoad).toEqual(new Map([["ch_a", 1]]))
          // a plain step keeps them; resubmit forgets both
          const [again] = yield* storage.claim("w1", 1, 30_000)
          assert.isTrue(yield* storage.step(a.id, again!.fence, { nextRunAt: yield* now, polled: true }))
          expect(Option.getOrThrow(yield* storage.getById(a.id))).toMatchObject({
            upstreamJobId: "job-a",
            channelId: "ch_a"
          })
          const [third] = yield* storage.claim("w1", 1, 30_000)
          assert.isTrue(
            yield* storage.step(a.id, third!.fence, { resubmit: true, nextRunAt: yield* now, polled: true })
          )
          expect(Option.getOrThrow(yield* storage.getById(a.id))).toMatchObject({
            upstreamJobId: null,
            channelId: null
          })
          expect(yield* storage.channelLoad).toEqual(new Map())
          // a job submitted and finished under one claim
          const done = yield* storage.finish(b.id, fenceOf(b.id), { _tag: "Succeeded", result: [] }, {
            upstreamJobId: "job-b",
            channelId: "ch_b"
          })
          expect(Option.getOrThrow(done)).toMatchObject({ upstreamJobId: "job-b", channelId: "ch_b" })
          // finished tasks do not count
          expect(yield* storage.channelLoad).toEqual(new Map())
        })
      ))

    it.effect("the first claim of a task without a job records its fence; resubmit clears it; a later claim keeps it", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          const [first] = yield* storage.claim("w1", 1, 1000)
          expect(first).toMatchObject({ fence: 1, submitFence: 1 })
          // the claim's worker died: the next claim still names the first claim's fence (a submit may have begun)
          yield* TestClock.adjust(1000)
          const [second] = yield* storage.claim("w2", 1, 1000)
          expect(second).toMatchObject({ fence: 2, submitFence: 1 })
          // a submit that surely made no job forgets it; the next claim begins anew
          assert.isTrue(yield* storage.step(task.id, 2, { resubmit: true, nextRunAt: yield* now, polled: true }))
          const [third] = yield* storage.claim("w2", 1, 1000)
          expect(third).toMatchObject({ fence: 3, submitFence: 3 })
          // a task with a job keeps what it had
          assert.isTrue(yield* storage.step(task.id, 3, { upstreamJobId: "job-1", nextRunAt: yield* now }))
          const [fourth] = yield* storage.claim("w2", 1, 1000)
          expect(fourth).toMatchObject({ fence: 4, submitFence: 3, upstreamJobId: "job-1" })
        })
      ))

    it.effect("noteJob records a callback's job on an active task without one (none or a marker), never over a job", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const [a, b, c, d] = [0, 1, 2, 3].map(() => newTask({ createdAt: 0 }))
          for (const t of [a!, b!, c!, d!]) {
            yield* storage.accept({ task: { ...t, createdAt: yield* now }, charge: undefined, idempotency: undefined })
          }
          const claimed = yield* storage.claim("w1", 4, 30_000)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          const jobOf = (model: string) => `${model}|req-1`
          // none recorded (the submit's answer still on its way): recorded, with the channel
          assert.isTrue(yield* storage.noteJob(a!.id, "ch_x", jobOf))
          expect(Option.getOrThrow(yield* storage.getById(a!.id))).toMatchObject({
            upstreamJobId: `${a!.model}|req-1`,
            channelId: "ch_x"
          })
          // the submit's own step records the same job after it
          assert.isTrue(
            yield* storage.step(a!.id, fenceOf(a!.id), { upstreamJobId: `${a!.model}|req-1`, nextRunAt: yield* now })
          )
          // an uncertain submit's marker: replaced; a step writing a marker later keeps the job
          assert.isTrue(
            yield* storage.step(b!.id, fenceOf(b!.id), { upstreamJobId: "submit?1", channelId: "ch_x", nextRunAt: 0 })
          )
          assert.isTrue(yield* storage.noteJob(b!.id, "ch_x", jobOf))
          expect(Option.getOrThrow(yield* storage.getById(b!.id)).upstreamJobId).toBe(`${b!.model}|req-1`)
          assert.isTrue(yield* storage.step(c!.id, fenceOf(c!.id), { upstreamJobId: "job-c", nextRunAt: 0 }))
          // a job recorded: kept
          assert.isFalse(yield* storage.noteJob(c!.id, "ch_x", jobOf))
          expect(Option.getOrThrow(yield* storage.getById(c!.id)).upstreamJobId).toBe("job-c")
          const [again] = (yield* storage.claim("w1", 4, 30_000)).filter((t) => t.id === b!.id)
          assert.isTrue(yield* storage.step(b!.id, again!.fence, { upstreamJobId: "submit?2", nextRunAt: 0 }))
          expect(Option.getOrThrow(yield* storage.getById(b!.id)).upstreamJobId).toBe(`${b!.model}|req-1`)
          // an ended task, an unknown id: nothing
          yield* storage.finish(d!.id, fenceOf(d!.id), {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "x" }
          })
          assert.isFalse(yield* storage.noteJob(d!.id, "ch_x", jobOf))
          assert.isFalse(yield* storage.noteJob("task_none", "ch_x", jobOf))
        })
      ))

    it.effect("channels: a finish records what the upstream reported; the usage report sums it per channel and model", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const start = yield* now
          const tasks = [
            newTask({ createdAt: start, model: "m1", chargedMicros: 500_000 }),
            newTask({ createdAt: start, model: "m1", chargedMicros: 500_000 }),
            newTask({ createdAt: start, model: "m2", chargedMicros: 250_000 }),
            newTask({ createdAt: start, model: "m1", chargedMicros: 500_000, environment: "test" })
          ]
          for (const t of tasks) yield* storage.accept({ task: t, charge: chargeOf(t), idempotency: undefined })
          const claimed = yield* storage.claim("w1", 4, 30_000)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          const [a, b, c, d] = tasks as [NewTask, NewTask, NewTask, NewTask]
          const ok = { _tag: "Succeeded", result: [] } as const
          const done = yield* storage.finish(a.id, fenceOf(a.id), {
            ...ok,
            usage: { seconds: 12.5, costMicros: 300_000 }
          }, {
            upstreamJobId: "j-a",
            channelId: "ch_a"
          })
          expect(Option.getOrThrow(done)).toMatchObject({ upstreamSeconds: 12.5, upstreamCostMicros: 300_000 })
          expect(Option.getOrThrow(yield* storage.getById(a.id))).toMatchObject({
            upstreamSeconds: 12.5,
            upstreamCostMicros: 300_000
          })
          // a failure is refunded: it counts as charged nothing, its reported run time still counts
          yield* storage.finish(b.id, fenceOf(b.id), {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "x" },
            usage: { seconds: 2 }
          }, { upstreamJobId: "j-b", channelId: "ch_a" })
          // nothing reported: the columns stay empty
          yield* storage.finish(c.id, fenceOf(c.id), ok, { upstreamJobId: "j-c", channelId: "ch_a" })
          expect(Option.getOrThrow(yield* storage.getById(c.id)).upstreamCostMicros ?? null).toBeNull()
          // test tasks are never in the report
          yield* storage.finish(d.id, fenceOf(d.id), { ...ok, usage: { costMicros: 9 } }, {
            upstreamJobId: "j-d",
            channelId: "ch_a"
          })
          const report = yield* storage.channelUsage(start)
          expect(report).toEqual([
            {
              channelId: "ch_a",
              model: "m1",
              tasks: 2,
              succeeded: 1,
              failed: 1,
              chargedMicros: 500_000,
              upstreamSeconds: 14.5,
              upstreamCostMicros: 300_000,
              reported: 1
            },
            {
              channelId: "ch_a",
              model: "m2",
              tasks: 1,
              succeeded: 1,
              failed: 0,
              chargedMicros: 250_000,
              upstreamSeconds: 0,
              upstreamCostMicros: 0,
              reported: 0
            }
          ])
          // the window: tasks created before `since` are left out
          expect(yield* storage.channelUsage(start + 1)).toEqual([])
        })
      ))

    it.effect("channels: reservations respect the limit across claimers, need the fence, and free up when tasks end", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          for (let i = 0; i < 12; i++) {
            yield* storage.accept({
              task: newTask({ createdAt: yield* now }),
              charge: undefined,
              idempotency: undefined
            })
          }
          const claimed = yield* storage.claim("w1", 12, 30_000)
          expect(claimed.length).toBe(12)
          // twelve reservations at once against a limit of 5: exactly 5 win
          const won = yield* Effect.all(
            claimed.map((task) => storage.reserveChannel(task.id, task.fence, "ch_x", 5)),
            { concurrency: "unbounded" }
          )
          expect(won.filter(Boolean).length).toBe(5)
          expect(yield* storage.channelLoad).toEqual(new Map([["ch_x", 5]]))
          // a task already on the channel keeps its slot when it asks again
          const holder = claimed[won.indexOf(true)]!
          assert.isTrue(yield* storage.reserveChannel(holder.id, holder.fence, "ch_x", 5))
          // a stale fence reserves nothing; no limit always reserves
          const loser = claimed[won.indexOf(false)]!
          assert.isFalse(yield* storage.reserveChannel(loser.id, loser.fence - 1, "ch_y", 0))
          assert.isTrue(yield* storage.reserveChannel(loser.id, loser.fence, "ch_y", 0))
          expect(yield* storage.channelLoad).toEqual(new Map([["ch_x", 5], ["ch_y", 1]]))
          // a holder that ends frees its slot for the next
          yield* storage.finish(holder.id, holder.fence, {
            _tag: "Failed",
            error: { code: "PROVIDER_ERROR", message: "x" }
          })
          const next = claimed.filter((_, i) => !won[i]).find((task) => task.id !== loser.id)!
          assert.isTrue(yield* storage.reserveChannel(next.id, next.fence, "ch_x", 5))
          const last = claimed.filter((_, i) => !won[i]).find((task) => task.id !== loser.id && task.id !== next.id)!
          assert.isFalse(yield* storage.reserveChannel(last.id, last.fence, "ch_x", 5))
        })
      ))

    it.effect("concurrent claimers never lease the same task twice", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          for (let i = 0; i < 40; i++) {
            yield* storage.accept({
              task: newTask({ createdAt: yield* now }),
              charge: undefined,
              idempotency: undefined
            })
          }
          const batches = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => storage.claim(`w${i}`, 7, 30_000)),
            { concurrency: "unbounded" }
          )
          const ids = batches.flat().map((t) => t.id)
          expect(new Set(ids).size).toBe(ids.length)
          expect(ids.length).toBe(40)
        })
      ))

    it.effect(
      "list totals stay exact through accepts and every transition, with no filter, one filter or several",
      () =>
        run(() =>
          Effect.gen(function*() {
            const storage = yield* TaskStorage
            const accounts = ["acct_a", "acct_b", limitedAccount]
            const kinds: ReadonlyArray<Pick<NewTask, "provider" | "model">> = [
              { provider: "vendor3", model: "vendor3-3" },
              { provider: "vendor3", model: "vendor3-3_fast" },
              { provider: "vendor7", model: "vendor7-imagine/text-to-video" }
            ]
            const ids: Array<string> = []
            const accept = (i: number, accountId: string, extra: Partial<NewTask> = {}) =>
              Effect.gen(function*() {
                yield* TestClock.adjust(1000)
                const task = newTask({ createdAt: yield* now, accountId, ...kinds[i % kinds.length]!, ...extra })
                const result = yield* storage.accept({ task, charge: undefined, idempotency: undefined })
                ids.push(task.id)
                return result.task
              })
            const t0 = yield* now
            /** Every total of every account, against the tasks as stored (read one by one). */
            const expectTotals = (label: string) =>
              Effect.gen(function*() {
                const stored = (yield* Effect.forEach(ids, (id) => storage.getById(id))).flatMap(Option.toArray)
                const queries: Array<readonly [Omit<ListQuery, "limit">, (task: TaskRecord) => boolean]> = [
                  [{}, () => true],
                  ...Task.taskStatuses.map((status) => [{ status }, (t: TaskRecord) => t.status === status] as const),
                  ...["vendor3", "vendor7", "vendor1"].map((provider) =>
                    [{ provider }, (t: TaskRecord) => t.provider === provider] as const
                  ),
                  ...kinds.map(({ model }) => [{ model }, (t: TaskRecord) => t.model === model] as const),
                  [{ status: "queued", provider: "vendor3" }, (t) => t.status === "queued" && t.provider === "vendor3"],
                  [{ provider: "vendor3", model: "vendor3-3_fast" }, (t) => t.model === "vendor3-3_fast"],
                  [
                    { status: "succeeded", createdAfter: t0 + 3000 },
                    (t) => t.status === "succeeded" && t.createdAt >= t0 + 3000
                  ],
                  [{ createdBefore: t0 + 5000 }, (t) => t.createdAt < t0 + 5000],
                  [{ idPrefix: "task_" }, () => true],
                  [{ idPrefix: "" }, () => true]
                ]
                for (const accountId of accounts) {
                  const mine = stored.filter((t) => t.accountId === accountId)
                  for (const [query, matches] of queries) {
                    const page = yield* storage.list(accountId, { ...query, limit: 1 })
                    expect(page.total, `${label}: ${accountId} ${JSON.stringify(query)}`).toBe(
                      mine.filter(matches).length
                    )
                    // the cursor never changes the total
                    const last = page.items[0]
                    if (last !== undefined) {
                      const next = yield* storage.list(accountId, { ...query, limit: 1, beforeId: last.id })
                      expect(next.total, `${label}: ${accountId} ${JSON.stringify(query)}, page 2`).toBe(page.total)
                    }
                  }
                }
              })

            yield* expectTotals("empty")
            for (let i = 0; i < 9; i++) yield* accept(i, "acct_a")
            for (let i = 0; i < 3; i++) yield* accept(i, "acct_b")
            // refused and replayed accepts add nothing
            const refused = newTask({ createdAt: yield* now, accountId: poorAccount })
            assert.isTrue(
              Exit.isFailure(
                yield* Effect.exit(storage.accept({ task: refused, charge: chargeOf(refused), idempotency: undefined }))
              )
            )
            const claim = { key: "k", fingerprint: "f", notBefore: 0 }
            const keyed = newTask({ createdAt: yield* now, accountId: "acct_b" })
            yield* storage.accept({ task: keyed, charge: undefined, idempotency: claim })
            ids.push(keyed.id)
            const replay = yield* storage.accept({
              task: newTask({ createdAt: yield* now, accountId: "acct_b" }),
              charge: undefined,
              idempotency: claim
            })
            assert.strictEqual(replay._tag, "Replayed")
            yield* expectTotals("accepted")

            // claim: pending -> queued
            const claimed = yield* storage.claim("w1", 8, 30_000)
            expect(claimed).toHaveLength(8)
            yield* expectTotals("claimed")
            const [c0, c1, c2, c3, c4, c5, c6, c7] = claimed
            // steps: queued -> running, and a step that keeps the status
            assert.isTrue(
              yield* storage.step(c0!.id, c0!.fence, { status: "running", progress: 10, nextRunAt: yield* now })
            )
            assert.isTrue(
              yield* storage.step(c1!.id, c1!.fence, {
                upstreamJobId: "j1",
                polled: true,
                nextRunAt: (yield* now) + hour
              })
            )
            yield* expectTotals("stepped")
            // finish: succeeded, failed, expired (from queued); a stale fence changes nothing
            assert.isTrue(Option.isSome(yield* storage.finish(c2!.id, c2!.fence, { _tag: "Succeeded", result: [] })))
            assert.isTrue(
              Option.isSome(
                yield* storage.finish(c3!.id, c3!.fence, { _tag: "Failed", error: { code: "X", message: "x" } })
              )
            )
            assert.isTrue(Option.isSome(yield* storage.finish(c4!.id, c4!.fence, { _tag: "Expired" })))
            assert.isTrue(Option.isNone(yield* storage.finish(c2!.id, c2!.fence, { _tag: "Expired" })))
            yield* expectTotals("finished")
            // cancel: queued and pending; not a running one
            const pending = (yield* storage.list("acct_a", { limit: 1, status: "pending" })).items[0]!
            assert.strictEqual((yield* storage.cancel(c5!.accountId, c5!.id))._tag, "Cancelled")
            assert.strictEqual((yield* storage.cancel("acct_a", pending.id))._tag, "Cancelled")
            expect((yield* storage.cancel(c0!.accountId, c0!.id))._tag).toBe("NotCancellable")
            yield* expectTotals("cancelled")
            // leases: heartbeat, release, a lapsed lease taken over, markDue: no status changes
            yield* storage.heartbeat("w1", 30_000)
            yield* storage.markDue([c1!.id])
            expect(yield* storage.releaseAll("w1")).toBeGreaterThan(0)
            yield* expectTotals("released")
            // the running task (due now) finishes from running; the re-claimed queued ones from queued
            const again = yield* storage.claim("w2", 20, 30_000)
            yield* expectTotals("claimed again")
            const fenceOf = (id: string) => again.find((t) => t.id === id)!.fence
            assert.isTrue(
              Option.isSome(yield* storage.finish(c0!.id, fenceOf(c0!.id), { _tag: "Succeeded", result: [] }))
            )
            assert.isTrue(
              Option.isSome(
                yield* storage.finish(c6!.id, fenceOf(c6!.id), { _tag: "Failed", error: { code: "X", message: "x" } })
              )
            )
            yield* TestClock.adjust(30_001)
            const lapsed = yield* storage.claim("w3", 20, 30_000)
            expect(lapsed.map((t) => t.id)).toContain(c7!.id)
            assert.isTrue(Option.isSome(
              yield* storage.finish(
                c7!.id,
                lapsed.find((t) => t.id === c7!.id)!.fence,
                { _tag: "Expired" }
              )
            ))
            yield* expectTotals("finished again")
            // retry: a new task pointing at the failed one
            yield* accept(0, c3!.accountId, { originalTaskId: c3!.id })
            // a step whose extra charge is refused records nothing, its status change included
            const limited = yield* accept(1, limitedAccount)
            const [held] = (yield* storage.claim("w4", 20, 30_000)).filter((t) => t.id === limited.id)
            const charges = [{ amountMicros: 1, description: "extra" }]
            const stepped = yield* Effect.exit(
              storage.step(limited.id, held!.fence, { status: "running", nextRunAt: yield* now, charges })
            )
            assert.isTrue(Exit.isFailure(stepped))
            expect(Option.getOrThrow(yield* storage.getById(limited.id)).status).toBe("queued")
            yield* expectTotals("retried and refused")
          })
        ),
      { timeout: 30_000 }
    )
  })
