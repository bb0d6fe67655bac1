/**
 * Group commit: calls waiting while a batch runs join the next one, answers go back to their callers in order, and
 * with `gather` the calls of one turn of the event loop (requests that arrived together) make one batch even when
 * every batch runs synchronously; with `partition`, one partition's calls are never in two batches at once while other
 * partitions' batches run beside them.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as GroupCommit from "../src/GroupCommit.js"

/** A batcher of numbers (doubled; 13 fails) recording the batches it ran; the run is synchronous, as on SQLite. */
const recording = (options?: Parameters<typeof GroupCommit.make>[2]) =>
  Effect.gen(function*() {
    const batches: Array<ReadonlyArray<number>> = []
    const call = yield* GroupCommit.make(64, (inputs: ReadonlyArray<number>) =>
      Effect.sync(() => {
        batches.push(inputs)
        return inputs.map((n) => n === 13 ? Exit.fail(`unlucky ${n}`) : Exit.succeed(n * 2))
      }), options)
    return { batches, call }
  })

/** Calls made from separate I/O callbacks of one turn of the event loop (as the requests of one read of sockets). */
const fromCallbacks = <A, E>(count: number, call: (n: number) => Effect.Effect<A, E>) =>
  Effect.async<ReadonlyArray<Exit.Exit<A, E>>>((resume) => {
    const exits: Array<Exit.Exit<A, E>> = []
    for (let n = 1; n <= count; n++) {
      setImmediate(() =>
        Effect.runCallback(call(n), {
          onExit: (exit) => {
            exits[n - 1] = exit
            if (exits.filter((e) => e !== undefined).length === count) resume(Effect.succeed(exits))
          }
        })
      )
    }
  })

describe("GroupCommit", () => {
  it.live("answers each call with its own exit, in the order of the calls", () =>
    Effect.gen(function*() {
      const { call } = yield* recording()
      const exits = yield* Effect.forEach([1, 13, 3], (n) => Effect.exit(call(n)), { concurrency: "unbounded" })
      expect(exits).toEqual([Exit.succeed(2), Exit.fail("unlucky 13"), Exit.succeed(6)])
    }).pipe(Effect.scoped))

  it.live("with gather, the calls of one turn of the event loop make one batch", () =>
    Effect.gen(function*() {
      const { batches, call } = yield* recording({ gather: true })
      const exits = yield* fromCallbacks(10, call)
      expect(exits).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => Exit.succeed(n * 2)))
      expect(batches).toEqual([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
    }).pipe(Effect.scoped))

  it.live("without gather, a synchronous batch takes only the call that woke it", () =>
    Effect.gen(function*() {
      const { batches, call } = yield* recording()
      yield* fromCallbacks(10, call)
      expect(batches.length).toBeGreaterThan(1)
      expect(batches.flat()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    }).pipe(Effect.scoped))

  it.live("with partition, a batch holds one partition's calls, and a partition runs one batch at a time", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const running = new Map<number, number>()
      let mostOfOnePartition = 0
      let mostAtOnce = 0
      const call = yield* GroupCommit.make(64, (inputs: ReadonlyArray<number>) => {
        const key = inputs[0]! % 3
        return Effect.acquireUseRelease(
          Effect.sync(() => {
            batches.push(inputs)
            running.set(key, (running.get(key) ?? 0) + 1)
            mostOfOnePartition = Math.max(mostOfOnePartition, running.get(key)!)
            mostAtOnce = Math.max(mostAtOnce, [...running.values()].reduce((a, b) => a + b, 0))
          }),
          () => Effect.as(Effect.sleep("5 millis"), inputs.map((n) => Exit.succeed(n * 2))),
          () => Effect.sync(() => running.set(key, running.get(key)! - 1))
        )
      }, { fibers: 3, partition: (n) => n % 3 })
      const inputs = Array.from({ length: 60 }, (_, i) => i + 1)
      const exits = yield* Effect.forEach(inputs, (n) => Effect.exit(call(n)), { concurrency: "unbounded" })
      expect(exits).toEqual(inputs.map((n) => Exit.succeed(n * 2)))
      for (const batch of batches) expect(new Set(batch.map((n) => n % 3)).size).toBe(1)
      expect(batches.flat().sort((a, b) => a - b)).toEqual(inputs)
      expect(mostOfOnePartition).toBe(1)
      // the partitions' batches ran beside each other
      expect(mostAtOnce).toBe(3)
    }).pipe(Effect.scoped))

  it.live("a partition larger than the fibers shares a queue: still one batch at a time per queue", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const call = yield* GroupCommit.make(64, (inputs: ReadonlyArray<number>) =>
        Effect.sync(() => {
          batches.push(inputs)
          return inputs.map((n) => Exit.succeed(n))
        }), { fibers: 2, partition: (n) => n })
      const inputs = [1, 2, 3, 4, 5, 6, -7]
      const exits = yield* Effect.forEach(inputs, (n) => Effect.exit(call(n)), { concurrency: "unbounded" })
      expect(exits).toEqual(inputs.map((n) => Exit.succeed(n)))
      // partitions 1, 3, 5 and -7 share a queue (odd), 2, 4, 6 the other
      for (const batch of batches) expect(new Set(batch.map((n) => Math.abs(n) % 2)).size).toBe(1)
    }).pipe(Effect.scoped))
})
