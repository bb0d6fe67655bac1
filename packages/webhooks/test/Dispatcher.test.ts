import { assert, describe, expect, it } from "@effect/vitest"
import { Services, WebhookSignature } from "@mediagate/contract"
import { layerUnmetered } from "@mediagate/engine/Billing"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import { layerMemory as taskStorageMemory, TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Ids from "@mediagate/persistence/Ids"
import * as Fixtures from "@mediagate/testing/fixtures"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { Webhook as StandardWebhook } from "standardwebhooks"
import * as Dispatcher from "../src/Dispatcher.js"
import { layerSender } from "../src/Outbound.js"
import * as SqlWebhookStore from "../src/SqlWebhookStore.js"
import * as WebhookService from "../src/WebhookService.js"
import * as Store from "../src/WebhookStore.js"
import { WebhookStore } from "../src/WebhookStore.js"
import { sqlite } from "./databases.js"
import { backends, closedPort, entry, noDns, principal, receiver, scriptedSender } from "./support.js"

const alice = principal("acct_alice")
const bob = principal("acct_bob")
const noJitter = { jitter: 0 } as const

for (const [name, backend] of backends) {
  describe(`delivery schedule (${name}, TestClock)`, () => {
    const setup = (answers: ReadonlyArray<number | null>) => {
      const sender = scriptedSender(answers)
      const layer = WebhookService.layer(noDns).pipe(Layer.provideMerge(Layer.merge(backend(), sender.layer)))
      return { sender, layer }
    }

    it.scoped("retries after 1, 5 and 30 minutes: 4 requests, same event id, then failed", () => {
      const { layer, sender } = setup([500])
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const hook = yield* service.create(
          alice,
          { url: "https://hooks.example.com/", events: ["task.failed"] },
          undefined
        )
        const event = entry("acct_alice", "task.failed", "https://job.example.com/cb")
        yield* store.fanOut(undefined, "1", [event], yield* store.now)
        expect(yield* Dispatcher.deliverDue(noJitter)).toBe(2)
        for (const delay of [60_000, 300_000, 1_800_000]) {
          yield* TestClock.adjust(delay - 1)
          expect(yield* Dispatcher.deliverDue(noJitter)).toBe(0)
          yield* TestClock.adjust(1)
          expect(yield* Dispatcher.deliverDue(noJitter)).toBe(2)
        }
        yield* TestClock.adjust(10 * 3_600_000)
        expect(yield* Dispatcher.deliverDue(noJitter)).toBe(0)
        expect(sender.requests).toHaveLength(8)
        for (const request of sender.requests) {
          expect(request.headers["x-webhook-id"]).toBe(event.eventId)
          expect(JSON.parse(request.body).id).toBe(event.eventId)
          expect(request.timeoutMs).toBe(10_000)
        }
        const configured = sender.requests.filter((r) => r.url === "https://hooks.example.com/")
        const perJob = sender.requests.filter((r) => r.url === "https://job.example.com/cb")
        expect(configured).toHaveLength(4)
        expect(perJob).toHaveLength(4)
        expect(perJob[0]!.headers).toMatchObject({ "x-webhook-event": "task.failed", "x-job-id": event.taskId })
        expect(perJob[0]!.headers).not.toHaveProperty("x-webhook-signature")
        const page = yield* service.deliveries(alice, hook.id, {})
        expect(page.data[0]).toMatchObject({
          status: "failed",
          attempts: 4,
          last_status_code: 500,
          last_error: "HTTP 500",
          next_attempt_at: null
        })
        const deliveries = yield* store.deliveriesOfEvent(event.eventId)
        for (const delivery of deliveries) {
          const log = yield* store.attempts(delivery.id)
          expect(log.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 500], [2, 500], [3, 500], [4, 500]])
          expect(log.map((a) => a.at)).toEqual([0, 60_000, 360_000, 2_160_000])
        }
      }).pipe(Effect.provide(layer))
    })

    it.scoped("a configured schedule, success on a retry, 410 disables the webhook, replay re-enables", () => {
      const { layer, sender } = setup([null, 200, 410])
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const hook = yield* service.create(
          alice,
          { url: "https://hooks.example.com/", events: ["task.completed"] },
          undefined
        )
        yield* store.fanOut(undefined, "1", [entry("acct_alice", "task.completed", null, 1)], yield* store.now)
        const options = { jitter: 0, retrySchedule: [1000] }
        expect(yield* Dispatcher.deliverDue(options)).toBe(1)
        let [delivery] = (yield* service.deliveries(alice, hook.id, {})).data
        expect(delivery).toMatchObject({
          status: "pending",
          attempts: 1,
          last_status_code: null,
          last_error: "no answer within 10 s",
          next_attempt_at: new Date(1000).toISOString()
        })
        yield* TestClock.adjust(1000)
        expect(yield* Dispatcher.deliverDue(options)).toBe(1)
        ;[delivery] = (yield* service.deliveries(alice, hook.id, {})).data
        expect(delivery).toMatchObject({ status: "succeeded", attempts: 2, last_status_code: 200, last_error: null })
        // 410 on the next event: failed at once, webhook disabled, no more fan-out to it
        yield* store.fanOut("1", "2", [entry("acct_alice", "task.completed", null, 2)], yield* store.now)
        expect(yield* Dispatcher.deliverDue(options)).toBe(1)
        ;[delivery] = (yield* service.deliveries(alice, hook.id, {})).data
        expect(delivery).toMatchObject({ status: "failed", attempts: 1, last_status_code: 410 })
        expect((yield* service.list(alice))[0]).toMatchObject({
          enabled: false,
          disabledReason: "the receiver answered 410 Gone: no event is sent to it until it is enabled again"
        })
        yield* store.fanOut("2", "3", [entry("acct_alice", "task.completed", null, 3)], yield* store.now)
        expect((yield* service.deliveries(alice, hook.id, {})).pagination.total).toBe(2)
        // filtered by state, each naming the task its event is about
        const failed = yield* service.deliveries(alice, hook.id, { status: "failed" })
        expect(failed.data.map((d) => [d.event_id, d.task_id])).toEqual([[
          "evt_01JX0000000000000000000002",
          "task_01JX0000000000000000000002"
        ]])
        expect(failed.pagination.total).toBe(1)
        const succeeded = yield* service.deliveries(alice, hook.id, { status: "succeeded" })
        expect(succeeded.data.map((d) => d.task_id)).toEqual(["task_01JX0000000000000000000001"])
        expect((yield* service.deliveries(alice, hook.id, { status: "pending" })).data).toEqual([])
        // enabled again by its owner only (another account's key: not found)
        expect(yield* Effect.flip(service.enable(bob, hook.id))).toMatchObject({ _tag: "WebhookNotFound" })
        expect(yield* service.enable(alice, hook.id)).toMatchObject({
          id: hook.id,
          enabled: true,
          disabledReason: null
        })
        expect((yield* service.list(alice))[0]).toMatchObject({ enabled: true, disabledReason: null })
        const replayed = yield* service.replay(alice, hook.id, delivery!.id)
        expect((yield* service.list(alice))[0]!.enabled).toBe(true)
        expect(yield* Dispatcher.deliverDue(options)).toBe(1)
        expect(sender.requests).toHaveLength(4)
        expect(JSON.parse(sender.requests[3]!.body).id).toBe(replayed.event_id)
      }).pipe(Effect.provide(layer))
    })

    it.scoped("a deleted webhook's pending deliveries fail without a request; lost fences are ignored", () => {
      const { layer, sender } = setup([200])
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const hook = yield* service.create(
          alice,
          { url: "https://hooks.example.com/", events: ["task.completed"] },
          undefined
        )
        yield* store.fanOut(undefined, "1", [entry("acct_alice", "task.completed", null, 1)], yield* store.now)
        const [claimed] = yield* store.claimDue("w1", 10, 1000, yield* store.now)
        // lease runs out; another worker claims; the first one's result is refused
        yield* TestClock.adjust(1000)
        const [again] = yield* store.claimDue("w2", 10, 1000, yield* store.now)
        expect(again!.fence).toBe(claimed!.fence + 1)
        expect(yield* store.settle(claimed!.id, claimed!.fence, undefined, { status: "succeeded" })).toBe(false)
        yield* store.releaseAll("w2")
        yield* service.remove(alice, hook.id)
        expect(yield* Dispatcher.deliverDue(noJitter)).toBe(1)
        expect(sender.requests).toHaveLength(0)
        const [row] = yield* store.deliveriesOfEvent(claimed!.eventId)
        expect(row).toMatchObject({ status: "failed", attempts: 0, lastError: "webhook deleted" })
      }).pipe(Effect.provide(layer))
    })
  })
}

