/**
 * Conformance of the `TaskLifecycle` port (claims, fences, steps, finishes, due times and the jobs callbacks name):
 * every task storage (memory, SQLite, PostgreSQL) must pass it; `TaskStorageSuite.ts` registers it with the other
 * ports' suites.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Errors } from "@mediagate/contract"
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
  readOutboxAtLeast,
  runOn,
  unrefundableAccount
} from "./support.js"

/** Registers the suite for one backend. */
export const stepsSuite = (name: string, backend: Backend) =>
  describe(`TaskLifecycle: claim, step, finish conformance: ${name}`, () => {
    const run = runOn(backend)

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

    it.effect("a step records the upstream's report (queue position, log lines): kept, replaced or cleared", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const task = newTask({ createdAt: yield* now })
          yield* storage.accept({ task, charge: chargeOf(task), idempotency: undefined })
          const reportAfter = (update: Omit<Parameters<typeof storage.step>[2], "nextRunAt">) =>
            Effect.gen(function*() {
              const [claimed] = yield* storage.claim("w1", 1, 30_000)
              assert.isTrue(yield* storage.step(task.id, claimed!.fence, { ...update, nextRunAt: yield* now }))
              return Option.getOrThrow(yield* storage.getById(task.id)).upstreamReport ?? null
            })
          expect(yield* reportAfter({ upstreamJobId: "job-1" })).toBeNull()
          const queued = { position: 3, logs: ["queued", "line with \"quotes\" and ünïcode"] }
          expect(yield* reportAfter({ report: queued })).toEqual(queued)
          // a step without a report keeps the recorded one
          expect(yield* reportAfter({ polled: true })).toEqual(queued)
          const running = { logs: ["queued", "started"] }
          expect(yield* reportAfter({ status: "running", progress: 10, report: running })).toEqual(running)
          // with extra charges too (the other write path)
          const charged = { logs: ["queued", "started", "half"] }
          const charges = [{ amountMicros: 1_000, description: "extra" }]
          expect(yield* reportAfter({ report: charged, charges })).toEqual(charged)
          expect(yield* reportAfter({ report: null })).toBeNull()
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
          expect(events.map((e) => [e.taskId, e.eventType])).toEqual([[ok.id, "task.completed"], [
            bad.id,
            "task.failed"
          ], [late.id, "task.expired"]])
          // paging continues exactly after the cursor
          const first = yield* storage.readOutbox(undefined, 2)
          expect(first.entries.map((e) => e.taskId)).toEqual([ok.id, bad.id])
          expect((yield* storage.readOutbox(first.cursor, 10)).entries.map((e) => e.taskId)).toEqual([late.id])
          expect((yield* storage.readOutbox(cursor, 10)).entries).toEqual([])
          expect(events[0]!.webhookUrl).toBe("https://hooks.example.com/x")
          expect((yield* events[0]!.event).data.task).toMatchObject({
            id: ok.id,
            status: "succeeded",
            result,
            metadata: { ref: 1 }
          })
          expect(events[0]!.eventId).toMatch(/^evt_[0-9A-Z]{26}$/)
          expect((yield* events[1]!.event).data.task.error).toEqual({ code: "PROVIDER_ERROR", message: "boom" })
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
          const [a, b, c, d, e] = [0, 1, 2, 3, 4].map(() => newTask({ createdAt: 0 }))
          for (const t of [a!, b!, c!, d!, e!]) {
            yield* storage.accept({ task: { ...t, createdAt: yield* now }, charge: undefined, idempotency: undefined })
          }
          const claimed = yield* storage.claim("w1", 5, 30_000)
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
          // callbacks at once (written together where the storage batches them): the first of a task's records it
          const together = yield* Effect.all([
            storage.noteJob(e!.id, "ch_y", jobOf),
            storage.noteJob(e!.id, "ch_y", (model) => `${model}|req-2`),
            storage.noteJob(c!.id, "ch_x", jobOf),
            storage.noteJob("task_none", "ch_x", jobOf)
          ], { concurrency: "unbounded" })
          expect(together).toEqual([true, false, false, false])
          expect(Option.getOrThrow(yield* storage.getById(e!.id))).toMatchObject({
            upstreamJobId: `${e!.model}|req-1`,
            channelId: "ch_y"
          })
        })
      ))

    it.effect("a change that wakes a task during a claim keeps it due through that claim's step", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const start = yield* now
          // deadlines past the next polls
          const [a, b, c] = [0, 1, 2].map(() => newTask({ createdAt: start, deadlineAt: start + 2 * hour }))
          for (const t of [a!, b!, c!]) yield* storage.accept({ task: t, charge: undefined, idempotency: undefined })
          const claimed = yield* storage.claim("w1", 3, 30_000)
          const fenceOf = (id: string) => claimed.find((t) => t.id === id)!.fence
          const jobOf = (model: string) => `${model}|req-1`
          const later = start + hour
          // the callbacks of a and c came while their submits' answers were on their way (heard by another thread
          // or process than the worker's): their jobs noted, the tasks made due
          assert.isTrue(yield* storage.noteJob(a!.id, "ch_x", jobOf))
          assert.isTrue(yield* storage.noteJob(c!.id, "ch_x", jobOf))
          yield* storage.markDue([a!.id, c!.id])
          // each submit's step records its job with the next poll an hour away (c's with a measured charge)
          for (const t of [a!, b!]) {
            assert.isTrue(
              yield* storage.step(t.id, fenceOf(t.id), {
                upstreamJobId: jobOf(t.model),
                channelId: "ch_x",
                nextRunAt: later
              })
            )
          }
          assert.isTrue(
            yield* storage.step(c!.id, fenceOf(c!.id), {
              upstreamJobId: jobOf(c!.model),
              channelId: "ch_x",
              nextRunAt: later,
              charges: [{ amountMicros: 1_000, description: "measured input" }]
            })
          )
          // a and c are due now (their jobs told of a change), b waits for its poll
          const again = yield* storage.claim("w2", 3, 30_000)
          expect(again.map((t) => t.id).sort()).toEqual([a!.id, c!.id].sort())
          for (const t of again) expect(t).toMatchObject({ upstreamJobId: jobOf(t.model), channelId: "ch_x" })
          // a poll step: a's job changes again while its poll runs (the change heard elsewhere); c's does not
          yield* storage.markDue([a!.id])
          for (const t of again) {
            assert.isTrue(yield* storage.step(t.id, t.fence, { nextRunAt: start + 90 * 60_000, polled: true }))
          }
          const third = yield* storage.claim("w2", 3, 30_000)
          expect(third.map((t) => t.id)).toEqual([a!.id])
          // the wake-up was that claim's: the next claim's step keeps its own next poll
          assert.isTrue(yield* storage.step(a!.id, third[0]!.fence, { nextRunAt: start + 90 * 60_000, polled: true }))
          expect(yield* storage.claim("w2", 3, 30_000)).toEqual([])
          yield* TestClock.adjust(hour)
          expect((yield* storage.claim("w2", 3, 30_000)).map((t) => t.id)).toEqual([b!.id])
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
  })
