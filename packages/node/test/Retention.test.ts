/**
 * Retention on SQLite and PostgreSQL under `TestClock`: result files (live and test, the walk waiting at a running
 * task), settled deliveries with their attempts, outbox rows behind the dispatcher's cursor only, idempotency
 * records; the scheduled pruner; the test storage quota.
 */
import { NodeContext } from "@effect/platform-node"
import type * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { IdempotencyStore } from "@mediagate/accounts/Idempotency"
import * as SqlAccounts from "@mediagate/accounts/SqlAccounts"
import { Errors, Services } from "@mediagate/contract"
import { layerUnmetered } from "@mediagate/engine/Billing"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import type { NewTask } from "@mediagate/engine/TaskRecord"
import { TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Ids from "@mediagate/persistence/Ids"
import { postgres, runPostgres, sqlite } from "@mediagate/testing/databases"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as FileStore from "@mediagate/vendors/FileStore"
import * as SqlWebhookStore from "@mediagate/webhooks/SqlWebhookStore"
import { WebhookStore } from "@mediagate/webhooks/WebhookStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as TestClock from "effect/TestClock"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Retention from "../src/Retention.js"

const directory = mkdtempSync(join(tmpdir(), "mediagate-retention-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

const day = 86_400_000
/**
 * Each test starts 100 days after the previous one: task ids are monotonic ULIDs in a process, so a clock set back
 * would still give ids of the later time.
 */
let epoch = 1_700_000_000_000
const freshStart = Effect.suspend(() => TestClock.setTime(epoch += 100 * day))
const settings: Retention.Settings = { ...Retention.defaults, interval: 60 * 60_000, testStorageQuota: 1000 }

/**
 * Task ids of the test's own time: the process's monotonic generator never goes back to an earlier time once
 * another suite in the same worker has drawn ids at the real time, and retention finds tasks by the time in the id.
 */
let drawn = 0
const newTask = (createdAt: number, environment: "live" | "test", accountId = "acct_a"): NewTask =>
  Fixtures.newTask({
    id: Ids.taskIdFloor(createdAt).slice(0, -16) + String(++drawn).padStart(16, "0"),
    createdAt,
    environment,
    accountId
  })

const keyOf = (id: string) => `tasks/${id}/video-0.mp4`

/** Accepts tasks at the current (test) time; `finish` says which succeed with one stored file of `size` bytes. */
const run = (
  environments: ReadonlyArray<"live" | "test">,
  finish: (index: number) => boolean,
  size = 100,
  accountId?: string,
  key: (id: string) => string = keyOf
) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage
    const files = yield* FileStore.FileStore
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const accepted: Array<string> = []
    for (const environment of environments) {
      const task = newTask(now, environment, accountId)
      yield* storage.accept({ task, charge: undefined, idempotency: undefined })
      accepted.push(task.id)
    }
    const claimed = yield* storage.claim("worker", 100, 60_000)
    for (const task of claimed) {
      const index = accepted.indexOf(task.id)
      if (index < 0 || !finish(index)) continue
      yield* files.put(key(task.id), new Uint8Array(size), "video/mp4")
      yield* storage.finish(task.id, task.fence, {
        _tag: "Succeeded",
        result: [{
          url: `https://media.example.com/files/${key(task.id)}?expires=1&signature=${"a".repeat(64)}`,
          format: "mp4",
          size_bytes: size,
          width: 64,
          height: 64,
          duration: 1,
          kind: "output"
        }]
      })
    }
    return { ids: accepted, claimed }
  })

const exists = (id: string) =>
  Effect.map(Effect.flatMap(FileStore.FileStore, (files) => files.open(keyOf(id))), Option.isSome)

const stores = (db: () => Layer.Layer<SqlClient.SqlClient, unknown>, name: string) =>
  Layer.mergeAll(
    SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(layerUnmetered)),
    SqlWebhookStore.layer({ time: "clock" }),
    SqlAccounts.layerStore(),
    Retention.layerCursorsSql(),
    FileStore.layerLocal({ directory: join(directory, name) }).pipe(Layer.provide(NodeContext.layer))
  ).pipe(Layer.provide(db()))

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, db] of databases) {
  describe(`Retention on ${name}`, () => {
    layer(Retention.layer(settings).pipe(Layer.provideMerge(stores(db, `${name}-pruner`))), { timeout: "60 seconds" })(
      (it) => {
        it.effect("result files: test keys after 1 day, live keys after 30 days; the walk waits at a running task", () =>
          Effect.gen(function*() {
            yield* freshStart
            const pruner = yield* Retention.Pruner
            const storage = yield* TaskStorage
            // test A succeeds, test B keeps running, test C and live L succeed
            const first = yield* run(["test", "test", "test", "live"], (i) => i !== 1)
            const [a, b, c, l] = first.ids as [string, string, string, string]
            yield* TestClock.adjust("1 hour")
            expect((yield* pruner.run).resultFiles).toBe(0)
            for (const id of [a, c, l]) assert.isTrue(yield* exists(id))

            yield* TestClock.adjust(day)
            const report = yield* pruner.run
            expect([report.resultTasks, report.resultFiles]).toEqual([1, 1])
            expect([yield* exists(a), yield* exists(c), yield* exists(l)]).toEqual([false, true, true])

            // B ends (with a file): the walk goes on past it
            const running = first.claimed.find((task) => task.id === b)!
            yield* FileStore.FileStore.pipe(
              Effect.flatMap((files) => files.put(keyOf(b), new Uint8Array(5), "video/mp4"))
            )
            yield* storage.finish(b, running.fence, {
              _tag: "Succeeded",
              result: [{
                url: `https://media.example.com/files/${keyOf(b)}?expires=1&signature=x`,
                format: "mp4",
                size_bytes: 5,
                width: 1,
                height: 1,
                kind: "output"
              }]
            })
            expect((yield* pruner.run).resultFiles).toBe(2)
            expect([yield* exists(b), yield* exists(c), yield* exists(l)]).toEqual([false, false, true])
            // a second run has nothing left to do (the cursor moved)
            expect((yield* pruner.run).resultFiles).toBe(0)

            yield* TestClock.adjust(29 * day)
            expect((yield* pruner.run).resultFiles).toBe(1)
            assert.isFalse(yield* exists(l))
            // the task keeps its result
            expect(Option.getOrThrow(yield* storage.getById(l)).result?.[0]?.size_bytes).toBe(100)
          }))

        it.effect("result files that many tasks name (simulated renderings) stay when their tasks expire", () =>
          Effect.gen(function*() {
            yield* freshStart
            const pruner = yield* Retention.Pruner
            const files = yield* FileStore.FileStore
            const shared = `${FileStore.sharedPrefix}r1/video-64x64-1s.mp4`
            const own = yield* run(["test"], () => true)
            yield* run(["test", "test"], () => true, 100, undefined, () => shared)
            yield* TestClock.adjust(2 * day)
            const report = yield* pruner.run
            // the task's own file is removed; the shared one is not counted and stays
            expect([report.resultTasks, report.resultFiles]).toEqual([1, 1])
            assert.isFalse(yield* exists(own.ids[0]!))
            assert.isTrue(Option.isSome(yield* files.open(shared)))
          }))

        it.effect("outbox rows: only behind the dispatcher's cursor, after 7 days", () =>
          Effect.gen(function*() {
            const pruner = yield* Retention.Pruner
            const storage = yield* TaskStorage
            const webhooks = yield* WebhookStore
            yield* freshStart
            // on PostgreSQL an entry shows once no older transaction runs anywhere on the server (other suites'
            // included), so entries of earlier tests can still show up late: they are counted apart (`late`), and
            // being from 100 days before, go at the next run
            const ours = new Set<string>()
            let late = 0
            // the dispatcher reads everything so far, and fans it out; answers how many of this test's it read
            const drain = Effect.gen(function*() {
              const cursor = yield* webhooks.readCursor
              const page = yield* storage.readOutbox(cursor, 1000)
              const moved = yield* webhooks.fanOut(cursor, page.cursor, [], yield* webhooks.now)
              assert.isTrue(Option.isSome(moved) || page.cursor === cursor, `cursor ${cursor} -> ${page.cursor}`)
              late += page.entries.filter((entry) => !ours.has(entry.taskId)).length
              return page.entries.length - page.entries.filter((entry) => !ours.has(entry.taskId)).length
            })
            yield* drain
            yield* pruner.run // what earlier tests left
            late = 0
            for (const id of (yield* run(["live", "live"], () => true)).ids) ours.add(id)
            let read = 0
            for (let i = 0; i < 100 && read < 2; i++) read += yield* drain
            expect(read).toBeGreaterThanOrEqual(2)
            const unread = (yield* run(["live"], () => true)).ids[0]! // not read yet
            yield* TestClock.adjust(6 * day)
            expect((yield* pruner.run).outbox).toBe(late)
            yield* TestClock.adjust(2 * day)
            const report = yield* pruner.run
            expect(report.outbox).toBe(read)
            // the unread event is still there for the dispatcher
            let left = 0
            for (let i = 0; i < 100 && left === 0; i++) {
              const page = yield* storage.readOutbox(yield* webhooks.readCursor, 1000)
              left = page.entries.filter((entry) => entry.taskId === unread).length
            }
            expect(left).toBe(1)
            const again = yield* pruner.run
            expect(again.outbox).toBe(0)
          }))

        it.effect("webhook deliveries: settled ones and their attempts after 30 days, pending ones never", () =>
          Effect.gen(function*() {
            const pruner = yield* Retention.Pruner
            const webhooks = yield* WebhookStore
            const add = (eventId: string) =>
              Effect.flatMap(webhooks.now, (now) =>
                webhooks.addDelivery(
                  {
                    webhookId: null,
                    accountId: "acct_d",
                    eventId,
                    eventType: "task.completed",
                    url: "https://example.com/hook",
                    payload: "{}"
                  },
                  now,
                  { enableWebhook: false }
                ))
            const done = yield* add("evt_done")
            const failed = yield* add("evt_failed")
            const pending = yield* add("evt_pending")
            const claimed = yield* webhooks.claimDue("d", 10, 60_000, yield* webhooks.now)
            const attempt = {
              statusCode: 200,
              error: null,
              durationMs: 5,
              responseExcerpt: "ok",
              at: yield* webhooks.now
            }
            for (const delivery of claimed) {
              if (delivery.id === done.id) {
                yield* webhooks.settle(delivery.id, delivery.fence, attempt, { status: "succeeded" })
              }
              if (delivery.id === failed.id) {
                yield* webhooks.settle(delivery.id, delivery.fence, attempt, { status: "failed" })
              }
              if (delivery.id === pending.id) {
                yield* webhooks.settle(delivery.id, delivery.fence, attempt, {
                  status: "pending",
                  nextAttemptAt: (yield* webhooks.now) + 40 * day
                })
              }
            }
            expect((yield* webhooks.attempts(done.id)).length).toBe(1)
            yield* TestClock.adjust(29 * day)
            expect((yield* pruner.run).deliveries).toBe(0)
            yield* TestClock.adjust(2 * day)
            expect((yield* pruner.run).deliveries).toBe(2)
            expect(yield* webhooks.deliveriesOfEvent("evt_done")).toEqual([])
            expect(yield* webhooks.attempts(done.id)).toEqual([])
            expect((yield* webhooks.deliveriesOfEvent("evt_pending")).length).toBe(1)
            expect((yield* webhooks.attempts(pending.id)).length).toBe(1)
          }))

        it.effect("idempotency records of keys and webhooks after their 24-hour window", () =>
          Effect.gen(function*() {
            const pruner = yield* Retention.Pruner
            const keys = yield* IdempotencyStore
            const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            yield* keys.insert(
              {
                accountId: "acct_i",
                scope: "api-keys",
                keyHash: "h",
                fingerprint: "f",
                ciphertext: "v1.x",
                createdAt: now
              } as never,
              now - day
            )
            yield* TestClock.adjust("23 hours")
            yield* pruner.run
            assert.isTrue(Option.isSome(yield* keys.find("acct_i", "api-keys", "h")))
            yield* TestClock.adjust("2 hours")
            expect((yield* pruner.run).idempotency).toBeGreaterThanOrEqual(1)
            assert.isTrue(Option.isNone(yield* keys.find("acct_i", "api-keys", "h")))
          }))
      }
    )

    layer(stores(db, `${name}-scheduled`), { timeout: "60 seconds" })((it) => {
      it.scoped("the pruner fiber runs every interval from its start", () =>
        Effect.gen(function*() {
          yield* freshStart
          const { ids } = yield* run(["test"], () => true)
          // every finished run is awaited through its log line (runs do real database I/O)
          const runs = yield* Queue.unbounded<string>()
          const logger = Logger.make(({ message }) => {
            const text = Array.isArray(message) ? String(message[0]) : String(message)
            if (text.startsWith("retention:")) Queue.unsafeOffer(runs, text)
          })
          const pruned = Effect.flatMap(FileStore.FileStore, (files) => files.open(keyOf(ids[0]!)))
          yield* Layer.build(
            Retention.layerPruner({ ...settings, interval: 6 * 60 * 60_000 }).pipe(
              Layer.provide(Logger.replace(Logger.defaultLogger, logger)),
              Layer.provide(Logger.minimumLogLevel(LogLevel.Debug))
            )
          )
          expect(yield* Queue.take(runs)).toBe("retention: nothing to prune") // the run at start
          // one run every 6 hours (each awaited: the next sleep starts when a run ends); at 24 hours the task is
          // exactly a day old and kept, at 30 hours it is pruned
          const seen: Array<string> = []
          for (let i = 0; i < 5; i++) {
            yield* TestClock.adjust("6 hours")
            seen.push(yield* Queue.take(runs))
            if (i < 4) assert.isTrue(Option.isSome(yield* pruned))
          }
          expect(seen).toEqual([...Array(4).fill("retention: nothing to prune"), "retention: pruned"])
          assert.isTrue(Option.isNone(yield* pruned))
        }))

      it.scoped("test storage quota: test-key generations are refused with 429 RATE_LIMITED until files expire", () =>
        Effect.gen(function*() {
          yield* freshStart
          const created: Array<string> = []
          const inner = Layer.succeed(
            Services.TaskService,
            {
              create: (principal: { readonly environment: string }) =>
                Effect.sync(() => {
                  created.push(principal.environment)
                  return { id: "task_x", status: "pending" } as never
                })
            } as unknown as Services.TaskService["Type"]
          )
          const context = yield* Layer.build(
            Retention.layerQuota(settings).pipe(Layer.provide(inner))
          )
          const service = Effect.map(
            Effect.context<Services.TaskService>(),
            (c) => c.unsafeMap.get(Services.TaskService.key) as Services.TaskService["Type"]
          ).pipe(Effect.provide(context))
          const tasks = yield* service
          const principal = (environment: "live" | "test") =>
            ({ accountId: "acct_q", keyId: "key_q", environment }) as never
          const command = {} as never
          yield* tasks.create(principal("test"), command)
          // 900 bytes of test files: still under the 1000-byte quota
          yield* run(["test", "test", "test"], () => true, 300, "acct_q")
          yield* TestClock.adjust("2 seconds")
          yield* tasks.create(principal("test"), command)
          yield* run(["test"], () => true, 300, "acct_q")
          yield* TestClock.adjust("2 seconds")
          const refused = yield* Effect.flip(tasks.create(principal("test"), command))
          assert.instanceOf(refused, Errors.RateLimited)
          expect(refused.message).toContain("test storage quota exceeded")
          expect(refused.message).toContain("1200 of 1000 bytes")
          // live keys are not limited by it; other accounts neither
          yield* tasks.create(principal("live"), command)
          yield* tasks.create({ accountId: "acct_other", keyId: "k", environment: "test" } as never, command)
          // once the test files are older than the test retention, the account may generate again
          yield* TestClock.adjust(day)
          yield* tasks.create(principal("test"), command)
          expect(created).toEqual(["test", "test", "live", "test", "test"])
        }))
    })
  })
}

describe("Retention settings", () => {
  it("sizes", () => {
    const { parseSize } = Retention
    expect(parseSize("268435456")).toEqual(Either.right(268435456))
    expect(parseSize("256MiB")).toEqual(Either.right(256 * 1024 ** 2))
    expect(parseSize("1GB")).toEqual(Either.right(1e9))
    expect(parseSize("off")).toEqual(Either.right(undefined))
    expect(parseSize("0")).toEqual(Either.right(undefined))
    assert.isTrue(Either.isLeft(parseSize("lots")))
    assert.isTrue(Either.isLeft(parseSize("-5")))
  })
})
