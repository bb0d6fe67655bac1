import { assert, describe, expect, it } from "@effect/vitest"
import { Errors, Services, WebhookSignature } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as WebhookService from "../src/WebhookService.js"
import { WebhookStore } from "../src/WebhookStore.js"
import { pgNotRunning, runPostgres } from "./databases.js"
import { backends, entry, noDns, principal, scriptedSender } from "./support.js"

if (!runPostgres) console.warn(`${pgNotRunning}: its tests are skipped`)

const alice = principal("acct_alice")
const bob = principal("acct_bob")

for (const [name, backend] of backends) {
  describe(`WebhookService (${name})`, () => {
    const setup = (answers: ReadonlyArray<number | null> = [200]) => {
      const sender = scriptedSender(answers)
      const layer = WebhookService.layer({ allowPrivate: false, ...noDns }).pipe(
        Layer.provideMerge(Layer.merge(backend(), sender.layer))
      )
      return { sender, layer }
    }
    const body = { url: "https://hooks.example.com/in", events: ["task.completed", "task.failed"] as const }

    it.scoped("resolves the target name at registration: a private answer is refused, no answer is let through", () => {
      const resolver: WebhookService.ServiceOptions["lookup"] = async (host) =>
        host === "rebind.example.com"
          ? [{ address: "93.184.216.34", family: 4 }, { address: "127.0.0.1", family: 4 }]
          : host === "public.example.com"
          ? [{ address: "93.184.216.34", family: 4 }]
          : Promise.reject(new Error("ENOTFOUND"))
      const layer = WebhookService.layer({ allowPrivate: false, lookup: resolver }).pipe(
        Layer.provideMerge(Layer.merge(backend(), scriptedSender([200]).layer))
      )
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const refused = yield* Effect.flip(
          service.create(alice, { ...body, url: "https://rebind.example.com/in" }, undefined)
        )
        assert.instanceOf(refused, Errors.ValidationError)
        expect(refused.message).toContain("url: ")
        expect(refused.message).toContain("host rebind.example.com resolves")
        expect((yield* service.create(alice, { ...body, url: "https://public.example.com/in" }, undefined)).enabled)
          .toBe(true)
        expect((yield* service.create(alice, { ...body, url: "https://not-yet.example.com/in" }, undefined)).enabled)
          .toBe(true)
      }).pipe(Effect.provide(layer))
    })

    it.scoped("creates with a whsec_ secret shown once, lists without it, removes", () => {
      const { layer } = setup()
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const created = yield* service.create(alice, { ...body, description: "main" }, undefined)
        expect(created.id).toMatch(/^wh_[0-9A-HJKMNP-TV-Z]{26}$/)
        expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
        expect(Buffer.from(created.secret.slice(6), "base64")).toHaveLength(32)
        expect(created).toMatchObject({ url: body.url, events: body.events, description: "main", enabled: true })
        const listed = yield* service.list(alice)
        expect(listed).toHaveLength(1)
        expect(listed[0]).not.toHaveProperty("secret")
        expect(listed[0]).toEqual({
          id: created.id,
          environment: "live",
          url: body.url,
          events: [...body.events],
          description: "main",
          enabled: true,
          disabledReason: null,
          createdAt: created.createdAt
        })
        expect(yield* service.list(bob)).toEqual([])
        // another account's webhook is unknown
        const foreign = yield* Effect.flip(service.remove(bob, created.id))
        assert.instanceOf(foreign, Errors.WebhookNotFound)
        expect(yield* service.remove(alice, created.id)).toEqual({ id: created.id, deleted: true })
        expect(yield* service.list(alice)).toEqual([])
        assert.instanceOf(yield* Effect.flip(service.remove(alice, created.id)), Errors.WebhookNotFound)
        const second = yield* service.create(alice, { ...body }, undefined)
        expect(second.secret).not.toEqual(created.secret)
        expect(second.description).toBeNull()
      }).pipe(Effect.provide(layer))
    })

    it.scoped("refuses private targets without allowPrivate", () => {
      const { layer } = setup()
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        for (
          const url of [
            "http://127.0.0.1/x",
            "http://10.0.0.1/",
            "http://169.254.169.254/",
            "http://localhost:8080/",
            "http://[::1]/",
            "http://[::127.0.0.1]/",
            "http://[::a9fe:a9fe]/",
            "http://[::ffff:7f00:1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[2002:c0a8:101::1]/",
            "http://[2001::1]/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://127.1/"
          ]
        ) {
          const error = yield* Effect.flip(service.create(alice, { url, events: ["task.completed"] }, undefined))
          assert.instanceOf(error, Errors.ValidationError, url)
          expect(error.message, url).toMatch(
            /^url: (address \S+ is not a public address|host \S+ is not a public host)$/
          )
        }
      }).pipe(Effect.provide(layer))
    })

    it.scopedLive("a target name that does not resolve within resolveTimeout is refused, not waited for", () => {
      const never: WebhookService.ServiceOptions["lookup"] = () => new Promise(() => undefined)
      const resolver: WebhookService.ServiceOptions["lookup"] = async (host) =>
        host === "compat.example.com" ? [{ address: "::127.0.0.1", family: 6 }] : never(host)
      const layer = WebhookService.layer({ allowPrivate: false, lookup: resolver, resolveTimeout: "200 millis" }).pipe(
        Layer.provideMerge(Layer.merge(backend(), scriptedSender([200]).layer))
      )
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const slow = yield* Effect.flip(
          service.create(alice, { ...body, url: "https://slow.example.com/in" }, undefined)
        )
        assert.instanceOf(slow, Errors.ValidationError)
        expect(slow.message).toBe("url: host slow.example.com did not resolve within 0.2 s")
        const compat = yield* Effect.flip(
          service.create(alice, { ...body, url: "https://compat.example.com/in" }, undefined)
        )
        assert.instanceOf(compat, Errors.ValidationError)
        expect(compat.message).toContain("resolves to ::127.0.0.1, which is not a public address")
        expect(yield* service.list(alice)).toEqual([])
      }).pipe(Effect.provide(layer), Effect.timeout("5 seconds"))
    })

    it.scoped("idempotency key replays the original answer, refuses another body", () => {
      const { layer } = setup()
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const first = yield* service.create(alice, body, "key-1")
        const again = yield* service.create(alice, body, "key-1")
        expect(again).toEqual(first)
        const other = yield* Effect.flip(service.create(alice, { ...body, url: "https://other.example.com/" }, "key-1"))
        assert.instanceOf(other, Errors.IdempotencyKeyReused)
        const bobs = yield* service.create(bob, body, "key-1")
        expect(bobs.id).not.toEqual(first.id)
        expect(yield* service.list(alice)).toHaveLength(1)
      }).pipe(Effect.provide(layer))
    })

    it.scoped("test delivery: signed sample event with X-Webhook-Test", () => {
      const { layer, sender } = setup([204, 500, null])
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const created = yield* service.create(alice, body, undefined)
        const ok = yield* service.test(alice, created.id)
        expect(ok).toEqual({ delivered: true, statusCode: 204, durationMs: 3, error: null })
        const request = sender.requests[0]!
        expect(request.headers["x-webhook-test"]).toBe("true")
        expect(request.url).toBe(body.url)
        const event = JSON.parse(request.body)
        expect(event.type).toBe("task.completed")
        expect(event.data.task.metadata).toEqual({ test: true })
        expect(request.headers["x-webhook-id"]).toBe(event.id)
        const verified = WebhookSignature.verifyAt({
          secret: created.secret,
          headers: request.headers,
          body: request.body,
          now: Number(request.headers["x-webhook-timestamp"]) * 1000
        })
        expect(Either.isRight(verified)).toBe(true)
        const failed = yield* service.test(alice, created.id)
        expect(failed).toMatchObject({ delivered: false, statusCode: 500, error: "HTTP 500" })
        const timedOut = yield* service.test(alice, created.id)
        expect(timedOut).toMatchObject({ delivered: false, statusCode: null, error: "no answer within 10 s" })
        assert.instanceOf(yield* Effect.flip(service.test(bob, created.id)), Errors.WebhookNotFound)
      }).pipe(Effect.provide(layer))
    })

    it.scoped("deliveries: newest first with a keyset cursor; replay makes a new delivery of the same event", () => {
      const { layer } = setup()
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const created = yield* service.create(alice, body, undefined)
        const entries = Array.from({ length: 25 }, (_, i) => entry("acct_alice", "task.completed", null, i + 1))
        const fanned = yield* store.fanOut(undefined, "25", entries, yield* store.now)
        expect(fanned).toEqual(Option.some(25))
        const first = yield* service.deliveries(alice, created.id, {})
        expect(first.data).toHaveLength(20)
        expect(first.pagination).toMatchObject({ hasMore: true, total: 25 })
        expect(first.data[0]!.event_id).toBe(entries[24]!.eventId)
        expect(first.data[0]).toMatchObject({
          status: "pending",
          attempts: 0,
          last_status_code: null,
          last_error: null,
          event_type: "task.completed"
        })
        expect(first.data[0]!.attempt_log).toEqual([])
        const second = yield* service.deliveries(alice, created.id, { cursor: first.pagination.cursor! })
        expect(second.data).toHaveLength(5)
        expect(second.pagination).toEqual({ cursor: null, hasMore: false, total: 25 })
        expect(second.data[4]!.event_id).toBe(entries[0]!.eventId)
        const bad = yield* Effect.flip(service.deliveries(alice, created.id, { cursor: "nope" }))
        assert.instanceOf(bad, Errors.ValidationError)
        assert.instanceOf(yield* Effect.flip(service.deliveries(bob, created.id, {})), Errors.WebhookNotFound)

        const original = second.data[4]!
        const replayed = yield* service.replay(alice, created.id, original.id)
        expect(replayed.id).not.toBe(original.id)
        expect(replayed).toMatchObject({
          event_id: original.event_id,
          event_type: "task.completed",
          status: "pending",
          attempts: 0
        })
        const copies = yield* store.deliveriesOfEvent(original.event_id)
        expect(copies.map((d) => d.payload)).toEqual([copies[0]!.payload, copies[0]!.payload])
        assert.instanceOf(
          yield* Effect.flip(service.replay(alice, created.id, "dlv_01JX00000000000000000000ZZ")),
          Errors.DeliveryNotFound
        )
        assert.instanceOf(yield* Effect.flip(service.replay(bob, created.id, original.id)), Errors.WebhookNotFound)
      }).pipe(Effect.provide(layer))
    })

    it.scoped("fan-out: subscribed, enabled webhooks of the event's account plus the per-job URL; the cursor moves once", () => {
      const { layer } = setup()
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const completed = yield* service.create(
          alice,
          { url: "https://a.example.com/", events: ["task.completed"] },
          undefined
        )
        const all = yield* service.create(alice, {
          url: "https://b.example.com/",
          events: ["task.completed", "task.failed", "task.expired", "task.cancelled"]
        }, undefined)
        const removed = yield* service.create(alice, {
          url: "https://c.example.com/",
          events: ["task.completed", "task.cancelled"]
        }, undefined)
        yield* service.remove(alice, removed.id)
        yield* service.create(bob, { url: "https://bob.example.com/", events: ["task.cancelled"] }, undefined)
        const now = yield* store.now
        const page = [
          entry("acct_alice", "task.completed", null, 1),
          entry("acct_alice", "task.cancelled", "https://job.example.com/cb", 2)
        ]
        expect(yield* store.fanOut(undefined, "2", page, now)).toEqual(Option.some(4))
        // a second dispatcher still at the old cursor writes nothing
        expect(yield* store.fanOut(undefined, "2", page, now)).toEqual(Option.none())
        expect(yield* store.fanOut("1", "2", page, now)).toEqual(Option.none())
        expect(yield* store.readCursor).toBe("2")
        const one = yield* store.deliveriesOfEvent(page[0]!.eventId)
        expect(one.map((d) => d.webhookId).sort()).toEqual([completed.id, all.id].sort())
        const two = yield* store.deliveriesOfEvent(page[1]!.eventId)
        expect(two.map((d) => [d.webhookId, d.url])).toEqual(
          expect.arrayContaining([[all.id, "https://b.example.com/"], [null, "https://job.example.com/cb"]])
        )
        expect(two).toHaveLength(2)
        expect(yield* store.fanOut("2", "3", [entry("acct_alice", "task.expired", null, 3)], now)).toEqual(
          Option.some(1)
        )
      }).pipe(Effect.provide(layer))
    })

    it.scoped("keeps test and live webhooks apart: created in the key's environment, seen and sent only in it", () => {
      const { layer, sender } = setup([200])
      const aliceTest: typeof alice = { ...alice, keyId: "key_alice_test", environment: "test" }
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const live = yield* service.create(
          alice,
          { url: "https://live.example.com/", events: ["task.completed"] },
          undefined
        )
        const test = yield* service.create(
          aliceTest,
          { url: "https://test.example.com/", events: ["task.completed"] },
          undefined
        )
        expect([live.environment, test.environment]).toEqual(["live", "test"])
        expect((yield* service.create(aliceTest, { ...body, environment: "test" }, undefined)).environment).toBe("test")
        // a key registers webhooks of its own environment only
        const refused = yield* Effect.flip(service.create(aliceTest, { ...body, environment: "live" }, undefined))
        assert.instanceOf(refused, Errors.ValidationError)
        expect(refused.message).toMatch(/^environment: /)
        // each key sees only its environment's webhooks; the other's is unknown to it
        expect((yield* service.list(alice)).map((w) => w.id)).toEqual([live.id])
        expect((yield* service.list(aliceTest)).map((w) => w.environment)).toEqual(["test", "test"])
        for (const [key, other] of [[alice, test.id], [aliceTest, live.id]] as const) {
          assert.instanceOf(yield* Effect.flip(service.test(key, other)), Errors.WebhookNotFound)
          assert.instanceOf(yield* Effect.flip(service.deliveries(key, other, {})), Errors.WebhookNotFound)
          assert.instanceOf(yield* Effect.flip(service.remove(key, other)), Errors.WebhookNotFound)
        }
        expect(sender.requests).toHaveLength(0)
        // a task's events go to the webhooks of its environment only (its own webhookUrl as before)
        const now = yield* store.now
        const page = [
          entry("acct_alice", "task.completed", null, 1, "live"),
          entry("acct_alice", "task.completed", "https://job.example.com/cb", 2, "test")
        ]
        expect(yield* store.fanOut(undefined, "2", page, now)).toEqual(Option.some(4))
        const ofLive = yield* store.deliveriesOfEvent(page[0]!.eventId)
        expect(ofLive.map((d) => d.webhookId)).toEqual([live.id])
        const ofTest = yield* store.deliveriesOfEvent(page[1]!.eventId)
        expect(ofTest.map((d) => d.url).sort())
          .toEqual([body.url, "https://job.example.com/cb", "https://test.example.com/"].sort())
        // both still there for their own key
        expect((yield* service.list(alice)).map((w) => w.id)).toEqual([live.id])
        expect(yield* service.remove(aliceTest, test.id)).toEqual({ id: test.id, deleted: true })
      }).pipe(Effect.provide(layer))
    })
  })
}

describe("taskIdOf", () => {
  it("reads the task id of an event body, null for one that names none", () => {
    const body = JSON.stringify(entry("acct_alice", "task.completed", null, 7).decoded)
    assert.strictEqual(WebhookService.taskIdOf(body), "task_01JX0000000000000000000007")
    for (const other of ["not json", "null", "[]", JSON.stringify({ data: { task: { id: 7 } } }), "{}"]) {
      assert.isNull(WebhookService.taskIdOf(other), other)
    }
  })
})
