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

/** A watcher on a scripted heap and loop, counting its collections. */
const scripted = () => {
  const state = { heap: 40 * MB, busy: 0, collections: 0, afterCollection: 30 * MB }
  const stop = IdleCollection.start({
    windowMs: 5,
    quietWindows: 2,
    growthBytes: 16 * MB,
    heapBytes: () => state.heap,
    utilization: () => state.busy,
    collect: async () => {
      state.collections++
      state.heap = state.afterCollection
    }
  })
  return { state, stop }
}

describe("idle collection", () => {
  it("collects once the loop is quiet after the start, then only after the heap grew by the threshold", async () => {
    const { state, stop } = scripted()
    try {
      await sleep(60)
      expect(state.collections).toBe(1)
      // grown, but less than the threshold past the collection's 30 MB
      state.heap = 45 * MB
      await sleep(60)
      expect(state.collections).toBe(1)
      state.heap = 47 * MB
      await sleep(60)
      expect(state.collections).toBe(2)
    } finally {
      stop()
    }
  })

  it("waits while the loop is busy, and collects once it has been quiet for the windows asked", async () => {
    const { state, stop } = scripted()
    state.busy = 0.5
    try {
      await sleep(60)
      expect(state.collections).toBe(0)
      state.busy = 0.01
      await sleep(60)
      expect(state.collections).toBe(1)
    } finally {
      stop()
    }
  })

  it("counts from the smaller size when V8 shrank the heap itself", async () => {
    const { state, stop } = scripted()
    try {
      await sleep(60)
      expect(state.collections).toBe(1)
      // V8's own memory reducer took the heap to 20 MB: 16 MB more than that is growth
      state.heap = 20 * MB
      await sleep(30)
      state.heap = 37 * MB
      await sleep(60)
      expect(state.collections).toBe(2)
    } finally {
      stop()
    }
  })

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
