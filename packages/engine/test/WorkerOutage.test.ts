/**
 * The worker through storage outages (docs/operations.md#outages): claims that fail, and a claim that committed but
 * whose answer was lost, neither stop the worker nor strand a task. In real time with short leases, on the memory
 * storage wrapped to fail like a database that drops its connections.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Planner from "../src/Planner.js"
import * as ResultLinks from "../src/ResultLinks.js"
import * as TaskService from "../src/TaskService.js"
import { layerMemory } from "../src/TaskStorage.js"
import * as Worker from "../src/Worker.js"
import { awaitTerminal, principal } from "./EngineSuite.js"
import { makeFakeUpstream } from "./FakeUpstream.js"
import { makeRecordingBilling, withClaim, withStorage } from "./support.js"

/** Claims: `lost` commit and then fail (the answer lost), the `failing` ones after that fail outright. */
const flaky = (plan: { lost: number; failing: number }) =>
  withClaim((claim, owner, limit, leaseMs) =>
    Effect.suspend(() => {
      if (plan.lost > 0) {
        plan.lost--
        return Effect.zipRight(
          claim(owner, limit, leaseMs),
          Effect.fail(new PersistenceError({ message: "task storage: claim failed (connection lost)" }))
        )
      }
      if (plan.failing > 0) {
        plan.failing--
        return Effect.fail(new PersistenceError({ message: "task storage: claim failed" }))
      }
      return claim(owner, limit, leaseMs)
    })
  )

describe("Worker through outages", () => {
  it.live(
    "keeps claiming after failed claims, and a lost claim's tasks are claimed again once its lease runs out",
    () => {
      const billing = makeRecordingBilling()
      const upstream = makeFakeUpstream({ durationMs: 20, callbacks: true })
      const plan = { lost: 0, failing: 0 }
      const layer = Worker.layer({
        concurrency: 4,
        lease: "1 second",
        idle: "100 millis",
        backoff: { cap: "200 millis" }
      }).pipe(
        Layer.provideMerge(TaskService.layer),
        Layer.provide(ResultLinks.layerAsStored),
        Layer.provideMerge(Planner.layerFixed({ priceMicros: 1_000_000, estimatedSeconds: 1, timeout: "1 minute" })),
        Layer.provideMerge(flaky(plan)),
        Layer.provideMerge(layerMemory().pipe(Layer.provide(billing.layer))),
        Layer.provideMerge(upstream.layer)
      )
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const create = (prompt: string) =>
          tasks.create(principal(), {
            endpoint: "vendor3/text-to-video",
            request: { model: "vendor3-3", input: { prompt } },
            idempotencyKey: undefined
          })
        // the first claims after these tasks are accepted: one commits and loses its answer, five more fail
        plan.lost = 1
        plan.failing = 5
        const acks = yield* Effect.forEach(["one", "two", "three"], create)
        const done = yield* awaitTerminal(acks.map((a) => a.id), 8_000)
        expect(done.map((t) => t.status)).toEqual(["succeeded", "succeeded", "succeeded"])
        // the lost claim's tasks were taken over under a newer fence, each submitted once
        assert.isTrue(done.every((t) => t.fence >= 2))
        assert.isTrue(acks.every((a) => upstream.log.submits.get(a.id) === 1))
        assert.deepStrictEqual(plan, { lost: 0, failing: 0 })
        // and the worker still runs
        const later = yield* create("four")
        expect((yield* awaitTerminal([later.id], 5_000))[0]!.status).toBe("succeeded")
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    20_000
  )

  it.live(
    "a job just submitted is recorded through a storage outage: the write is retried, the job submitted once",
    () => {
      const billing = makeRecordingBilling()
      const upstream = makeFakeUpstream({ durationMs: 20 })
      // the writes that record a submitted job: the first two fail as if the database were down
      const recording = { failing: 2, attempts: 0 }
      const outage = withStorage((storage) => ({
        ...storage,
        step: (id, fence, update) =>
          Effect.suspend(() => {
            if (update.upstreamJobId === undefined) return storage.step(id, fence, update)
            recording.attempts++
            if (recording.failing === 0) return storage.step(id, fence, update)
            recording.failing--
            return Effect.fail(new PersistenceError({ message: "task storage: step failed (database down)" }))
          })
      }))
      const layer = Worker.layer({ concurrency: 4, idle: "100 millis" }).pipe(
        Layer.provideMerge(TaskService.layer),
        Layer.provide(ResultLinks.layerAsStored),
        Layer.provideMerge(Planner.layerFixed({ priceMicros: 1_000_000, estimatedSeconds: 1, timeout: "1 minute" })),
        Layer.provideMerge(outage),
        Layer.provideMerge(layerMemory().pipe(Layer.provide(billing.layer))),
        Layer.provideMerge(upstream.layer)
      )
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: { model: "vendor3-3", input: { prompt: "recorded" } },
          idempotencyKey: undefined
        })
        const [done] = yield* awaitTerminal([ack.id], 8_000)
        expect(done!.status).toBe("succeeded")
        // the write tried three times (0.2 s, then 0.4 s apart), and the job it recorded polled to its end: one submit
        expect(recording).toEqual({ failing: 0, attempts: 3 })
        expect(upstream.log.submits.get(ack.id)).toBe(1)
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    20_000
  )
})