describe("fan-out from the engine outbox", () => {
  const finishAll = Effect.gen(function*() {
    const tasks = yield* TaskStorage
    const now = yield* tasks.now
    const make = (webhookUrl: string | null) =>
      Fixtures.newTask({
        id: Ids.taskId(now),
        accountId: "acct_alice",
        metadata: { order: 7 },
        webhookUrl,
        createdAt: now - 10,
        deadlineAt: now + 3_600_000
      })
    const a = make("https://job.example.com/a")
    const b = make(null)
    const c = make("https://job.example.com/c")
    for (const task of [a, b, c]) yield* tasks.accept({ task, charge: undefined, idempotency: undefined })
    yield* tasks.cancel("acct_alice", c.id)
    const claimed = yield* tasks.claim("w", 10, 30_000)
    for (const task of claimed) {
      yield* tasks.finish(
        task.id,
        task.fence,
        task.id === a.id
          ? { _tag: "Succeeded", result: [{ url: "https://x/files/1.mp4", format: "mp4", size_bytes: 10 }] }
          : { _tag: "Failed", error: { code: "PROVIDER_ERROR", message: "boom" } }
      )
    }
    return { a, b, c }
  })

  const check = Effect.gen(function*() {
    const service = yield* Services.WebhookService
    const store = yield* WebhookStore
    const hook = yield* service.create(alice, {
      url: "https://hooks.example.com/",
      events: ["task.completed", "task.failed"]
    }, undefined)
    const { a, b, c } = yield* finishAll
    expect(yield* Dispatcher.fanOutOnce(2)).toBe(2)
    expect(yield* Dispatcher.fanOutOnce(2)).toBe(1)
    expect(yield* Dispatcher.fanOutOnce(2)).toBe(0)
    const page = yield* service.deliveries(alice, hook.id, {})
    // a completed, b failed: configured; c cancelled: not subscribed
    expect(page.data.map((d) => d.event_type).sort()).toEqual(["task.completed", "task.failed"])
    const all = (yield* Effect.forEach(page.data, (d) => store.deliveriesOfEvent(d.event_id))).flat()
    const perJob = all.filter((d) => d.webhookId === null)
    expect(perJob.map((d) => d.url)).toEqual(["https://job.example.com/a"])
    const cancelled = (yield* store.claimDue("x", 100, 1000, (yield* store.now) + 1)).filter((d) =>
      d.eventType === "task.cancelled"
    )
    expect(cancelled.map((d) => d.url)).toEqual(["https://job.example.com/c"])
    expect(JSON.parse(perJob[0]!.payload).data.task).toMatchObject({
      id: a.id,
      status: "succeeded",
      metadata: { order: 7 }
    })
    expect([b.id, c.id]).toHaveLength(2)
  })

  it.scoped("memory", () =>
    check.pipe(Effect.provide(
      WebhookService.layer(noDns).pipe(
        Layer.provideMerge(Layer.mergeAll(
          taskStorageMemory().pipe(Layer.provide(layerUnmetered)),
          backends[0]![1](),
          scriptedSender([200]).layer
        ))
      )
    )))

  it.scoped("sqlite: engine and webhook tables in one database", () =>
    check.pipe(Effect.provide(
      WebhookService.layer(noDns).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Layer.merge(SqlTaskStorage.layer(), SqlWebhookStore.layer()).pipe(
            Layer.provide(Layer.merge(sqlite(), layerUnmetered))
          ),
          scriptedSender([200]).layer
        ))
      )
    )))
})

