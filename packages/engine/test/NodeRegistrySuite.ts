/**
 * Conformance of the `NodeRegistry` port (leases extended by heartbeats and handed back): every task storage (memory,
 * SQLite, PostgreSQL) must pass it; `TaskStorageSuite.ts` registers it with the other ports' suites.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { TaskStorage } from "../src/TaskStorage.js"
import { type Backend, newTask, now, runOn } from "./support.js"

/** Registers the suite for one backend. */
export const registrySuite = (name: string, backend: Backend) =>
  describe(`NodeRegistry conformance: ${name}`, () => {
    const run = runOn(backend)

    it.effect("heartbeats extend leases; releaseAll hands them back, due at once", () =>
      run(() =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          for (let i = 0; i < 3; i++) {
            yield* storage.accept({
              task: newTask({ createdAt: yield* now }),
              charge: undefined,
              idempotency: undefined
            })
          }
          yield* storage.claim("w1", 2, 10_000)
          yield* TestClock.adjust(8000)
          expect(yield* storage.heartbeat("w1", 10_000)).toBe(2)
          yield* TestClock.adjust(8000)
          expect(yield* storage.claim("w2", 5, 10_000)).toHaveLength(1)
          expect(yield* storage.releaseAll("w1")).toBe(2)
          const reclaimed = yield* storage.claim("w2", 5, 10_000)
          expect(reclaimed).toHaveLength(2)
          expect(reclaimed.every((t) => t.fence === 2)).toBe(true)
        })
      ))
  })
