/**
 * Conformance of the `TaskOutbox` and `TaskRetention` ports (the outbox read in order behind a cursor and pruned only
 * behind it; result scans and sizes; idempotency records pruned): every task storage (memory, SQLite, PostgreSQL)
 * must pass it; `TaskStorageSuite.ts` registers it with the other ports' suites.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Task } from "@mediagate/contract"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { TaskLifecycle } from "../src/TaskLifecycle.js"
import { TaskOutbox } from "../src/TaskOutbox.js"
import { TaskRetention } from "../src/TaskRetention.js"
import { type Backend, newTask, readOutboxAtLeast, runOn, start } from "./support.js"

/** Accepts a task of `environment` and ends it `succeeded` with `result`, or `failed` without one: its id. */
const ended = (environment: "live" | "test", result: ReadonlyArray<Task.ResultItem> | undefined) =>
  Effect.gen(function*() {
    const lifecycle = yield* TaskLifecycle
    const task = newTask({ createdAt: yield* Clock.currentTimeMillis, environment })
    yield* lifecycle.accept({ task, charge: undefined, idempotency: undefined })
    const [claimed] = yield* lifecycle.claim("worker", 1, 60_000)
    expect(claimed?.id).toBe(task.id)
    const outcome = result === undefined
      ? { _tag: "Failed" as const, error: { code: "PROVIDER_ERROR" as const, message: "no" } }
      : { _tag: "Succeeded" as const, result }
    expect(Option.isSome(yield* lifecycle.finish(task.id, claimed!.fence, outcome))).toBe(true)
    yield* TestClock.adjust(10)
    return task.id
  })

const file = (bytes: number): Task.ResultItem => ({
  url: "https://files.example.com/a.png",
  format: "png",
  size_bytes: bytes
})

/** Registers the suite for one backend. */
export const outboxSuite = (name: string, backend: Backend) =>
  describe(`TaskOutbox and TaskRetention conformance: ${name}`, () => {
    const run = runOn(backend)

    it.effect("the outbox is read in order behind a cursor, and pruned only behind it and before the time given", () =>
      run(() =>
        Effect.gen(function*() {
          const outbox = yield* TaskOutbox
          const ids = [
            yield* ended("live", [file(1)]),
            yield* ended("live", undefined),
            yield* ended("test", [file(2)])
          ]
          const all = yield* readOutboxAtLeast(outbox, 3)
          expect(all.entries.map((entry) => [entry.taskId, entry.eventType, entry.environment])).toStrictEqual([
            [ids[0], "task.completed", "live"],
            [ids[1], "task.failed", "live"],
            [ids[2], "task.completed", "test"]
          ])
          const first = yield* readOutboxAtLeast(outbox, 1, undefined, 1)
          expect(first.entries.map((entry) => entry.taskId)).toStrictEqual([ids[0]])
          const rest = yield* readOutboxAtLeast(outbox, 2, first.cursor, 10)
          expect(rest.entries.map((entry) => entry.taskId)).toStrictEqual([ids[1], ids[2]])
          // the end of the outbox: nothing after the last cursor
          expect((yield* outbox.readOutbox(rest.cursor, 10)).entries).toStrictEqual([])

          // without a cursor nothing is pruned; behind it, only what was written before `before`
          const later = (yield* Clock.currentTimeMillis) + 1
          expect(yield* outbox.pruneOutbox(undefined, later)).toBe(0)
          expect(yield* outbox.pruneOutbox(first.cursor, start)).toBe(0)
          expect(yield* outbox.pruneOutbox(first.cursor, later)).toBe(1)
          expect((yield* readOutboxAtLeast(outbox, 2, undefined, 10)).entries.map((entry) => entry.taskId))
            .toStrictEqual([
              ids[1],
              ids[2]
            ])
        })
      ))

    it.effect("retention scans an environment's results in id order and sums the bytes of its succeeded ones", () =>
      run(() =>
        Effect.gen(function*() {
          const retention = yield* TaskRetention
          const a = yield* ended("live", [file(100), file(20)])
          const b = yield* ended("live", undefined)
          const c = yield* ended("test", [file(7)])
          const d = yield* ended("live", [file(3)])

          const scanned = yield* retention.scanResults("live", undefined, "task_~", 10)
          expect(scanned.map((task) => [task.id, task.status, task.result?.length ?? 0])).toStrictEqual([
            [a, "succeeded", 2],
            [b, "failed", 0],
            [d, "succeeded", 1]
          ])
          // bounded on both sides and by the limit
          expect((yield* retention.scanResults("live", a, d, 10)).map((task) => task.id)).toStrictEqual([b])
          expect((yield* retention.scanResults("live", undefined, "task_~", 1)).map((task) => task.id)).toStrictEqual([
            a
          ])
          expect((yield* retention.scanResults("test", undefined, "task_~", 10)).map((task) => task.id)).toStrictEqual([
            c
          ])

          expect(yield* retention.resultBytes("acct_a", "live", a)).toBe(123)
          expect(yield* retention.resultBytes("acct_a", "live", b)).toBe(3)
          expect(yield* retention.resultBytes("acct_a", "test", a)).toBe(7)
          expect(yield* retention.resultBytes("acct_other", "live", a)).toBe(0)
        })
      ))

    it.effect("idempotency records are pruned by their age", () =>
      run(() =>
        Effect.gen(function*() {
          const lifecycle = yield* TaskLifecycle
          const retention = yield* TaskRetention
          for (const key of ["k-1", "k-2"]) {
            const task = newTask({ createdAt: yield* Clock.currentTimeMillis })
            yield* lifecycle.accept({ task, charge: undefined, idempotency: { key, fingerprint: key, notBefore: 0 } })
            yield* TestClock.adjust(1000)
          }
          expect(yield* retention.pruneIdempotency(start)).toBe(0)
          expect(yield* retention.pruneIdempotency(start + 500)).toBe(1)
          expect(yield* retention.pruneIdempotency(start + 5000)).toBe(1)
        })
      ))
  })
