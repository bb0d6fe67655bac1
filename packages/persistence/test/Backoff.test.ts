import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Backoff from "../src/Backoff.js"

describe("Backoff", () => {
  it("delays double from the base up to the cap, jitter only shortens them", () => {
    assert.deepStrictEqual([1, 2, 3, 4, 6, 7, 100].map((n) => Backoff.delayMs(n)), [
      100,
      200,
      400,
      800,
      3200,
      5000,
      5000
    ])
    assert.strictEqual(Backoff.delayMs(3, { base: "1 second", cap: "2 seconds" }), 2000)
    assert.strictEqual(Backoff.delayMs(7, {}, 0.999), 3751)
  })

  it.effect("a loop survives failures and defects, backs off while they last and resets after a success", () =>
    Effect.gen(function*() {
      // rounds 1-3 fail, 4 dies, 5 succeeds, 6 fails, then all succeed
      const times: Array<number> = []
      let round = 0
      const body = Effect.gen(function*() {
        round++
        times.push(yield* TestClock.currentTimeMillis)
        if (round <= 3 || round === 6) return yield* Effect.fail("storage unavailable")
        if (round === 4) return yield* Effect.die(new Error("a defect"))
        if (round > 6) yield* Effect.sleep("1 second")
      })
      const fiber = yield* Effect.fork(Backoff.loop("test loop", body, { jitter: 0 }))
      yield* TestClock.adjust("3 seconds")
      // 0 (fail) +100 (fail) +200 (fail) +400 (die) +800 (ok) at once (fail) +100 ...
      assert.deepStrictEqual(times.slice(0, 7), [0, 100, 300, 700, 1500, 1500, 1600])
      assert.isNull(fiber.unsafePoll())
      yield* Fiber.interrupt(fiber)
    }))
})