describe("real receivers (127.0.0.1, allowPrivate)", () => {
  const live = (timeout: Duration.DurationInput) =>
    WebhookService.layer({ allowPrivate: true, timeout }).pipe(
      Layer.provideMerge(Layer.merge(Store.layerMemory, layerSender({ allowPrivate: true })))
    )

  it.live("signed deliveries verify with the contract and standardwebhooks; failures are retried and logged", () =>
    Effect.gen(function*() {
      const server = yield* receiver
      const service = yield* Services.WebhookService
      const store = yield* WebhookStore
      const hook = yield* service.create(alice, { url: server.url, events: ["task.completed"] }, undefined)
      const options: Dispatcher.DispatcherOptions = { jitter: 0, retrySchedule: [0, 0, 0, 0], timeout: "300 millis" }
      const event = entry("acct_alice", "task.completed", `${server.url}?job=1`)
      yield* store.fanOut(undefined, "1", [event], yield* store.now)
      const script: ReadonlyArray<Parameters<typeof server.setBehaviour>[0]> = ["fail", "hang", "close", "slow"]
      for (const behaviour of script) {
        server.setBehaviour(behaviour)
        expect(yield* Dispatcher.deliverDue(options)).toBe(2)
      }
      const [configured, perJob] = [
        server.received.filter((r) => r.url === "/hook"),
        server.received.filter((r) => r.url !== "/hook")
      ]
      expect(configured).toHaveLength(4)
      expect(perJob).toHaveLength(4)
      for (const request of configured) {
        const verified = yield* Effect.either(
          WebhookSignature.verify({ secret: hook.secret, headers: request.headers, body: request.body })
        )
        expect(Either.isRight(verified)).toBe(true)
        const standard = new StandardWebhook(hook.secret).verify(
          request.body,
          request.headers as Record<string, string>
        )
        expect((standard as { id: string }).id).toBe(event.eventId)
        expect(request.headers["x-webhook-id"]).toBe(event.eventId)
        expect(request.headers["content-type"]).toBe("application/json")
      }
      expect(perJob[0]!.headers["x-webhook-signature"]).toBeUndefined()
      expect(perJob[0]!.headers["x-job-id"]).toBe(event.taskId)
      expect(perJob[0]!.headers["x-webhook-event"]).toBe("task.completed")
      const [delivery] = (yield* service.deliveries(alice, hook.id, {})).data
      expect(delivery).toMatchObject({ status: "succeeded", attempts: 4, last_status_code: 204 })
      const log = yield* store.attempts(delivery!.id)
      expect(log.map((a) => [a.statusCode, a.error])).toEqual([
        [500, "HTTP 500"],
        [null, "no answer within 0.3 s"],
        [null, "connection closed without an answer"],
        [204, null]
      ])
      expect(Buffer.byteLength(log[0]!.responseExcerpt!)).toBe(1024)
      expect(log[3]!.durationMs).toBeGreaterThanOrEqual(100)

      server.setBehaviour("gone")
      yield* store.fanOut("1", "2", [entry("acct_alice", "task.completed", null, 2)], yield* store.now)
      expect(yield* Dispatcher.deliverDue(options)).toBe(1)
      expect((yield* service.list(alice))[0]!.enabled).toBe(false)

      server.setBehaviour("ok")
      const tested = yield* service.test(alice, hook.id)
      expect(tested).toMatchObject({ delivered: true, statusCode: 200, error: null })
      expect(server.received.at(-1)!.headers["x-webhook-test"]).toBe("true")
    }).pipe(Effect.scoped, Effect.provide(live("300 millis"))))

  it.live("a refused connection is a failed attempt; the background dispatcher delivers from the outbox", () =>
    Effect.gen(function*() {
      const server = yield* receiver
      const port = yield* closedPort
      const service = yield* Services.WebhookService
      const tasks = yield* TaskStorage
      const refused = yield* service.create(
        alice,
        { url: `http://127.0.0.1:${port}/`, events: ["task.completed"] },
        undefined
      )
      const ok = yield* service.create(alice, { url: server.url, events: ["task.completed"] }, undefined)
      const now = Date.now()
      yield* tasks.accept({
        task: Fixtures.newTask({
          id: Ids.taskId(now),
          accountId: "acct_alice",
          keyId: "k",
          input: {},
          estimatedSeconds: 1,
          deadlineAt: now + 60_000,
          createdAt: now - 5
        }),
        charge: undefined,
        idempotency: undefined
      })
      const [task] = yield* tasks.claim("w", 1, 10_000)
      yield* tasks.finish(task!.id, task!.fence, { _tag: "Succeeded", result: [] })
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(
          Dispatcher.layer({
            jitter: 0,
            retrySchedule: ["20 millis", "20 millis", "20 millis"],
            timeout: "500 millis",
            idle: "20 millis"
          })
        )
        for (let i = 0; i < 200; i++) {
          const [a] = (yield* service.deliveries(alice, refused.id, {})).data
          const [b] = (yield* service.deliveries(alice, ok.id, {})).data
          if (a?.status === "failed" && b?.status === "succeeded") break
          yield* Effect.sleep("25 millis")
        }
      }))
      const [a] = (yield* service.deliveries(alice, refused.id, {})).data
      expect(a).toMatchObject({
        status: "failed",
        attempts: 4,
        last_error: "connection refused",
        last_status_code: null
      })
      const [b] = (yield* service.deliveries(alice, ok.id, {})).data
      expect(b).toMatchObject({ status: "succeeded", attempts: 1, last_status_code: 200 })
      assert.strictEqual(server.received.length, 1)
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.merge(
        live("500 millis"),
        taskStorageMemory().pipe(Layer.provide(layerUnmetered))
      ))
    ))
})

describe("configuration", () => {
  it("parses the retry schedule and durations", () => {
    expect(Dispatcher.parseSchedule("1m,5m,30m")).toEqual(Either.right([60_000, 300_000, 1_800_000]))
    expect(Dispatcher.parseSchedule("500ms, 2s,1h")).toEqual(Either.right([500, 2000, 3_600_000]))
    expect(Either.isLeft(Dispatcher.parseSchedule("1m,soon"))).toBe(true)
    expect(Dispatcher.parseDurationMs("10s")).toBe(10_000)
    expect(Dispatcher.retryDelayMs({ retryScheduleMs: [1000], timeoutMs: 1, jitter: 0.1 }, 1, () => 1)).toBe(1100)
    expect(Dispatcher.retryDelayMs({ retryScheduleMs: [1000], timeoutMs: 1, jitter: 0.1 }, 2)).toBeUndefined()
  })
})
