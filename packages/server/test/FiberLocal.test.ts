/**
 * `whileRunning` (internal/fiberLocal.ts): the envelope's cheaper `Effect.locally` for its request-wide values.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as FiberLocal from "../src/internal/fiberLocal.js"

const ref = FiberRef.unsafeMake("outside")

describe("FiberLocal.whileRunning", () => {
  it.effect("the effect sees the changed value; after its success the value is set back", () =>
    Effect.gen(function*() {
      const seen = yield* FiberLocal.whileRunning(ref, (current) => `${current}+inside`, FiberRef.get(ref))
      expect(seen).toBe("outside+inside")
      expect(yield* FiberRef.get(ref)).toBe("outside")
    }))

  it.effect("after a failure or a defect the value is set back and the cause passed on", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.exit(FiberLocal.whileRunning(ref, () => "inside", Effect.fail("no")))
      expect(failed).toEqual(Exit.fail("no"))
      expect(yield* FiberRef.get(ref)).toBe("outside")
      const died = yield* Effect.exit(FiberLocal.whileRunning(ref, () => "inside", Effect.die("boom")))
      expect(died).toEqual(Exit.die("boom"))
      expect(yield* FiberRef.get(ref)).toBe("outside")
    }))

  it.effect("nested changes unwind in order, and a change made inside is undone with the outer one", () =>
    Effect.gen(function*() {
      const seen = yield* FiberLocal.whileRunning(
        ref,
        () => "outer",
        Effect.flatMap(
          FiberLocal.whileRunning(ref, () => "inner", FiberRef.get(ref)),
          (inner) =>
            Effect.map(
              Effect.zipRight(FiberRef.set(ref, "changed inside"), FiberRef.get(ref)),
              (after) => [inner, after]
            )
        )
      )
      expect(seen).toEqual(["inner", "changed inside"])
      expect(yield* FiberRef.get(ref)).toBe("outside")
    }))
})
