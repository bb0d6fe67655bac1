/**
 * Conformance of the `ChannelSlots` port (channel slots and usage: the channel recorded with a job, reservations within
 * the limit, usage per model): every task storage (memory, SQLite, PostgreSQL) must pass it; `TaskStorageSuite.ts`
 * registers it with the other ports' suites.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { NewTask } from "../src/TaskRecord.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { type Backend, chargeOf, newTask, now, runOn } from "./support.js"

/** Registers the suite for one backend. */
export const slotsSuite = (name: string, backend: Backend) =>
  describe(`ChannelSlots conformance: ${name}`, () => {
    const run = runOn(backend)

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
  })
