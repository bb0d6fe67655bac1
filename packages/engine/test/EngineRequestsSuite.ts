/**
 * The engine end to end, the client's requests: cancel, retry, what a key's environment sees, test keys and refused
 * charges, idempotent creation, lists and their cursors, and the views of tasks read again. Registered per storage
 * backend by `EngineSuite.ts`.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Errors, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { TaskStorage } from "../src/TaskStorage.js"
import { poorAccount } from "./support.js"
import { awaitTerminal, type EngineBackend, engineSetup, principal, request } from "./supportEngine.js"

/** Registers the suite for one backend. */
export const requestsSuite = (name: string, backend: EngineBackend) =>
  describe(`engine: ${name}`, () => {
    const setup = engineSetup(backend)

    it.live("cancel: pending tasks are cancelled and refunded and never submitted; others are refused", () => {
      const { layer, ledger, log } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("c"),
          idempotencyKey: undefined
        })
        const cancelled = yield* tasks.cancel(principal(), ack.id)
        expect(cancelled).toMatchObject({ status: "cancelled", cost: 0 })
        expect(ledger.refunds.map((r) => r.taskId)).toEqual([ack.id])
        const again = yield* Effect.flip(tasks.cancel(principal(), ack.id))
        assert.instanceOf(again, Errors.TaskNotCancellable)
        const other = yield* Effect.flip(tasks.cancel(principal({ accountId: "acct_b" }), ack.id))
        assert.instanceOf(other, Errors.TaskNotFound)
        const notRetryable = yield* Effect.flip(tasks.retry(principal(), ack.id, undefined))
        assert.instanceOf(notRetryable, Errors.TaskNotRetryable)
        expect(log.submits.size).toBe(0)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("retry: only failed or expired tasks, as a new task with the same provider, model, input and metadata", () => {
      const { layer, ledger } = setup()
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: { ...request("r [fail]"), metadata: { order: 9 }, webhookUrl: "https://hooks.example.com/h" },
          idempotencyKey: undefined
        })
        yield* awaitTerminal([ack.id])
        const retried = yield* tasks.retry(principal(), ack.id, "retry-key")
        const replayed = yield* tasks.retry(principal(), ack.id, "retry-key")
        expect(replayed.id).toBe(retried.id)
        const copy = yield* tasks.get(principal(), retried.id)
        expect(copy).toMatchObject({
          provider: "vendor3",
          model: "vendor3-3",
          input: { prompt: "r [fail]", aspect_ratio: "16:9" },
          metadata: { order: 9 },
          webhookUrl: "https://hooks.example.com/h",
          original_task_id: ack.id
        })
        const original = yield* tasks.get(principal(), ack.id)
        expect(original.status).toBe("failed")
        expect(ledger.charges.map((c) => c.taskId)).toEqual([ack.id, retried.id])
        const unknown = yield* Effect.flip(tasks.retry(principal(), "task_01JZZZZZZZZZZZZZZZZZZZZZZZ", undefined))
        assert.instanceOf(unknown, Errors.TaskNotFound)
        const succeeded = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("ok"),
          idempotencyKey: undefined
        })
        yield* awaitTerminal([succeeded.id])
        assert.instanceOf(
          yield* Effect.flip(tasks.retry(principal(), succeeded.id, undefined)),
          Errors.TaskNotRetryable
        )
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a key sees only its environment's tasks: another's is unknown to get, list, retry and cancel", () => {
      const { layer, ledger } = setup()
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const live = principal()
        const test = principal({ keyId: "key_test", environment: "test" })
        const create = (who: typeof live, prompt: string) =>
          tasks.create(who, { endpoint: "vendor3/text-to-video", request: request(prompt), idempotencyKey: undefined })
        // a failed live task: the probe's case (a test key retrying it ran it free as a sandbox task)
        const failed = yield* create(live, "l [fail]")
        const failedTest = yield* create(test, "t [fail]")
        yield* awaitTerminal([failed.id, failedTest.id])
        const notFound = (effect: Effect.Effect<unknown, unknown>) =>
          Effect.map(Effect.flip(effect), (error) => assert.instanceOf(error, Errors.TaskNotFound))
        yield* notFound(tasks.get(test, failed.id))
        yield* notFound(tasks.retry(test, failed.id, undefined))
        yield* notFound(tasks.get(live, failedTest.id))
        yield* notFound(tasks.retry(live, failedTest.id, undefined))
        // cancel: the other environment's task is unknown and is not cancelled
        const pending = yield* create(live, "p")
        yield* notFound(tasks.cancel(test, pending.id))
        expect((yield* tasks.get(live, pending.id)).status).not.toBe("cancelled")
        // lists: each environment's own tasks only
        const ids = (who: typeof live) => Effect.map(tasks.list(who, {}), (page) => page.data.map((t) => t.id))
        expect(yield* ids(live)).toEqual([pending.id, failed.id])
        expect(yield* ids(test)).toEqual([failedTest.id])
        expect((yield* tasks.list(test, {})).pagination.total).toBe(1)
        // a test key's own retry stays free; the live one is charged again
        const retriedTest = yield* tasks.retry(test, failedTest.id, undefined)
        expect((yield* tasks.get(test, retriedTest.id)).cost).toBe(0)
        yield* tasks.retry(live, failed.id, undefined)
        expect(ledger.charges.map((c) => c.taskId)).not.toContain(retriedTest.id)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("test keys are free; refused charges store nothing", () => {
      const { layer, ledger } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const free = yield* tasks.create(principal({ environment: "test" }), {
          endpoint: "vendor3/text-to-video",
          request: request("t"),
          idempotencyKey: undefined
        })
        expect((yield* tasks.get(principal({ environment: "test" }), free.id)).cost).toBe(0)
        expect(ledger.charges).toHaveLength(0)
        const refused = yield* Effect.flip(
          tasks.create(principal({ accountId: poorAccount }), {
            endpoint: "vendor3/text-to-video",
            request: request("p"),
            idempotencyKey: undefined
          })
        )
        assert.instanceOf(refused, Errors.InsufficientBalance)
        const page = yield* storage.list(poorAccount, { limit: 10 })
        expect(page.total).toBe(0)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("idempotent creation: same key and body replays, another body is refused", () => {
      const { layer, ledger } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const first = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("i"),
          idempotencyKey: "k"
        })
        const again = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("i"),
          idempotencyKey: "k"
        })
        expect(again).toEqual(first)
        const other = yield* Effect.flip(
          tasks.create(principal(), { endpoint: "vendor3/text-to-video", request: request("j"), idempotencyKey: "k" })
        )
        assert.instanceOf(other, Errors.IdempotencyKeyReused)
        const otherEndpoint = yield* Effect.flip(
          tasks.create(principal(), { endpoint: "vendor7/text-to-video", request: request("i"), idempotencyKey: "k" })
        )
        assert.instanceOf(otherEndpoint, Errors.IdempotencyKeyReused)
        expect(ledger.charges).toHaveLength(1)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("concurrent retries of one task with one key make one task and one charge; without a key, one each", () => {
      const { layer, ledger } = setup()
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const storage = yield* TaskStorage
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("c [fail]"),
          idempotencyKey: undefined
        })
        yield* awaitTerminal([ack.id])
        const ten = Array.from({ length: 10 }, (_, i) => i)
        const keyed = yield* Effect.forEach(ten, () => tasks.retry(principal(), ack.id, "one-intent"), {
          concurrency: "unbounded"
        })
        expect(new Set(keyed.map((retried) => retried.id)).size).toBe(1)
        expect(keyed.every((retried) => retried.original_task_id === ack.id)).toBe(true)
        expect(ledger.charges.map((c) => c.taskId)).toEqual([ack.id, keyed[0]!.id])
        // the spec's rule: each retry without a key is a new task and a new charge
        const unkeyed = yield* Effect.forEach(ten, () => tasks.retry(principal(), ack.id, undefined), {
          concurrency: "unbounded"
        })
        expect(new Set(unkeyed.map((retried) => retried.id)).size).toBe(10)
        expect(ledger.charges).toHaveLength(12)
        expect((yield* storage.list("acct_a", { limit: 100 })).total).toBe(12)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("lists with an opaque cursor and refuses a forged one", () => {
      const { layer } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ids: Array<string> = []
        for (let i = 0; i < 5; i++) {
          ids.push(
            (yield* tasks.create(principal(), {
              endpoint: "vendor3/text-to-video",
              request: request(`l${i}`),
              idempotencyKey: undefined
            })).id
          )
        }
        const page1 = yield* tasks.list(principal(), { limit: 2 })
        expect(page1.data.map((t) => t.id)).toEqual([ids[4], ids[3]])
        expect(page1.pagination).toMatchObject({ hasMore: true, total: 5 })
        const page2 = yield* tasks.list(principal(), { limit: 2, cursor: page1.pagination.cursor! })
        expect(page2.data.map((t) => t.id)).toEqual([ids[2], ids[1]])
        const page3 = yield* tasks.list(principal(), { limit: 2, cursor: page2.pagination.cursor! })
        expect(page3.data.map((t) => t.id)).toEqual([ids[0]])
        expect(page3.pagination).toEqual({ cursor: null, hasMore: false, total: 5 })
        const forged = yield* Effect.flip(tasks.list(principal(), { cursor: "not-a-cursor" }))
        assert.instanceOf(forged, Errors.ValidationError)
      }).pipe(Effect.provide(layer), Effect.scoped)
    })

    it.live("a task read again unchanged answers the view made before; a change answers a new one", () => {
      const { layer } = setup({ concurrency: 0 })
      return Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const ack = yield* tasks.create(principal(), {
          endpoint: "vendor3/text-to-video",
          request: request("v"),
          idempotencyKey: undefined
        })
        const first = yield* tasks.get(principal(), ack.id)
        expect(first).toMatchObject({ id: ack.id, status: "pending", cost: 1 })
        expect(yield* tasks.get(principal(), ack.id)).toBe(first)
        yield* tasks.cancel(principal(), ack.id)
        const cancelled = yield* tasks.get(principal(), ack.id)
        expect(cancelled).toMatchObject({ id: ack.id, status: "cancelled" })
        expect(first.status).toBe("pending")
      }).pipe(Effect.provide(layer), Effect.scoped)
    })
  })
