/**
 * Admission (`Admission.ts`): the gate shuts when a claim reports a late task and opens when one finds the queue
 * caught up, and new tasks also wait while the event loop is busier than `maxUtilization`; a new task waits before
 * it is created, at most `maxWaitMs`; the worker reports after every claim.
 */
import { assert, describe, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Admission from "../src/Admission.js"
import { claimLateness } from "../src/internal/worker/schedule.js"
import * as Planner from "../src/Planner.js"
import * as ResultLinks from "../src/ResultLinks.js"
import { TaskReads } from "../src/TaskReads.js"
import { fromNew } from "../src/TaskRecord.js"
import * as TaskService from "../src/TaskService.js"
import { layerMemory, TaskStorage } from "../src/TaskStorage.js"
import * as Worker from "../src/Worker.js"
import { principal } from "./EngineSuite.js"
import { makeFakeUpstream } from "./FakeUpstream.js"
import { makeRecordingBilling, newTask, start, withStorage } from "./support.js"

/** Lets other fibers and timers run for a moment. */
const settle = Effect.sleep("20 millis")

describe("Admission gate", () => {
  it.live("shuts past closeMs, stays shut between the two bounds, opens at openMs", () =>
    Effect.gen(function*() {
      const gate = Admission.make({ closeMs: 200, openMs: 50, maxWaitMs: 60_000 })
      assert.isTrue(gate.isOpen())
      yield* gate.admit
      gate.report(201)
      assert.isFalse(gate.isOpen())
      const waiting = yield* Effect.fork(gate.admit)
      yield* settle
      assert.strictEqual(gate.waiting(), 1)
      assert.isNull(waiting.unsafePoll())
      // between the bounds: no change
      gate.report(120)
      yield* settle
      assert.isFalse(gate.isOpen())
      assert.isNull(waiting.unsafePoll())
      gate.report(50)
      yield* Fiber.join(waiting)
      assert.isTrue(gate.isOpen())
      assert.strictEqual(gate.waiting(), 0)
      // the bounds again: 200 exactly keeps it open
      gate.report(200)
      assert.isTrue(gate.isOpen())
    }))

  it.live("a request waits at most maxWaitMs; an interrupted one leaves the gate", () =>
    Effect.gen(function*() {
      const short = Admission.make({ maxWaitMs: 30 })
      short.report(10_000)
      yield* short.admit
      assert.isFalse(short.isOpen())
      assert.strictEqual(short.waiting(), 0)

      const long = Admission.make({ maxWaitMs: 60_000 })
      long.report(10_000)
      const waiting = yield* Effect.fork(long.admit)
      yield* settle
      assert.strictEqual(long.waiting(), 1)
      yield* Fiber.interrupt(waiting)
      assert.strictEqual(long.waiting(), 0)
    }))

  it.live("above maxUtilization new tasks wait, read again every 100 ms until the event loop is quieter", () =>
    Effect.gen(function*() {
      let utilization = 0.9
      let reads = 0
      const gate = Admission.make({
        maxWaitMs: 60_000,
        maxUtilization: 0.5,
        utilization: () => {
          reads++
          return utilization
        }
      })
      // smoothed over two readings at least 100 ms apart: 0.45 first (goes on), then 0.675 (waits)
      yield* gate.admit
      yield* Effect.sleep("110 millis")
      const waiting = yield* Effect.fork(gate.admit)
      yield* settle
      assert.strictEqual(gate.waiting(), 1)
      assert.isTrue(gate.isOpen())
      // still busy at the next readings: still waiting
      yield* Effect.sleep("250 millis")
      assert.isNull(waiting.unsafePoll())
      utilization = 0.05
      yield* Fiber.join(waiting).pipe(Effect.timeoutFail({ duration: "1 second", onTimeout: () => "still waiting" }))
      assert.strictEqual(gate.waiting(), 0)
      assert.isAtLeast(reads, 4)
      // the default takes no readings
      let defaultReads = 0
      const unlimited = Admission.make({ utilization: () => ++defaultReads })
      yield* gate.admit
      yield* unlimited.admit
      unlimited.report(0)
      assert.strictEqual(defaultReads, 0)
    }))

  it.live("with reserveAbove, the utilization limit holds only while more tasks than that wait upstream", () =>
    Effect.gen(function*() {
      const gate = Admission.make({ maxWaitMs: 60_000, maxUtilization: 0.5, reserveAbove: 10, utilization: () => 1 })
      // busy, but no task upstream: new tasks go on (the burst's finishes would come due now, not later)
      yield* gate.admit
      yield* Effect.sleep("110 millis")
      yield* gate.admit
      assert.strictEqual(gate.waiting(), 0)
      // 11 tasks upstream: the room is kept, the next request waits
      gate.upstream(11)
      yield* Effect.sleep("110 millis")
      const waiting = yield* Effect.fork(gate.admit)
      yield* settle
      assert.strictEqual(gate.waiting(), 1)
      // back to 10: it goes on at once
      gate.upstream(10)
      yield* Fiber.join(waiting).pipe(Effect.timeoutFail({ duration: "1 second", onTimeout: () => "still waiting" }))
      assert.strictEqual(gate.waiting(), 0)
    }))

  it.live("layerCounted reads the tasks upstream from the storage while requests come to the gate", () =>
    Effect.gen(function*() {
      const counts = { queued: 0, running: 0 }
      let overviews = 0
      const reads = Layer.succeed(
        TaskReads,
        {
          overview: Effect.sync(() => {
            overviews++
            return {
              byStatus: { pending: 0, succeeded: 0, failed: 0, cancelled: 0, expired: 0, ...counts },
              due: 0
            }
          })
        } as unknown as TaskReads["Type"]
      )
      yield* Effect.gen(function*() {
        const gate = yield* Admission.Admission
        yield* Effect.sleep("600 millis")
        // nobody came to the gate: nothing read
        assert.strictEqual(overviews, 0)
        counts.queued = 3
        counts.running = 2
        yield* gate.admit
        yield* Effect.sleep("1100 millis")
        assert.isAtLeast(overviews, 1)
        // 5 upstream, above 4, and the loop busy: the next request waits until a read finds them gone
        yield* Effect.sleep("110 millis")
        const waiting = yield* Effect.fork(gate.admit)
        yield* settle
        assert.strictEqual(gate.waiting(), 1)
        counts.queued = 0
        counts.running = 0
        yield* Fiber.join(waiting).pipe(Effect.timeoutFail({ duration: "2 seconds", onTimeout: () => "still waiting" }))
      }).pipe(
        Effect.provide(
          Admission.layerCounted({
            maxWaitMs: 60_000,
            maxUtilization: 0.5,
            reserveAbove: 4,
            utilization: () => 1
          }).pipe(Layer.provide(reads))
        )
      )
    }))

  it.live("maxWaitMs 0 turns it off", () =>
    Effect.gen(function*() {
      const off = Admission.make({ maxWaitMs: 0 })
      off.report(10_000)
      yield* off.admit
      assert.strictEqual(off.waiting(), 0)
    }))

  it.live("the worker reports each claim's lateness; a task waits at the shut gate, created once it opens", () => {
    const reports: Array<number> = []
    const gate = Admission.make({ closeMs: 200, openMs: 50, maxWaitMs: 60_000 })
    const spy: Admission.Gate = {
      ...gate,
      report: (late) => {
        reports.push(late)
        gate.report(late)
      }
    }
    // the worker's first claim that finds work answers 400 ms after it began (a busy node). Decided by what the claim
    // took, not by a look at the queue before it: a task created between that look and the claim would be taken on
    // time, and the gate never shut. The test waits for a report past closeMs (200), not for the full 400: a timer
    // counts from the event loop's cached time, so a sleep may end a little before its duration has passed
    let delayed = false
    const slowClaim = withStorage((storage) => ({
      ...storage,
      claim: (owner, limit, leaseMs) =>
        Effect.flatMap(storage.claim(owner, limit, leaseMs), (tasks) =>
          tasks.length > 0 && !delayed
            ? Effect.as(Effect.zipRight(Effect.sync(() => void (delayed = true)), Effect.sleep("400 millis")), tasks)
            : Effect.succeed(tasks))
    }))
    const layer = Worker.layer({ concurrency: 4, idle: "50 millis", claimInterval: "0 millis" }).pipe(
      Layer.provideMerge(TaskService.layer),
      Layer.provideMerge(Layer.succeed(Admission.Admission, spy)),
      Layer.provide(ResultLinks.layerAsStored),
      Layer.provideMerge(Planner.layerFixed({ priceMicros: 0, estimatedSeconds: 60, timeout: "5 minutes" })),
      Layer.provideMerge(slowClaim),
      Layer.provideMerge(layerMemory().pipe(Layer.provide(makeRecordingBilling().layer))),
      Layer.provideMerge(makeFakeUpstream({ durationMs: 60_000 }).layer)
    )
    const create = (prompt: string) =>
      Effect.flatMap(Services.TaskService, (tasks) =>
        tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: { model: "vendor3-3", input: { prompt } },
          idempotencyKey: undefined
        }))
    return Effect.gen(function*() {
      yield* create("first")
      // the late claim shuts the gate
      while (!reports.some((late) => late > 200)) yield* settle
      // a report of a claim that found the queue caught up opens it again
      while (reports[reports.length - 1]! > 50) yield* settle
      assert.isTrue(gate.isOpen())

      // shut by hand: a new task is not created while it is shut, and the worker's next claim (nothing due) opens it
      spy.report(10_000)
      const before = reports.length
      const second = yield* Effect.fork(create("second"))
      const storage = yield* TaskStorage
      const listed = yield* storage.list("acct_a", { limit: 10 })
      assert.strictEqual(listed.items.length, 1)
      const task = yield* Fiber.join(second)
      assert.isAbove(reports.length, before)
      assert.isTrue(gate.isOpen())
      const after = yield* storage.list("acct_a", { limit: 10 })
      assert.deepStrictEqual(
        after.items.map((item) => item.id).sort(),
        [task.id, ...listed.items.map((i) => i.id)].sort()
      )
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 60_000)
})

describe("Admission: the lateness a claim reports", () => {
  it("counts from a task's next run, or from when a woken task's change was heard; 0 for an empty claim", () => {
    const task = (id: string, nextRunAt: number, upstreamJobId: string | null) => ({
      ...fromNew(newTask({ id, createdAt: start, deadlineAt: start + 3_600_000 })),
      nextRunAt,
      upstreamJobId
    })
    const heard = new Map([["t_woken", start + 9_000]])
    const at = start + 10_000
    assert.strictEqual(claimLateness([], at, (id) => heard.get(id)), 0)
    // new (due at creation) and polled (due at its next run) tasks: from their next run, the latest-waiting counts
    assert.strictEqual(claimLateness([task("t_new", start, null)], at, (id) => heard.get(id)), 10_000)
    assert.strictEqual(claimLateness([task("t_polled", start + 9_900, "job")], at, (id) => heard.get(id)), 100)
    // woken (due in creation order): from the change heard, or nothing known when another process heard it
    assert.strictEqual(claimLateness([task("t_woken", start, "job")], at, (id) => heard.get(id)), 1_000)
    assert.isUndefined(claimLateness([task("t_other", start, "job")], at, (id) => heard.get(id)))
    assert.strictEqual(
      claimLateness([task("t_other", start, "job"), task("t_polled", start + 9_900, "job")], at, (id) => heard.get(id)),
      100
    )
  })

  it.live("a task woken by its job's change is late from when the change was heard, not by the job's length", () => {
    const reports: Array<number> = []
    const gate = Admission.make({ closeMs: 200, openMs: 50, maxWaitMs: 60_000 })
    const spy: Admission.Gate = { ...gate, report: (late) => void reports.push(late) }
    const upstream = makeFakeUpstream({ durationMs: 600, callbacks: true })
    const layer = Worker.layer({ concurrency: 4, idle: "50 millis", claimInterval: "0 millis" }).pipe(
      Layer.provideMerge(TaskService.layer),
      Layer.provideMerge(Layer.succeed(Admission.Admission, spy)),
      Layer.provide(ResultLinks.layerAsStored),
      Layer.provideMerge(Planner.layerFixed({ priceMicros: 0, estimatedSeconds: 60, timeout: "5 minutes" })),
      Layer.provideMerge(layerMemory().pipe(Layer.provide(makeRecordingBilling().layer))),
      Layer.provideMerge(upstream.layer)
    )
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const created = yield* tasks.create(principal(), {
        endpoint: "vendor3/text-to-video",
        request: { model: "vendor3-3", input: { prompt: "a woken task" } },
        idempotencyKey: undefined
      })
      const storage = yield* TaskStorage
      // the job's change (after 600 ms) makes the task due in creation order: its claim finishes it
      for (let i = 0; i < 300; i++) {
        const task = yield* storage.getById(created.id)
        if (task._tag === "Some" && task.value.status === "succeeded") break
        yield* settle
      }
      const task = yield* storage.getById(created.id)
      assert.strictEqual(task._tag === "Some" ? task.value.status : "none", "succeeded")
      // the claim of the woken task found it due at its creation; counted from there it is 600 ms late and shuts
      // the gate of a node that is idle
      assert.isAbove(reports.length, 1)
      assert.isBelow(Math.max(...reports), 200)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 30_000)
})
