/**
 * The engine end to end, running tasks: submitted once and followed to their end (polls, a lost channel, a first
 * poll under the submit's claim), failures refunded, retryable errors retried, deadlines expired. Registered per
 * storage backend by `EngineSuite.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { TaskStorage } from "../src/TaskStorage.js"
import { readOutboxAtLeast } from "./support.js"
import { awaitTerminal, type EngineBackend, engineSetup, principal, request } from "./supportEngine.js"

/** Registers the suite for one backend. */
export const runSuite = (name: string, backend: EngineBackend) =>
  describe(`engine: ${name}`, () => {
    const setup = engineSetup(backend)

    it.live("runs accepted tasks to succeeded, submitting each once, with events", () => {
      const { layer, ledger, log } = setup()
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const acks = yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) =>
          tasks.create(principal(), {
            endpoint: "vendor3/text-to-video",
            request: request(`shot ${i}`),
            idempotencyKey: undefined
          }))
        const done = yield* awaitTerminal(acks.map((a) => a.id))
        expect(done.every((t) => t.status === "succeeded" && t.progress === 100 && t.result !== null)).toBe(true)
        expect(acks.every((a) => log.submits.get(a.id) === 1)).toBe(true)
        expect(ledger.charges).toHaveLength(40)
        expect(ledger.refunds).toHaveLength(0)
        const { entries: events } = yield* readOutboxAtLeast(storage, 40)
        expect(events.filter((e) => e.eventType === "task.completed")).toHaveLength(40)
        const read = yield* tasks.get(principal(), acks[0]!.id)
        expect(read).toMatchObject({ status: "succeeded", cost: 1, progress: 100 })
        expect(read.started_at).not.toBeNull()
        expect(read.completed_at).not.toBeNull()
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a job whose channel is lost is cancelled and submitted again on another channel, charged once", () => {
      const { layer, ledger, log } = setup({ callbacks: false })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const acks = yield* Effect.forEach(
          Array.from({ length: 5 }, (_, i) => i),
          (i) =>
            tasks.create(principal(), {
              endpoint: "vendor3/text-to-video",
              request: request(`[lost] shot ${i}`),
              idempotencyKey: undefined
            })
        )
        const done = yield* awaitTerminal(acks.map((a) => a.id))
        for (const task of done) {
          expect(task).toMatchObject({ status: "succeeded", channelId: "ch_second", upstreamJobId: `job_${task.id}_2` })
          expect(log.submits.get(task.id)).toBe(2)
        }
        expect([...log.cancels].sort()).toEqual(acks.map((a) => a.id).sort())
        expect(ledger.charges).toHaveLength(5)
        expect(ledger.refunds).toHaveLength(0)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a first poll due at once runs under the submit's claim: job and outcome recorded in one write", () => {
      const { layer, ledger, log } = setup({ durationMs: 0, pollDelay: 0, callbacks: false })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const acks = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) =>
          tasks.create(principal(), {
            endpoint: "vendor3/text-to-video",
            request: request(i % 4 === 3 ? `quick ${i} [fail]` : `quick ${i}`),
            idempotencyKey: undefined
          }))
        const done = yield* awaitTerminal(acks.map((a) => a.id))
        // one claim per task (fence 1): submitted once, polled once, the job recorded with the outcome
        for (const task of done) {
          expect(task).toMatchObject({ fence: 1, upstreamJobId: `job_${task.id}`, leaseOwner: null, nextRunAt: null })
          expect(task.status).toBe(task.input["prompt"]!.toString().includes("[fail]") ? "failed" : "succeeded")
          expect(log.submits.get(task.id)).toBe(1)
          expect(log.polls.get(task.id)).toBe(1)
        }
        expect(ledger.refunds.map((r) => r.taskId).sort()).toEqual(
          done.filter((t) => t.status === "failed").map((t) => t.id).sort()
        )
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a first poll due at once that finds the job running records the job, the progress and the next poll", () => {
      const { layer, log } = setup({ durationMs: 300, pollDelay: 0, callbacks: false })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("slowish"),
          idempotencyKey: undefined
        })
        const [task] = yield* awaitTerminal([ack.id])
        expect(task).toMatchObject({ status: "succeeded", upstreamJobId: `job_${ack.id}` })
        expect(log.submits.get(ack.id)).toBe(1)
        // polled at once (running), then again until done: every poll counted
        expect(log.polls.get(ack.id)).toBeGreaterThanOrEqual(2)
        expect(task!.polls).toBe(log.polls.get(ack.id)! - 1)
        expect(Option.getOrThrow(yield* storage.getById(ack.id)).progress).toBe(100)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a failed upstream job fails the task with its error and refunds it once", () => {
      const { layer, ledger } = setup()
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("x [fail]"),
          idempotencyKey: undefined
        })
        const rejected = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("x [reject]"),
          idempotencyKey: undefined
        })
        const [failed, refused] = yield* awaitTerminal([ack.id, rejected.id])
        expect(failed).toMatchObject({
          status: "failed",
          error: { code: "PROVIDER_ERROR", message: "the upstream failed the job" },
          refundedMicros: 1_000_000
        })
        expect(refused).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" } })
        expect(ledger.refunds.map((r) => r.taskId).sort()).toEqual([ack.id, rejected.id].sort())
        const read = yield* tasks.get(principal(), ack.id)
        expect(read.cost).toBe(0)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("retries a retryable upstream error with backoff", () => {
      const { layer, log } = setup()
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("x [flaky]"),
          idempotencyKey: undefined
        })
        const [task] = yield* awaitTerminal([ack.id])
        expect(task!.status).toBe("succeeded")
        expect(log.submits.get(ack.id)).toBe(2)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("expires a task at its deadline, refunds it and cancels its upstream job", () => {
      // a deadline that the submit comes well before, also on a busy machine (with 400 ms a loaded run's first claim
      // and submit came after it: a task without a job has nothing to cancel)
      const { layer, ledger, log } = setup({ timeout: "3 seconds" })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("x [hang]"),
          idempotencyKey: undefined
        })
        const [task] = yield* awaitTerminal([ack.id])
        expect(log.submits.get(ack.id), "submitted before the deadline").toBe(1)
        expect(task).toMatchObject({ status: "expired", error: { code: "TASK_EXPIRED" }, refundedMicros: 1_000_000 })
        expect(ledger.refunds.map((r) => r.taskId)).toEqual([ack.id])
        expect(log.cancels).toEqual([ack.id])
        // an expired task can be retried: a new task, charged again
        const retry = yield* tasks.retry(principal(), ack.id, undefined)
        expect(retry).toMatchObject({ original_task_id: ack.id, status: "pending", type: "video", provider: "vendor3" })
        expect(ledger.charges.map((c) => c.taskId)).toEqual([ack.id, retry.id])
      }).pipe(Effect.provide(layer), Effect.scoped)
    })
  })
