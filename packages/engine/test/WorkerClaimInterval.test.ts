/**
 * The worker's claim interval (`WorkerOptions.claimInterval`): under a stream of wake-ups (an accept each), claims are
 * at least the interval apart and each takes every task due since the last one; without it, every wake-up claims.
 */
import { assert, describe, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Planner from "../src/Planner.js"
import * as ResultLinks from "../src/ResultLinks.js"
import * as TaskService from "../src/TaskService.js"
import { layerMemory } from "../src/TaskStorage.js"
import * as Worker from "../src/Worker.js"
import { principal } from "./EngineSuite.js"
import { makeFakeUpstream } from "./FakeUpstream.js"
import { makeRecordingBilling, withClaim } from "./support.js"

/** The claims that found tasks: when each began (ms) and how many it took. */
const recording = (claims: Array<{ readonly at: number; readonly tasks: number }>) =>
  withClaim((claim, owner, limit, leaseMs) =>
    Effect.suspend(() => {
      const at = performance.now()
      return Effect.tap(claim(owner, limit, leaseMs), (tasks) => {
        if (tasks.length > 0) claims.push({ at, tasks: tasks.length })
      })
    })
  )

/** 40 tasks accepted one by one, 2 ms apart, on a worker with `claimInterval`; the claims that took them. */
const claimsOf = (claimInterval: Duration.DurationInput) => {
  const claims: Array<{ readonly at: number; readonly tasks: number }> = []
  const layer = Worker.layer({ concurrency: 64, claimInterval }).pipe(
    Layer.provideMerge(TaskService.layer),
    Layer.provide(ResultLinks.layerAsStored),
    Layer.provideMerge(Planner.layerFixed({ priceMicros: 0, estimatedSeconds: 60, timeout: "5 minutes" })),
    Layer.provideMerge(recording(claims)),
    Layer.provideMerge(layerMemory().pipe(Layer.provide(makeRecordingBilling().layer))),
    // jobs that outlast the test: each task is claimed once, for its submit
    Layer.provideMerge(makeFakeUpstream({ durationMs: 60_000 }).layer)
  )
  return Effect.gen(function*() {
    const tasks = yield* Services.TaskService
    const first = performance.now()
    for (let i = 0; i < 40; i++) {
      yield* tasks.create(principal(), {
        endpoint: "vendor3/text-to-video",
        request: { model: "vendor3-3", input: { prompt: `task ${i}` } },
        idempotencyKey: undefined
      })
      yield* Effect.sleep("2 millis")
    }
    const accepting = performance.now() - first
    // every task claimed (submitted)
    for (let i = 0; i < 200 && claims.reduce((n, c) => n + c.tasks, 0) < 40; i++) yield* Effect.sleep("10 millis")
    return { claims, accepting }
  }).pipe(Effect.provide(layer), Effect.scoped)
}

describe("Worker claim interval", () => {
  it.live(
    "claims at most once per interval under a stream of accepts, each claim taking what became due",
    () =>
      Effect.gen(function*() {
        const { accepting, claims: spaced } = yield* claimsOf("50 millis")
        assert.strictEqual(spaced.reduce((n, c) => n + c.tasks, 0), 40)
        // about the interval apart: the worker reads the clock (whole milliseconds) when it decides to claim, and on a
        // busy machine the claim may start well after that read (the process descheduled in between: seen 50 ms
        // under a full CI run), so that it and the next claim come close together. A stall delays one claim, not
        // two in a row: of any three claims, the first and the last are at least the interval apart
        for (let i = 2; i < spaced.length; i++) {
          assert.isAtLeast(spaced[i]!.at - spaced[i - 2]!.at, 40, JSON.stringify(spaced))
        }
        // so the accepts share a claim per interval (however long accepting took on a busy machine)
        assert.isAtMost(spaced.length, Math.ceil(accepting / 50) + 2, `${accepting} ms: ${JSON.stringify(spaced)}`)
        assert.isAtLeast(Math.max(...spaced.map((c) => c.tasks)), 2, JSON.stringify(spaced))

        // without an interval, wake-ups claim as they come: claims closer together than the interval
        const eager = (yield* claimsOf("0 millis")).claims
        assert.strictEqual(eager.reduce((n, c) => n + c.tasks, 0), 40)
        assert.isTrue(eager.some((claim, i) => i > 0 && claim.at - eager[i - 1]!.at < 40), JSON.stringify(eager))
      }),
    20_000
  )
})
