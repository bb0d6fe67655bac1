/**
 * Conformance of the `TaskReads` port (reads and lists: environments apart, filters, cursors, exact totals): every task
 * storage (memory, SQLite, PostgreSQL) must pass it; `TaskStorageSuite.ts` registers it with the other ports' suites.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Task } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import type { NewTask, TaskRecord } from "../src/TaskRecord.js"
import { type ListQuery, TaskStorage } from "../src/TaskStorage.js"
import {
  type Backend,
  chargeOf,
  hour,
  limitedAccount,
  newTask,
  now,
  poorAccount,
  readOutboxAtLeast,
  runOn
} from "./support.js"

/** Registers the suite for one backend. */
export const readsSuite = (name: string, backend: Backend) =>
  describe(`TaskReads conformance: ${name}`, () => {
    const run = runOn(backend)
    /** Accepts a new task (`extra` over the defaults) a second after the last, without a charge; its id. */
    const acceptLater = (extra: Partial<NewTask>) =>
      Effect.gen(function*() {
        yield* TestClock.adjust(1000)
        const task = newTask({ createdAt: yield* now, ...extra })
        yield* (yield* TaskStorage).accept({ task, charge: undefined, idempotency: undefined })
        return task.id
      })

    it.effect("a pending task's place counts the account's pending tasks of its environment up to it", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accountId = "acct_queue"
          // live and test tasks interleaved, another account's between them; every third live task claimed (queued)
          const tasks: Array<NewTask> = []
          for (let i = 0; i < 12; i++) {
            yield* TestClock.adjust(1)
            const task = newTask({
              createdAt: yield* now,
              accountId: i === 5 ? "acct_other" : accountId,
              environment: i % 2 === 0 ? "live" : "test",
              chargedMicros: 0
            })
            tasks.push(task)
            yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          }
          const claimed = yield* storage.claim("w1", 2, 30_000)
          const queued = new Set(claimed.map((task) => task.id))
          expect(queued.size).toBe(2)
          for (const task of tasks) {
            if (queued.has(task.id)) continue
            const ahead = tasks.filter((other) =>
              other.accountId === task.accountId && other.environment === task.environment &&
              !queued.has(other.id) && other.id <= task.id
            )
            expect(yield* storage.pendingPosition(task), task.id).toBe(ahead.length)
          }
        })
      ))

    it.effect("keeps test and live tasks apart: get, list (items, totals, cursors), cancel and outbox events", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accountId = "acct_env"
          const tasks: Array<NewTask> = []
          for (let i = 0; i < 6; i++) {
            yield* TestClock.adjust(1)
            const environment = i % 2 === 0 ? "live" : "test"
            const task = newTask({
              createdAt: yield* now,
              accountId,
              environment,
              model: i < 4 ? "m1" : "m2",
              chargedMicros: 0
            })
            tasks.push(task)
            yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          }
          const ids = (environment: "live" | "test") =>
            tasks.filter((t) => t.environment === environment).map((t) => t.id).reverse()
          const [live, test] = [tasks[0]!, tasks[1]!]

          // a task of the other environment is not there
          assert.isTrue(Option.isSome(yield* storage.get(accountId, live.id, "live")))
          assert.isTrue(Option.isNone(yield* storage.get(accountId, live.id, "test")))
          assert.isTrue(Option.isNone(yield* storage.get(accountId, test.id, "live")))
          assert.isTrue(Option.isSome(yield* storage.get(accountId, test.id)))

          // lists: only the environment's items, totals counted per environment, cursors within it
          for (const environment of ["live", "test"] as const) {
            const first = yield* storage.list(accountId, { limit: 2, environment })
            expect(first.items.map((t) => t.id)).toEqual(ids(environment).slice(0, 2))
            expect(first).toMatchObject({ hasMore: true, total: 3 })
            const rest = yield* storage.list(accountId, { limit: 2, environment, beforeId: first.items[1]!.id })
            expect(rest.items.map((t) => t.id)).toEqual(ids(environment).slice(2))
            expect(rest.hasMore).toBe(false)
            expect((yield* storage.list(accountId, { limit: 10, environment, model: "m1" })).total).toBe(2)
            expect((yield* storage.list(accountId, { limit: 10, environment, status: "pending" })).total).toBe(3)
            const both = yield* storage.list(accountId, { limit: 10, environment, model: "m1", status: "pending" })
            expect(both.items.every((t) => t.environment === environment)).toBe(true)
            expect(both.total).toBe(2)
          }
          // without an environment (operators): both
          expect((yield* storage.list(accountId, { limit: 10 })).total).toBe(6)
          expect((yield* storage.list(undefined, { limit: 10, environment: "test" })).items.map((t) => t.id))
            .toEqual(expect.arrayContaining(ids("test")))

          // cancel: the other environment's task is unknown and stays as it was
          expect((yield* storage.cancel(accountId, live.id, "test"))._tag).toBe("NotFound")
          expect(Option.getOrThrow(yield* storage.getById(live.id)).status).toBe("pending")
          expect((yield* storage.cancel(accountId, test.id, "test"))._tag).toBe("Cancelled")
          expect((yield* storage.cancel(accountId, live.id, "live"))._tag).toBe("Cancelled")
          expect((yield* storage.list(accountId, { limit: 10, environment: "test", status: "cancelled" })).total).toBe(
            1
          )

          // the outbox entries carry their task's environment
          const read = yield* readOutboxAtLeast(storage, 2)
          const byTask = new Map(read.entries.map((entry) => [entry.taskId, entry.environment]))
          expect([byTask.get(live.id), byTask.get(test.id)]).toEqual(["live", "test"])
        })
      ))

    it.effect("lists newest first with filters, a keyset cursor and the total", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const ids: Array<string> = []
          for (let i = 0; i < 7; i++) {
            yield* TestClock.adjust(1000)
            const task = newTask({
              createdAt: yield* now,
              provider: i % 2 === 0 ? "vendor3" : "vendor7",
              model: i % 2 === 0 ? "vendor3-3" : "vendor7-imagine/text-to-video"
            })
            ids.push(task.id)
            yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          }
          yield* storage.accept({
            task: newTask({ createdAt: yield* now, accountId: "acct_b" }),
            charge: undefined,
            idempotency: undefined
          })
          const newest = [...ids].reverse()
          const page1 = yield* storage.list("acct_a", { limit: 3 })
          expect(page1.items.map((t) => t.id)).toEqual(newest.slice(0, 3))
          expect(page1).toMatchObject({ hasMore: true, total: 7 })
          const page2 = yield* storage.list("acct_a", { limit: 3, beforeId: page1.items[2]!.id })
          expect(page2.items.map((t) => t.id)).toEqual(newest.slice(3, 6))
          const page3 = yield* storage.list("acct_a", { limit: 3, beforeId: page2.items[2]!.id })
          expect(page3.items.map((t) => t.id)).toEqual(newest.slice(6))
          expect(page3).toMatchObject({ hasMore: false, total: 7 })
          const v7 = yield* storage.list("acct_a", { limit: 10, provider: "vendor7" })
          expect(v7.items.map((t) => t.id)).toEqual(newest.filter((_, i) => (6 - i) % 2 === 1))
          expect(v7.total).toBe(3)
          const byModel = yield* storage.list("acct_a", { limit: 10, model: "vendor3-3" })
          expect(byModel.total).toBe(4)
          const windowed = yield* storage.list("acct_a", {
            limit: 10,
            createdAfter: Date.UTC(2026, 10, 21, 12, 0, 2),
            createdBefore: Date.UTC(2026, 10, 21, 12, 0, 5)
          })
          expect(windowed.items.map((t) => t.id)).toEqual([ids[3], ids[2], ids[1]])
          const prefixed = yield* storage.list("acct_a", { limit: 10, idPrefix: ids[4]!.slice(0, 28) })
          expect(prefixed.items.map((t) => t.id)).toContain(ids[4])
          const exact = yield* storage.list("acct_a", { limit: 10, idPrefix: ids[4]! })
          expect(exact.items.map((t) => t.id)).toEqual([ids[4]])
          const none = yield* storage.list("acct_a", { limit: 10, status: "failed" })
          expect(none).toEqual({ items: [], hasMore: false, total: 0 })
        })
      ))

    it.effect("searches the words of the prompt: starts of words, any case, per account and environment", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accept = (prompt: string | undefined, extra: Partial<NewTask> = {}) =>
            acceptLater({
              accountId: "acct_search",
              input: prompt === undefined ? { image_url: "https://example.com/a.png" } : { prompt },
              ...extra
            })
          const dusk = yield* accept("A lighthouse at dusk")
          const keeper = yield* accept("The lighthouse keeper's café", { model: "m2" })
          const sea = yield* accept("sunset over the sea")
          yield* accept(undefined)
          const fog = yield* accept("LIGHTHOUSE in fog, 4K")
          const test = yield* accept("a lighthouse for testing", { environment: "test" })
          const other = yield* accept("a lighthouse of another account", { accountId: "acct_other" })
          const live = { limit: 10, environment: "live" } as const
          /** The matching ids and total of the account's live tasks (`null`: every account's, as operators see). */
          const found = (query: Omit<ListQuery, "limit">, accountId: string | null = "acct_search") =>
            Effect.map(storage.list(accountId ?? undefined, { ...live, ...query }), (page) => ({
              ids: page.items.map((t) => t.id),
              total: page.total
            }))
          expect(yield* found({ words: ["lighthouse"] })).toEqual({ ids: [fog, keeper, dusk], total: 3 })
          // the start of a word; every word must be there
          expect(yield* found({ words: ["lightho"] })).toEqual({ ids: [fog, keeper, dusk], total: 3 })
          expect(yield* found({ words: ["lighthouse", "fog"] })).toEqual({ ids: [fog], total: 1 })
          expect(yield* found({ words: ["4k"] })).toEqual({ ids: [fog], total: 1 })
          expect(yield* found({ words: ["keeper", "café"] })).toEqual({ ids: [keeper], total: 1 })
          expect(yield* found({ words: ["sea"] })).toEqual({ ids: [sea], total: 1 })
          expect(yield* found({ words: ["ighthouse"] })).toEqual({ ids: [], total: 0 })
          expect(yield* found({ words: ["lighthouse", "sea"] })).toEqual({ ids: [], total: 0 })
          // with the other filters, and a cursor
          expect(yield* found({ words: ["lighthouse"], model: "m2" })).toEqual({ ids: [keeper], total: 1 })
          expect(yield* found({ words: ["lighthouse"], status: "pending" })).toEqual({
            ids: [fog, keeper, dusk],
            total: 3
          })
          const first = yield* storage.list("acct_search", { ...live, limit: 2, words: ["lighthouse"] })
          expect(first).toMatchObject({ hasMore: true, total: 3 })
          expect(first.items.map((t) => t.id)).toEqual([fog, keeper])
          const rest = yield* storage.list("acct_search", {
            ...live,
            limit: 2,
            words: ["lighthouse"],
            beforeId: first.items[1]!.id
          })
          expect(rest).toMatchObject({ hasMore: false, total: 3 })
          expect(rest.items.map((t) => t.id)).toEqual([dusk])
          // environments and accounts apart; operators (no account) see every account's
          expect(yield* found({ words: ["lighthouse"], environment: "test" })).toEqual({ ids: [test], total: 1 })
          expect((yield* found({ words: ["lighthouse"], environment: undefined })).total).toBe(4)
          expect(yield* found({ words: ["lighthouse"] }, "acct_other")).toEqual({ ids: [other], total: 1 })
          expect(yield* found({ words: ["lighthouse"] }, null)).toEqual({
            ids: [other, fog, keeper, dusk],
            total: 4
          })
        })
      ))

    it.effect("counts a task once when several words of its prompt start with the word searched", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const accept = (prompt: string, environment: "live" | "test" = "live") =>
            acceptLater({ accountId: "acct_words", environment, input: { prompt } })
          const lights = yield* accept("Lights, a lighthouse and a light, lightly lit")
          const alight = yield* accept("alight at night")
          const cafe = yield* accept("Café CAFÉS and a cafe")
          const first = yield* accept("aardvark")
          const test = yield* accept("light tests", "test")
          const found = (word: string, environment?: "live" | "test") =>
            Effect.map(
              storage.list("acct_words", { limit: 10, environment, words: [word] }),
              (page) => ({ ids: page.items.map((t) => t.id), total: page.total })
            )
          expect(yield* found("light", "live")).toEqual({ ids: [lights], total: 1 })
          expect(yield* found("lights", "live")).toEqual({ ids: [lights], total: 1 })
          expect(yield* found("l", "live")).toEqual({ ids: [lights], total: 1 })
          expect(yield* found("night", "live")).toEqual({ ids: [alight], total: 1 })
          // the first word of a prompt, and the last in byte order
          expect(yield* found("a", "live")).toEqual({ ids: [first, cafe, alight, lights], total: 4 })
          expect(yield* found("aardvark", "live")).toEqual({ ids: [first], total: 1 })
          expect(yield* found("lit", "live")).toEqual({ ids: [lights], total: 1 })
          expect(yield* found("caf", "live")).toEqual({ ids: [cafe], total: 1 })
          expect((yield* found("café", "live")).ids).toEqual([cafe])
          // both environments, or one
          expect(yield* found("light")).toEqual({ ids: [test, lights], total: 2 })
          expect(yield* found("light", "test")).toEqual({ ids: [test], total: 1 })
          expect(yield* found("zebra")).toEqual({ ids: [], total: 0 })
        })
      ))

    it.effect(
      "reads an account's changes oldest first: each visible change moves its task, with filters, a keyset and known keys",
      () =>
        run(() =>
          Effect.gen(function*() {
            const storage = yield* TaskStorage
            const accept = (extra: Partial<NewTask>) => acceptLater({ accountId: "acct_changes", ...extra })
            const kite = yield* accept({ input: { prompt: "a red kite" } })
            const boat = yield* accept({ input: { prompt: "a paper boat" }, model: "m2" })
            yield* accept({ input: { prompt: "a test kite" }, environment: "test" })
            yield* accept({ input: { prompt: "another account's kite" }, accountId: "acct_elsewhere" })
            const live = { environment: "live", since: 0, limit: 10 } as const
            const changed = (query: Partial<Parameters<typeof storage.changes>[1]> = {}) =>
              Effect.map(storage.changes("acct_changes", { ...live, ...query }), (page) => page.items.map((t) => t.id))
            const changedAt = (id: string) =>
              Effect.map(storage.getById(id), (task) => Option.getOrThrow(task).changedAt!)

            // new tasks: changed when accepted, in that order; the other environment and account apart
            expect(yield* changed()).toEqual([kite, boat])
            expect(yield* changedAt(kite)).toBeLessThan(yield* changedAt(boat))
            // the list's filters: model, prompt words, status
            expect(yield* changed({ model: "m2" })).toEqual([boat])
            expect(yield* changed({ words: ["kit"] })).toEqual([kite])
            expect(yield* changed({ status: "succeeded" })).toEqual([])
            // a keyset: a full page names the key after it
            const first = yield* storage.changes("acct_changes", { ...live, limit: 1 })
            expect(first.items.map((t) => t.id)).toEqual([kite])
            expect(first.next).toEqual({ changedAt: yield* changedAt(kite), id: kite })
            const second = yield* storage.changes("acct_changes", { ...live, limit: 1, after: first.next })
            expect(second.items.map((t) => t.id)).toEqual([boat])
            // the keys cover the account's other environment too (the filters apply to the rows read)
            const third = yield* storage.changes("acct_changes", { ...live, limit: 1, after: second.next })
            expect(third.items).toEqual([])
            expect(third.keys).toHaveLength(1)
            const fourth = yield* storage.changes("acct_changes", { ...live, limit: 1, after: third.next })
            expect(fourth).toEqual({ items: [], keys: [], next: undefined })
            // known changes are covered (their keys) but not read
            const known = yield* storage.changes("acct_changes", { ...live, known: (key) => key.id === kite })
            expect(known.items.map((t) => t.id)).toEqual([boat])
            expect(known.keys.map((key) => key.id).slice(0, 2)).toEqual([kite, boat])

            // time moves on: the test clock (memory) and the database clock (SQL storages read theirs)
            const tick = Effect.zipRight(
              TestClock.adjust(1000),
              Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 3)))
            )
            // a cancel moves the boat: its change is now the latest
            yield* tick
            expect((yield* storage.cancel("acct_changes", boat, "live"))._tag).toBe("Cancelled")
            expect(yield* changed()).toEqual([kite, boat])
            expect(yield* changed({ status: "cancelled" })).toEqual([boat])
            // a claim starts the kite (pending -> queued)
            yield* tick
            const cancelledAt = yield* changedAt(boat)
            const [claimed] = (yield* storage.claim("w1", 8, 30_000)).filter((task) => task.id === kite)
            expect(yield* changed()).toEqual([boat, kite])
            expect(yield* changed({ since: cancelledAt + 1 })).toEqual([kite])
            // a step that changes nothing a read shows (a poll) leaves it; progress moves it
            const started = yield* changedAt(kite)
            yield* tick
            assert.isTrue(yield* storage.step(kite, claimed!.fence, { polled: true, nextRunAt: yield* now }))
            expect(yield* changedAt(kite)).toBe(started)
            const [again] = (yield* storage.claim("w1", 8, 30_000)).filter((task) => task.id === kite)
            expect(yield* changedAt(kite)).toBe(started)
            assert.isTrue(yield* storage.step(kite, again!.fence, { status: "running", progress: 40, nextRunAt: 0 }))
            expect(yield* changedAt(kite)).toBeGreaterThan(started)
            expect(
              (yield* storage.changes("acct_changes", { ...live, since: started + 1 })).items.map((t) => t.progress)
            )
              .toEqual([40])
            // the end moves it
            yield* tick
            const [last] = (yield* storage.claim("w1", 8, 30_000)).filter((task) => task.id === kite)
            assert.isTrue(Option.isSome(yield* storage.finish(kite, last!.fence, { _tag: "Succeeded", result: [] })))
            expect(yield* changed({ status: "succeeded" })).toEqual([kite])
            const ended = yield* storage.changes("acct_changes", live)
            expect(ended.items.map((t) => [t.id, t.status])).toEqual([[boat, "cancelled"], [kite, "succeeded"]])
          })
        )
    )

    it.effect(
      "list totals stay exact through accepts and every transition, with no filter, one filter or several",
      () =>
        run(() =>
          Effect.gen(function*() {
            const storage = yield* TaskStorage
            const accounts = ["acct_a", "acct_b", limitedAccount]
            const kinds: ReadonlyArray<Pick<NewTask, "provider" | "model">> = [
              { provider: "vendor3", model: "vendor3-3" },
              { provider: "vendor3", model: "vendor3-3_fast" },
              { provider: "vendor7", model: "vendor7-imagine/text-to-video" }
            ]
            const ids: Array<string> = []
            const accept = (i: number, accountId: string, extra: Partial<NewTask> = {}) =>
              Effect.gen(function*() {
                yield* TestClock.adjust(1000)
                const task = newTask({ createdAt: yield* now, accountId, ...kinds[i % kinds.length]!, ...extra })
                const result = yield* storage.accept({ task, charge: undefined, idempotency: undefined })
                ids.push(task.id)
                return result.task
              })
            const t0 = yield* now
            /** Every total of every account, against the tasks as stored (read one by one). */
            const expectTotals = (label: string) =>
              Effect.gen(function*() {
                const stored = (yield* Effect.forEach(ids, (id) => storage.getById(id))).flatMap(Option.toArray)
                const queries: Array<readonly [Omit<ListQuery, "limit">, (task: TaskRecord) => boolean]> = [
                  [{}, () => true],
                  ...Task.taskStatuses.map((status) => [{ status }, (t: TaskRecord) => t.status === status] as const),
                  ...["vendor3", "vendor7", "vendor1"].map((provider) =>
                    [{ provider }, (t: TaskRecord) => t.provider === provider] as const
                  ),
                  ...kinds.map(({ model }) => [{ model }, (t: TaskRecord) => t.model === model] as const),
                  [{ status: "queued", provider: "vendor3" }, (t) => t.status === "queued" && t.provider === "vendor3"],
                  [{ provider: "vendor3", model: "vendor3-3_fast" }, (t) => t.model === "vendor3-3_fast"],
                  [
                    { status: "succeeded", createdAfter: t0 + 3000 },
                    (t) => t.status === "succeeded" && t.createdAt >= t0 + 3000
                  ],
                  [{ createdBefore: t0 + 5000 }, (t) => t.createdAt < t0 + 5000],
                  [{ idPrefix: "task_" }, () => true],
                  [{ idPrefix: "" }, () => true]
                ]
                for (const accountId of accounts) {
                  const mine = stored.filter((t) => t.accountId === accountId)
                  for (const [query, matches] of queries) {
                    const page = yield* storage.list(accountId, { ...query, limit: 1 })
                    expect(page.total, `${label}: ${accountId} ${JSON.stringify(query)}`).toBe(
                      mine.filter(matches).length
                    )
                    // the cursor never changes the total
                    const last = page.items[0]
                    if (last !== undefined) {
                      const next = yield* storage.list(accountId, { ...query, limit: 1, beforeId: last.id })
                      expect(next.total, `${label}: ${accountId} ${JSON.stringify(query)}, page 2`).toBe(page.total)
                    }
                  }
                }
              })

            yield* expectTotals("empty")
            for (let i = 0; i < 9; i++) yield* accept(i, "acct_a")
            for (let i = 0; i < 3; i++) yield* accept(i, "acct_b")
            // refused and replayed accepts add nothing
            const refused = newTask({ createdAt: yield* now, accountId: poorAccount })
            assert.isTrue(
              Exit.isFailure(
                yield* Effect.exit(storage.accept({ task: refused, charge: chargeOf(refused), idempotency: undefined }))
              )
            )
            const claim = { key: "k", fingerprint: "f", notBefore: 0 }
            const keyed = newTask({ createdAt: yield* now, accountId: "acct_b" })
            yield* storage.accept({ task: keyed, charge: undefined, idempotency: claim })
            ids.push(keyed.id)
            const replay = yield* storage.accept({
              task: newTask({ createdAt: yield* now, accountId: "acct_b" }),
              charge: undefined,
              idempotency: claim
            })
            assert.strictEqual(replay._tag, "Replayed")
            yield* expectTotals("accepted")

            // claim: pending -> queued
            const claimed = yield* storage.claim("w1", 8, 30_000)
            expect(claimed).toHaveLength(8)
            yield* expectTotals("claimed")
            const [c0, c1, c2, c3, c4, c5, c6, c7] = claimed
            // steps: queued -> running, and a step that keeps the status
            assert.isTrue(
              yield* storage.step(c0!.id, c0!.fence, { status: "running", progress: 10, nextRunAt: yield* now })
            )
            assert.isTrue(
              yield* storage.step(c1!.id, c1!.fence, {
                upstreamJobId: "j1",
                polled: true,
                nextRunAt: (yield* now) + hour
              })
            )
            yield* expectTotals("stepped")
            // finish: succeeded, failed, expired (from queued); a stale fence changes nothing
            assert.isTrue(Option.isSome(yield* storage.finish(c2!.id, c2!.fence, { _tag: "Succeeded", result: [] })))
            assert.isTrue(
              Option.isSome(
                yield* storage.finish(c3!.id, c3!.fence, { _tag: "Failed", error: { code: "X", message: "x" } })
              )
            )
            assert.isTrue(Option.isSome(yield* storage.finish(c4!.id, c4!.fence, { _tag: "Expired" })))
            assert.isTrue(Option.isNone(yield* storage.finish(c2!.id, c2!.fence, { _tag: "Expired" })))
            yield* expectTotals("finished")
            // cancel: queued and pending; not a running one
            const pending = (yield* storage.list("acct_a", { limit: 1, status: "pending" })).items[0]!
            assert.strictEqual((yield* storage.cancel(c5!.accountId, c5!.id))._tag, "Cancelled")
            assert.strictEqual((yield* storage.cancel("acct_a", pending.id))._tag, "Cancelled")
            expect((yield* storage.cancel(c0!.accountId, c0!.id))._tag).toBe("NotCancellable")
            yield* expectTotals("cancelled")
            // leases: heartbeat, release, a lapsed lease taken over, markDue: no status changes
            yield* storage.heartbeat("w1", 30_000)
            yield* storage.markDue([c1!.id])
            expect(yield* storage.releaseAll("w1")).toBeGreaterThan(0)
            yield* expectTotals("released")
            // the running task (due now) finishes from running; the re-claimed queued ones from queued
            const again = yield* storage.claim("w2", 20, 30_000)
            yield* expectTotals("claimed again")
            const fenceOf = (id: string) => again.find((t) => t.id === id)!.fence
            assert.isTrue(
              Option.isSome(yield* storage.finish(c0!.id, fenceOf(c0!.id), { _tag: "Succeeded", result: [] }))
            )
            assert.isTrue(
              Option.isSome(
                yield* storage.finish(c6!.id, fenceOf(c6!.id), { _tag: "Failed", error: { code: "X", message: "x" } })
              )
            )
            yield* TestClock.adjust(30_001)
            const lapsed = yield* storage.claim("w3", 20, 30_000)
            expect(lapsed.map((t) => t.id)).toContain(c7!.id)
            assert.isTrue(Option.isSome(
              yield* storage.finish(
                c7!.id,
                lapsed.find((t) => t.id === c7!.id)!.fence,
                { _tag: "Expired" }
              )
            ))
            yield* expectTotals("finished again")
            // retry: a new task pointing at the failed one
            yield* accept(0, c3!.accountId, { originalTaskId: c3!.id })
            // a step whose extra charge is refused records nothing, its status change included
            const limited = yield* accept(1, limitedAccount)
            const [held] = (yield* storage.claim("w4", 20, 30_000)).filter((t) => t.id === limited.id)
            const charges = [{ amountMicros: 1, description: "extra" }]
            const stepped = yield* Effect.exit(
              storage.step(limited.id, held!.fence, { status: "running", nextRunAt: yield* now, charges })
            )
            assert.isTrue(Exit.isFailure(stepped))
            expect(Option.getOrThrow(yield* storage.getById(limited.id)).status).toBe("queued")
            yield* expectTotals("retried and refused")
          })
        ),
      { timeout: 30_000 }
    )
  })
