/**
 * State-machine property: random interleavings of client, worker and clock actions (`TestClock`) against a storage backend
 * never break an invariant — one terminal state per task (never changed afterwards), only allowed transitions,
 * fences never go back, refund at most once and only for refunded outcomes, one outbox event per terminal task,
 * and no lost task.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import { canMove, isRefunded, isTerminal, type TaskRecord } from "../src/TaskRecord.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { chargeOf, makeRecordingBilling, newTask, readOutboxAtLeast, start } from "./support.js"
import type { Backend } from "./TaskStorageSuite.js"

type Action =
  | { readonly _tag: "Accept"; readonly account: "acct_a" | "acct_b" }
  | { readonly _tag: "Claim"; readonly owner: string; readonly limit: number; readonly leaseMs: number }
  | {
    readonly _tag: "Step"
    readonly task: number
    readonly stale: boolean
    readonly running: boolean
    readonly inMs: number
  }
  | {
    readonly _tag: "Finish"
    readonly task: number
    readonly stale: boolean
    readonly outcome: "ok" | "fail" | "expire"
  }
  | { readonly _tag: "Cancel"; readonly task: number; readonly account: "acct_a" | "acct_b" }
  | { readonly _tag: "Advance"; readonly ms: number }
  | { readonly _tag: "Heartbeat"; readonly owner: string }
  | { readonly _tag: "ReleaseAll"; readonly owner: string }

const owner = FastCheck.constantFrom("w1", "w2", "w3")
const taskIndex = FastCheck.nat({ max: 11 })

const action: FastCheck.Arbitrary<Action> = FastCheck.oneof(
  FastCheck.record({
    _tag: FastCheck.constant("Accept" as const),
    account: FastCheck.constantFrom("acct_a" as const, "acct_b" as const)
  }),
  FastCheck.record({
    _tag: FastCheck.constant("Claim" as const),
    owner,
    limit: FastCheck.integer({ min: 1, max: 3 }),
    leaseMs: FastCheck.integer({ min: 1, max: 5000 })
  }),
  FastCheck.record({
    _tag: FastCheck.constant("Step" as const),
    task: taskIndex,
    stale: FastCheck.boolean(),
    running: FastCheck.boolean(),
    inMs: FastCheck.integer({ min: 0, max: 5000 })
  }),
  FastCheck.record({
    _tag: FastCheck.constant("Finish" as const),
    task: taskIndex,
    stale: FastCheck.boolean(),
    outcome: FastCheck.constantFrom("ok" as const, "fail" as const, "expire" as const)
  }),
  FastCheck.record({
    _tag: FastCheck.constant("Cancel" as const),
    task: taskIndex,
    account: FastCheck.constantFrom("acct_a" as const, "acct_b" as const)
  }),
  FastCheck.record({ _tag: FastCheck.constant("Advance" as const), ms: FastCheck.integer({ min: 1, max: 4000 }) }),
  FastCheck.record({ _tag: FastCheck.constant("Heartbeat" as const), owner }),
  FastCheck.record({ _tag: FastCheck.constant("ReleaseAll" as const), owner })
)

/** Registers the property for one backend. */
export const stateMachineProperty = (name: string, backend: Backend, numRuns: number) =>
  describe(`state machine: ${name}`, () => {
    it.live(`random interleavings keep every invariant (${numRuns} runs)`, () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.array(action, { minLength: 5, maxLength: 60 }), (actions) =>
            Effect.runPromise(
              Effect.scoped(Effect.suspend(() => {
                const billing = makeRecordingBilling()
                return Effect.zipRight(
                  TestClock.setTime(start),
                  check(actions, billing).pipe(Effect.provide(backend(billing.layer)))
                )
              })).pipe(Effect.provide(TestContext.TestContext))
            )),
          { numRuns }
        )
      ), { timeout: 120_000 })
  })

const check = (
  actions: ReadonlyArray<Action>,
  billing: ReturnType<typeof makeRecordingBilling>
) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage
    const ids: Array<string> = []
    const seen = new Map<string, TaskRecord>()
    const lastFence = new Map<string, number>()
    const read = (id: string) => Effect.map(storage.getById(id), Option.getOrThrow)

    for (const act of actions) {
      switch (act._tag) {
        case "Accept": {
          const now = yield* Clock.currentTimeMillis
          const task = newTask({ createdAt: now, accountId: act.account, deadlineAt: now + 20_000 })
          yield* storage.accept({ task, charge: chargeOf(task), idempotency: undefined })
          ids.push(task.id)
          break
        }
        case "Claim": {
          const claimed = yield* storage.claim(act.owner, act.limit, act.leaseMs)
          for (const t of claimed) lastFence.set(t.id, t.fence)
          break
        }
        case "Step":
        case "Finish":
        case "Cancel": {
          const id = ids[act.task % Math.max(1, ids.length)]
          if (id === undefined) break
          const current = yield* read(id)
          const fence = act._tag !== "Cancel" && act.stale ? current.fence - 1 : current.fence
          if (act._tag === "Step") {
            yield* storage.step(id, fence, {
              ...(act.running ? { status: "running" as const } : {}),
              nextRunAt: (yield* Clock.currentTimeMillis) + act.inMs
            })
          } else if (act._tag === "Finish") {
            yield* storage.finish(
              id,
              fence,
              act.outcome === "ok"
                ? { _tag: "Succeeded", result: [] }
                : act.outcome === "fail"
                ? { _tag: "Failed", error: { code: "PROVIDER_ERROR", message: "x" } }
                : { _tag: "Expired" }
            )
          } else {
            yield* storage.cancel(act.account, id)
          }
          break
        }
        case "Advance":
          yield* TestClock.adjust(act.ms)
          break
        case "Heartbeat":
          yield* storage.heartbeat(act.owner, 3000)
          break
        case "ReleaseAll":
          yield* storage.releaseAll(act.owner)
          break
      }

      // invariants after every action
      for (const id of ids) {
        const now = yield* read(id) // no lost task: every accepted task is still there
        const before = seen.get(id)
        if (before !== undefined) {
          if (isTerminal(before.status)) expect(now, `terminal task ${id} changed`).toEqual(before)
          if (now.status !== before.status) {
            expect(canMove(before.status, now.status), `${before.status} → ${now.status}`).toBe(true)
          }
          expect(now.fence).toBeGreaterThanOrEqual(before.fence)
        }
        const refunds = billing.ledger.refunds.filter((r) => r.taskId === id)
        expect(refunds.length).toBeLessThanOrEqual(1)
        expect(refunds.length === 1).toBe(isTerminal(now.status) && isRefunded(now.status))
        expect(now.refundedMicros).toBe(refunds.reduce((sum, r) => sum + r.amountMicros, 0))
        expect(now.refundedMicros).toBeLessThanOrEqual(now.chargedMicros)
        seen.set(id, now)
      }
      const terminal = [...seen.values()].filter((t) => isTerminal(t.status)).map((t) => t.id).sort()
      // one outbox entry per terminal task (read until they show: other suites' writes delay a PostgreSQL reader)
      const { entries: events } = yield* readOutboxAtLeast(storage, terminal.length, undefined, 10_000)
      expect(events.map((e) => e.taskId).sort()).toEqual(terminal)
    }
    expect(billing.ledger.charges.length).toBe(ids.length)
  })
