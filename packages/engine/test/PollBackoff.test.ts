/**
 * When a job's poll fails retryably: the retry backoff counts the task's polls, good ones too, so it is kept to the
 * poll schedule's next poll (and no sooner than the backoff's first step); an upstream's own `retryAfterMs` wins.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { runStepWith, type StepStorage } from "../src/internal/worker/step.js"
import type { StepUpdate } from "../src/TaskLifecycle.js"
import { fromNew, type TaskRecord } from "../src/TaskRecord.js"
import { Upstream, UpstreamError } from "../src/Upstream.js"
import { newTask, start } from "./support.js"

/** The next run a failed poll of a job polled `polls` times records, in ms from now. */
const retryIn = (
  polls: number,
  pollDelayMs: number,
  error: UpstreamError = new UpstreamError({ message: "upstream timed out", retryable: true })
) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(start)
    const task: TaskRecord = {
      ...fromNew(newTask({ createdAt: start, deadlineAt: start + 3_600_000 })),
      status: "running",
      upstreamJobId: "job-1",
      polls
    }
    const steps: Array<StepUpdate> = []
    const storage: StepStorage = {
      step: (_id, _fence, update) => Effect.sync(() => (steps.push(update), true)),
      finish: () => Effect.die("the task must not finish"),
      getById: () => Effect.succeed(Option.some(task))
    }
    const upstream = Upstream.of({
      submit: () => Effect.die("no submit"),
      poll: () => Effect.fail(error),
      cancel: () => Effect.void,
      changes: Stream.empty,
      notifiesChanges: false
    })
    yield* runStepWith(storage, upstream, task, {
      pollDelay: () => pollDelayMs,
      retryDelay: (attempt) => Math.min(60_000, 2000 * 2 ** attempt)
    })
    expect(steps).toHaveLength(1)
    expect(steps[0]!.polled).toBe(true)
    return steps[0]!.nextRunAt! - start
  })

describe("a failed poll of a job", () => {
  it.effect("is tried again by the next scheduled poll when the backoff over the polls so far is longer", () =>
    Effect.gen(function*() {
      // polled 20 times every 500 ms: the backoff of attempt 20 is 60 s; the first step of it, 2 s
      expect(yield* retryIn(20, 500)).toBe(2000)
      // on a schedule of 15 s: by the next poll
      expect(yield* retryIn(20, 15_000)).toBe(15_000)
    }))

  it.effect("keeps the backoff when it is the shorter", () =>
    Effect.gen(function*() {
      expect(yield* retryIn(1, 15_000)).toBe(4000)
      expect(yield* retryIn(0, 15_000)).toBe(2000)
    }))

  it.effect("waits as long as the upstream asks", () =>
    Effect.gen(function*() {
      const busy = new UpstreamError({ message: "rate limited", retryable: true, retryAfterMs: 30_000 })
      expect(yield* retryIn(20, 500, busy)).toBe(30_000)
    }))
})
