/**
 * Memory given back once a burst is over (`internal/idleCollection.ts`): a thread collects when its loop has been
 * quiet for the windows asked and its heap has grown past the last collection's size; V8's collection under memory
 * pressure hands the heap's free pages back.
 */
import { describe, expect, it } from "@effect/vitest"
import { getHeapStatistics } from "node:v8"
import * as IdleCollection from "../src/internal/idleCollection.js"

const MB = 1024 * 1024
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A scripted heap and loop, and the collections the watcher made. */
interface State {
  heap: number
  busy: number
  collections: number
  /** Resolves once the watcher has looked `n` more times (its windows, whatever the machine's load). */
  windows: (n: number) => Promise<void>
}

/** Runs `body` with a watcher on a scripted heap and loop, stopped afterwards. */
const scripted = async (body: (state: State) => Promise<void>) => {
  let looked = 0
  const state: State = {
    heap: 40 * MB,
    busy: 0,
    collections: 0,
    windows: async (n) => {
      const until = looked + n
      while (looked < until) await sleep(5)
    }
  }
  const stop = IdleCollection.start({
    windowMs: 5,
    quietWindows: 2,
    growthBytes: 16 * MB,
    heapBytes: () => state.heap,
    utilization: () => {
      looked++
      return state.busy
    },
    collect: async () => {
      state.collections++
      state.heap = 30 * MB
    }
  })
  try {
    await body(state)
  } finally {
    stop()
  }
}

/** Sets the heap to `heap` (when given), waits six of the watcher's windows and checks the collections so far. */
const afterSixWindows = async (state: State, heap: number | undefined, collections: number) => {
  if (heap !== undefined) state.heap = heap
  await state.windows(6)
  expect(state.collections).toBe(collections)
}

describe("idle collection", () => {
  it("collects once the loop is quiet after the start, then only after the heap grew by the threshold", () =>
    scripted(async (state) => {
      await afterSixWindows(state, undefined, 1)
      // grown, but less than the threshold past the collection's 30 MB
      await afterSixWindows(state, 45 * MB, 1)
      await afterSixWindows(state, 47 * MB, 2)
    }))

  it("waits while the loop is busy, and collects once it has been quiet for the windows asked", () =>
    scripted(async (state) => {
      state.busy = 0.5
      await state.windows(6)
      expect(state.collections).toBe(0)
      state.busy = 0.01
      await state.windows(6)
      expect(state.collections).toBe(1)
    }))

  it("counts from the smaller size when V8 shrank the heap itself", () =>
    scripted(async (state) => {
      await afterSixWindows(state, undefined, 1)
      // V8's own memory reducer took the heap to 20 MB: 16 MB more than that is growth
      state.heap = 20 * MB
      await state.windows(3)
      await afterSixWindows(state, 37 * MB, 2)
    }))

  it("gives a burst's garbage back to the system", async () => {
    let kept: Array<unknown> = []
    for (let round = 0; round < 100; round++) {
      const junk = Array.from({ length: 20_000 }, (_, i) => ({ i, text: `garbage ${round} ${i}` }))
      kept = [junk.length]
    }
    const before = getHeapStatistics().total_heap_size
    expect(await IdleCollection.collectUnderPressure()).toBe(true)
    const after = getHeapStatistics().total_heap_size
    expect(kept).toEqual([20_000])
    expect(after).toBeLessThan(before)
    expect(before - after).toBeGreaterThan(4 * MB)
  })
})
