/**
 * The engine end to end, its workers: a dead worker's task finished by another, callbacks and jobs done before their
 * submit is recorded, tasks waiting on their upstream without a worker, shutdown, and an API-only node (no worker;
 * the callbacks it hears written as due tasks). Registered
 * per storage backend by `EngineSuite.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { TaskStorage } from "../src/TaskStorage.js"
import { Upstream } from "../src/Upstream.js"
import * as Worker from "../src/Worker.js"
import { withStorage } from "./support.js"
import { awaitTerminal, type EngineBackend, engineSetup, principal, request } from "./supportEngine.js"

/** Registers the suite for one backend. */
export const workersSuite = (name: string, backend: EngineBackend) =>
  describe(`engine: ${name}`, () => {
    const setup = engineSetup(backend)

    it.live("a task whose worker died is finished by another after its lease, without a second submit", () => {
      const { layer, log } = setup({ concurrency: 0, durationMs: 50 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("d"),
          idempotencyKey: undefined
        })
        // a worker that submitted (recorded the job), then claimed the task again and died holding the lease
        const [claimed] = yield* storage.claim("dead-worker", 1, 300)
        yield* storage.step(ack.id, claimed!.fence, { upstreamJobId: `job_${ack.id}`, nextRunAt: 0 })
        log.submits.set(ack.id, 1)
        const [held] = yield* storage.claim("dead-worker", 1, 300)
        expect(held!.leaseOwner).toBe("dead-worker")
        // a live worker takes over once the lease runs out and continues from the stored job id
        const upstreamTaken = yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(
            Worker.layer({ concurrency: 4, lease: "2 seconds", idle: "50 millis", pollDelay: () => "25 millis" })
          )
          return yield* awaitTerminal([ack.id])
        }))
        expect(upstreamTaken[0]!.status).toBe("succeeded")
        expect(upstreamTaken[0]!.fence).toBeGreaterThan(held!.fence)
        expect(log.submits.get(ack.id)).toBe(1)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a callback that comes before the submit's answer is not lost behind the safety-net poll", () => {
      // the job is done as soon as it is submitted and says so at once: the worker records the job (with its poll
      // a minute away) after the change made the task due; the task must still finish now, not in a minute
      const { layer, log } = setup({ durationMs: 0, callbacks: true, pollDelay: "1 minute" })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        // the worker subscribes to the upstream's changes on a fiber of its own: let it start first
        yield* Effect.sleep("200 millis")
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("[early] a kite"),
          idempotencyKey: undefined
        })
        const [done] = yield* awaitTerminal([ack.id])
        expect(done!.status).toBe("succeeded")
        expect(log.submits.get(ack.id)).toBe(1)
      }).pipe(Effect.provide(layer), Effect.scoped, Effect.timeout("20 seconds"))
    }, 30_000)

    it.live("jobs done before their submit is recorded are made due again together, not with a write each", () => {
      // each change comes while its submit's step runs: the step's write (the job, its poll a minute away) would put
      // the task off, so it is made due again after that write, in the batches of the upstream's changes
      const calls: Array<number> = []
      const counting = withStorage((storage) => ({
        ...storage,
        markDue: (ids) => Effect.zipRight(Effect.sync(() => void calls.push(ids.length)), storage.markDue(ids))
      }))
      const { layer, log } = setup({
        durationMs: 0,
        callbacks: true,
        pollDelay: "1 minute",
        concurrency: 40,
        storage: counting
      })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        yield* Effect.sleep("200 millis")
        const acks = yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) =>
          tasks.create(principal(), {
            endpoint: "vendor3/text-to-video",
            request: request(`[early] kite ${i}`),
            idempotencyKey: undefined
          }), {
          concurrency: "unbounded"
        })
        const done = yield* awaitTerminal(acks.map((a) => a.id))
        expect(done.every((t) => t.status === "succeeded")).toBe(true)
        expect(acks.every((a) => log.submits.get(a.id) === 1)).toBe(true)
        // 40 changes and up to 40 tasks made due again: a write each would be at least 40 calls
        expect(calls.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(40)
        expect(calls.length).toBeLessThanOrEqual(20)
      }).pipe(Effect.provide(layer), Effect.scoped, Effect.timeout("20 seconds"))
    }, 30_000)

    it.live("a task waiting on its upstream holds no worker: 2 workers carry 30 tasks at once", () => {
      // jobs take 20 s: were a waiting task holding its worker, 2 workers could hand only 2 tasks to the upstream in
      // that time; all 30 must be handed over before the first job finishes (a margin for a slow, loaded machine:
      // on 2 busy cores the 30 hand-overs took from 3 s to over 6 s). The jobs' ends come by callback: no polls (the
      // safety net a minute away) keep the 2 workers busy meanwhile
      const { layer, log } = setup({ concurrency: 2, durationMs: 20_000, callbacks: true, pollDelay: "1 minute" })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const acks = yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) =>
          tasks.create(principal(), {
            endpoint: "vendor3/text-to-video",
            request: request(`w${i}`),
            idempotencyKey: undefined
          }))
        const started = Date.now()
        while (log.submits.size < 30 && Date.now() - started < 25_000) {
          yield* Effect.sleep(10)
        }
        expect(log.submits.size).toBe(30)
        expect(Date.now() - started).toBeLessThan(19_000)
        const done = yield* awaitTerminal(acks.map((a) => a.id), 60_000)
        expect(done.every((t) => t.status === "succeeded")).toBe(true)
      }).pipe(Effect.provide(layer), Effect.scoped)
    }, 150_000)

    it.live("shutdown lets a running step finish within the grace period and releases the leases it still holds", () => {
      const { layer, log } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        // the quick job never calls back: a job that finished during the grace period would be due first (finished
        // jobs are due in creation order), and the claim below is about the stuck task
        const quick = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("q [slow=150] [hang]"),
          idempotencyKey: undefined
        })
        const stuck = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("s [slow=5000]"),
          idempotencyKey: undefined
        })
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(
            Worker.layer({ concurrency: 4, lease: "1 minute", idle: "50 millis", shutdownGrace: "400 millis" })
          )
          while (log.submits.size < 2) yield* Effect.sleep(10)
        }))
        // the quick submit finished during the grace period and was recorded
        const q = Option.getOrThrow(yield* storage.getById(quick.id))
        expect(q).toMatchObject({ upstreamJobId: `job_${quick.id}`, leaseOwner: null })
        // the stuck one was interrupted and its lease handed back at once, not after 60 s
        const s = Option.getOrThrow(yield* storage.getById(stuck.id))
        expect(s).toMatchObject({ status: "queued", upstreamJobId: null, leaseOwner: null })
        const [again] = yield* storage.claim("next-worker", 1, 1000)
        expect(again?.id).toBe(stuck.id)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })
    it.live("an API-only node writes the tasks of the callbacks it hears due (Worker.layerForwardChanges)", () => {
      // the task waits on its upstream until its deadline; the callback reaches a node without workers, which must make the
      // task due for the workers of other nodes (without it, the change would wait for the safety-net poll)
      const { layer } = setup({ concurrency: 0, durationMs: 300, callbacks: true })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const upstream = yield* Upstream
        yield* Layer.build(Worker.layerForwardChanges())
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("callback elsewhere"),
          idempotencyKey: undefined
        })
        const [claimed] = yield* storage.claim("other-node", 1, 60_000)
        const { jobId } = yield* upstream.submit(claimed!)
        yield* storage.step(ack.id, claimed!.fence, { upstreamJobId: jobId, nextRunAt: Date.now() + 3_600_000 })
        // the storage keeps it until at most the task's deadline: still far beyond this test
        const waiting = Option.getOrThrow(yield* storage.getById(ack.id)).nextRunAt ?? 0
        expect(waiting).toBeGreaterThan(Date.now() + 30_000)
        // the job's callback comes 300 ms after the submit
        let due = waiting
        for (let i = 0; i < 100 && due >= waiting; i++) {
          yield* Effect.sleep(50)
          due = Option.getOrThrow(yield* storage.getById(ack.id)).nextRunAt ?? waiting
        }
        expect(due).toBeLessThanOrEqual(Date.now())
        const [again] = yield* storage.claim("other-node", 1, 60_000)
        expect(again?.id).toBe(ack.id)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("concurrency 0 runs no worker (an API-only node)", () => {
      const { layer, log } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("z"),
          idempotencyKey: undefined
        })
        yield* Effect.sleep(150)
        expect(Option.getOrThrow(yield* storage.getById(ack.id)).status).toBe("pending")
        expect(log.submits.size).toBe(0)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })
  })
