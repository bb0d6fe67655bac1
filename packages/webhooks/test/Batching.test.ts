/**
 * The batched write path of the dispatcher, on memory, SQLite and PostgreSQL: a claim carries each delivery's
 * webhook as it is at the claim (no read per attempt), `settleAll` settles many claimed deliveries at once with
 * every guarantee of `settle` (fence, lease, attempt log, 410 disabling its webhook, a delivery given twice), and
 * the background dispatcher delivers a burst with its outcomes group-committed.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import { layerUnmetered } from "@mediagate/engine/Billing"
import { layerMemory as taskStorageMemory } from "@mediagate/engine/TaskStorage"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Dispatcher from "../src/Dispatcher.js"
import * as WebhookService from "../src/WebhookService.js"
import { type AttemptResult, byDelivery, WebhookStore } from "../src/WebhookStore.js"
import { backends, entry, noDns, principal, scriptedSender } from "./support.js"

const alice = principal("acct_alice")
const events = ["task.completed"] as const

const answer = (statusCode: number | null, at: number): AttemptResult => ({
  statusCode,
  error: statusCode === 200 ? null : statusCode === null ? "no answer within 10 s" : `HTTP ${statusCode}`,
  durationMs: 7.4,
  responseExcerpt: statusCode === null ? null : "body",
  at
})

for (const [name, backend] of backends) {
  describe(`batched claims and settles (${name})`, () => {
    const layer = () =>
      WebhookService.layer(noDns).pipe(Layer.provideMerge(Layer.merge(backend(), scriptedSender([200]).layer)))

    it.scoped("a claim carries each delivery's webhook as it is now: live, disabled, deleted, per-job", () =>
      Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const live = yield* service.create(alice, { url: "https://live.example.com/", events }, undefined)
        const disabled = yield* service.create(alice, { url: "https://disabled.example.com/", events }, undefined)
        const removed = yield* service.create(alice, { url: "https://removed.example.com/", events }, undefined)
        const now = yield* store.now
        const fanned = yield* store.fanOut(undefined, "1", [
          entry("acct_alice", "task.completed", "https://job.example.com/", 1)
        ], now)
        expect(fanned).toEqual(Option.some(4))
        // changed after the fan-out: the claim sees the change
        yield* store.setEnabled(disabled.id, false)
        yield* service.remove(alice, removed.id)
        const claimed = yield* store.claimDue("w1", 10, 60_000, now)
        const byUrl = new Map(claimed.map((d) => [d.url, d]))
        expect(byUrl.get("https://live.example.com/")!.webhook).toEqual({
          secret: live.secret,
          enabled: true,
          deletedAt: null
        })
        expect(byUrl.get("https://disabled.example.com/")!.webhook).toMatchObject({ enabled: false, deletedAt: null })
        expect(byUrl.get("https://removed.example.com/")!.webhook).toMatchObject({ enabled: false })
        assert.isNotNull(byUrl.get("https://removed.example.com/")!.webhook!.deletedAt)
        expect(byUrl.get("https://job.example.com/")!.webhook).toBeNull()
        expect(claimed.every((d) => d.fence === 1 && d.leaseOwner === "w1" && d.leaseExpiresAt === now + 60_000)).toBe(
          true
        )
      }).pipe(Effect.provide(layer())))

    it.scoped("a fan-out reads the event of an entry with a receiver only; one it cannot read moves nothing", () =>
      Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        yield* service.create(alice, { url: "https://hooks.example.com/", events }, undefined)
        const now = yield* store.now
        const unreadable = (base: ReturnType<typeof entry>) => ({
          ...base,
          event: Effect.fail(new PersistenceError({ message: "task storage: readOutbox failed: outbox.event: bad" }))
        })
        // bob has no webhook and the entry no URL: its event is never read, and the cursor moves
        expect(yield* store.fanOut(undefined, "1", [unreadable(entry("acct_bob", "task.completed", null, 1))], now))
          .toEqual(Option.some(0))
        // alice's webhook receives it: the fan-out fails, nothing is created and the cursor stays
        const failed = yield* Effect.flip(
          store.fanOut("1", "2", [
            entry("acct_alice", "task.failed", null, 2),
            unreadable(entry("acct_alice", "task.completed", null, 3))
          ], now)
        )
        expect(failed.message).toBe("task storage: readOutbox failed: outbox.event: bad")
        expect(yield* store.readCursor).toBe("1")
        expect(yield* store.claimDue("w1", 10, 60_000, now)).toEqual([])
      }).pipe(Effect.provide(layer())))

    it.scoped("settleAll: one batch, each fenced on its own; attempts logged; 410 disables; a delivery given twice holds once", () =>
      Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const ok = yield* service.create(alice, { url: "https://ok.example.com/", events }, undefined)
        const gone = yield* service.create(alice, { url: "https://gone.example.com/", events }, undefined)
        const now = yield* store.now
        const page = [1, 2].map((seq) =>
          entry("acct_alice", "task.completed", seq === 1 ? "https://job.example.com/" : null, seq)
        )
        expect(yield* store.fanOut(undefined, "1", [page[0]!], now)).toEqual(Option.some(3))
        const first = yield* store.claimDue("w1", 10, 60_000, now)
        expect(first).toHaveLength(3)
        expect(yield* store.fanOut("1", "2", [page[1]!], now)).toEqual(Option.some(2))
        // the second event's leases run out and another worker claims them: the first worker's settles are refused
        const second = yield* store.claimDue("w1", 10, 1000, now)
        expect(second).toHaveLength(2)
        yield* TestClock.adjust(1000)
        const at = yield* store.now
        const reclaimed = yield* store.claimDue("w2", 10, 60_000, at)
        expect(reclaimed.map((d) => d.id).sort()).toEqual(second.map((d) => d.id).sort())
        const pick = (list: typeof first, url: string) => list.find((d) => d.url === url)!
        const stale = pick(second, "https://ok.example.com/")
        const again = pick(reclaimed, "https://ok.example.com/")
        const succeeded = pick(first, "https://ok.example.com/")
        const retrying = pick(first, "https://job.example.com/")
        const failed410 = pick(first, "https://gone.example.com/")
        const skipped = pick(reclaimed, "https://gone.example.com/")
        const answers = yield* store.settleAll([
          { delivery: succeeded, attempt: answer(200, at), settlement: { status: "succeeded" } },
          {
            delivery: retrying,
            attempt: answer(null, at),
            settlement: { status: "pending", nextAttemptAt: at + 60_000 }
          },
          { delivery: failed410, attempt: answer(410, at), settlement: { status: "failed", disableWebhook: true } },
          { delivery: stale, attempt: answer(200, at), settlement: { status: "succeeded" } },
          { delivery: skipped, attempt: undefined, settlement: { status: "failed", reason: "webhook disabled" } },
          // the same delivery again: already settled by the first of the batch
          { delivery: succeeded, attempt: answer(500, at), settlement: { status: "failed" } }
        ])
        expect(answers).toEqual([true, true, true, false, true, false])
        const all = new Map(
          [
            ...(yield* store.deliveriesOfEvent(page[0]!.eventId)),
            ...(yield* store.deliveriesOfEvent(page[1]!.eventId))
          ].map((d) => [d.id, d])
        )
        expect(all.get(succeeded.id)).toMatchObject({
          status: "succeeded",
          attempts: 1,
          lastStatusCode: 200,
          lastError: null,
          nextAttemptAt: null,
          leaseOwner: null,
          leaseExpiresAt: null
        })
        expect(all.get(retrying.id)).toMatchObject({
          status: "pending",
          attempts: 1,
          lastStatusCode: null,
          lastError: "no answer within 10 s",
          nextAttemptAt: at + 60_000,
          leaseOwner: null
        })
        expect(all.get(failed410.id)).toMatchObject({
          status: "failed",
          attempts: 1,
          lastStatusCode: 410,
          lastError: "HTTP 410"
        })
        expect(all.get(skipped.id)).toMatchObject({ status: "failed", attempts: 0, lastError: "webhook disabled" })
        // the stale worker changed nothing: the delivery is still leased by the second worker
        expect(all.get(stale.id)).toMatchObject({
          status: "pending",
          attempts: 0,
          leaseOwner: "w2",
          fence: again.fence
        })
        expect(yield* store.attempts(succeeded.id)).toEqual([
          {
            deliveryId: succeeded.id,
            attempt: 1,
            statusCode: 200,
            error: null,
            durationMs: 7,
            responseExcerpt: "body",
            at
          }
        ])
        expect((yield* store.attempts(retrying.id)).map((a) => [a.attempt, a.statusCode, a.error])).toEqual([[
          1,
          null,
          "no answer within 10 s"
        ]])
        expect(yield* store.attempts(stale.id)).toEqual([])
        expect(yield* store.attempts(skipped.id)).toEqual([])
        // 410 disabled its webhook, and only that one
        const hooks = new Map((yield* service.list(alice)).map((w) => [w.id, w.enabled]))
        expect(hooks.get(gone.id)).toBe(false)
        expect(hooks.get(ok.id)).toBe(true)
        // the retry: claimed again when due, its second attempt numbered 2
        yield* TestClock.adjust(60_000)
        const [retry] = (yield* store.claimDue("w3", 10, 1000, yield* store.now)).filter((d) => d.id === retrying.id)
        expect(retry).toMatchObject({ attempts: 1 })
        const later = yield* store.now
        expect(
          yield* store.settleAll([{
            delivery: retry!,
            attempt: answer(200, later),
            settlement: { status: "succeeded" }
          }])
        ).toEqual([true])
        expect((yield* store.attempts(retrying.id)).map((a) => [a.attempt, a.statusCode])).toEqual([[1, null], [
          2,
          200
        ]])
        expect(yield* store.settleAll([])).toEqual([])
        // the logs of several deliveries in one read, grouped by delivery, each first attempt first
        const logs = byDelivery(yield* store.attemptsOf([retrying.id, succeeded.id, stale.id, "dlv_unknown"]))
        expect([...logs.keys()].sort()).toEqual([retrying.id, succeeded.id].sort())
        expect(logs.get(retrying.id)).toEqual(yield* store.attempts(retrying.id))
        expect(logs.get(succeeded.id)).toEqual(yield* store.attempts(succeeded.id))
        expect(yield* store.attemptsOf([])).toEqual([])
      }).pipe(Effect.provide(layer())))

    it.scoped("fanOutLeased: the first `limit` new deliveries leased to the caller with their webhooks, the rest claimable", () =>
      Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        const hook = yield* service.create(alice, { url: "https://hooks.example.com/", events }, undefined)
        const now = yield* store.now
        const page = [1, 2].map((seq) => entry("acct_alice", "task.completed", `https://job.example.com/${seq}`, seq))
        const lease = { owner: "w1", leaseMs: 60_000, limit: 3 }
        // a stale cursor: nothing written, nothing leased
        expect(yield* store.fanOutLeased("0", "2", page, now, lease)).toEqual(Option.none())
        const fanned = yield* store.fanOutLeased(undefined, "2", page, now, lease)
        assert.isTrue(Option.isSome(fanned))
        const { created, leased } = Option.getOrThrow(fanned)
        expect(created).toBe(4)
        // in the order of the page: the first event's two deliveries, then the second's configured one
        expect(leased.map((d) => [d.eventId, d.url])).toEqual([
          [page[0]!.eventId, "https://hooks.example.com/"],
          [page[0]!.eventId, "https://job.example.com/1"],
          [page[1]!.eventId, "https://hooks.example.com/"]
        ])
        expect(leased.every((d) => d.fence === 1 && d.leaseOwner === "w1" && d.leaseExpiresAt === now + 60_000)).toBe(
          true
        )
        expect(leased.map((d) => d.webhook)).toEqual([
          { secret: hook.secret, enabled: true, deletedAt: null },
          null,
          { secret: hook.secret, enabled: true, deletedAt: null }
        ])
        // stored as leased: another dispatcher's claim takes only the one left over
        const stored = [
          ...(yield* store.deliveriesOfEvent(page[0]!.eventId)),
          ...(yield* store.deliveriesOfEvent(page[1]!.eventId))
        ]
        expect(stored.filter((d) => d.leaseOwner === "w1").map((d) => d.id).sort()).toEqual(
          leased.map((d) => d.id).sort()
        )
        const other = yield* store.claimDue("w2", 10, 60_000, now)
        expect(other.map((d) => d.url)).toEqual(["https://job.example.com/2"])
        // a leased delivery settles with the fence it was leased with
        const at = yield* store.now
        expect(
          yield* store.settleAll([{
            delivery: leased[0]!,
            attempt: answer(200, at),
            settlement: { status: "succeeded" }
          }])
        ).toEqual([true])
        expect(yield* store.attempts(leased[0]!.id)).toHaveLength(1)
        // a lease that runs out makes the delivery claimable again (the dispatcher died before sending it), like
        // the lease of a claim
        yield* TestClock.adjust(60_000)
        const reclaimed = yield* store.claimDue("w3", 10, 60_000, yield* store.now)
        expect(reclaimed.map((d) => d.id).sort()).toEqual([leased[1]!.id, leased[2]!.id, other[0]!.id].sort())
        expect(reclaimed.every((d) => d.fence === 2)).toBe(true)
        // without a limit, fanOutLeased is fanOut
        const more = yield* store.fanOutLeased("2", "3", [entry("acct_alice", "task.completed", null, 3)], now, {
          ...lease,
          limit: 0
        })
        expect(Option.map(more, (f) => [f.created, f.leased.length])).toEqual(Option.some([1, 0]))
      }).pipe(Effect.provide(layer())))

    it.live("the background dispatcher delivers a burst: every delivery once, each attempt logged", () => {
      const sender = scriptedSender([200])
      const stack = WebhookService.layer(noDns).pipe(
        Layer.provideMerge(
          Layer.mergeAll(backend(), sender.layer, taskStorageMemory().pipe(Layer.provide(layerUnmetered)))
        )
      )
      return Effect.gen(function*() {
        const service = yield* Services.WebhookService
        const store = yield* WebhookStore
        yield* service.create(alice, { url: "https://hooks.example.com/", events }, undefined)
        const burst = Array.from(
          { length: 60 },
          (_, i) => entry("acct_alice", "task.completed", `https://job.example.com/${i}`, i + 1)
        )
        expect(yield* store.fanOut(undefined, "60", burst, yield* store.now)).toEqual(Option.some(120))
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(Dispatcher.layer({ jitter: 0, concurrency: 8, deliveryIdle: "20 millis" }))
          for (let i = 0; i < 400 && sender.requests.length < 120; i++) yield* Effect.sleep("10 millis")
          // the settles of the last sends
          for (let i = 0; i < 100; i++) {
            const backlog = yield* store.backlog(yield* store.now, 0)
            if (backlog.pending === 0) break
            yield* Effect.sleep("10 millis")
          }
        }))
        expect(sender.requests).toHaveLength(120)
        expect(new Set(sender.requests.map((r) => `${r.url} ${r.headers["x-webhook-id"]}`)).size).toBe(120)
        for (const item of burst) {
          const deliveries = yield* store.deliveriesOfEvent(item.eventId)
          expect(deliveries.map((d) => [d.status, d.attempts])).toEqual([["succeeded", 1], ["succeeded", 1]])
          for (const delivery of deliveries) {
            expect((yield* store.attempts(delivery.id)).map((a) => a.statusCode)).toEqual([200])
          }
        }
      }).pipe(Effect.provide(stack))
    }, 20_000)
  })
}
