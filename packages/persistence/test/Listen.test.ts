/**
 * Wakeups between the threads of one process (`Listen.threadPoster`, `Listen.threadNotifications`), as SQLite's
 * task storage uses them for a server's worker thread: a post reaches the channel's listeners on another thread, and
 * only those of its channel.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Worker } from "node:worker_threads"
import * as Listen from "../src/Listen.js"

/** A thread that posts once on `channel` with a BroadcastChannel of its own, as another thread's poster does. */
const postFromThread = (channel: string) =>
  Effect.async<void>((resume) => {
    const worker = new Worker(
      `const c = new BroadcastChannel(${JSON.stringify(channel)}); c.postMessage(0); c.close()`,
      { eval: true }
    )
    worker.once("exit", () => resume(Effect.void))
  })

describe("Listen between threads", () => {
  it.scopedLive("a post on another thread wakes the channel's listeners, not another channel's", () =>
    Effect.gen(function*() {
      const channel = `listen-test-${Math.random()}`
      const woken = yield* Stream.runCollect(Stream.take(Listen.threadNotifications(channel), 2)).pipe(Effect.fork)
      const other = yield* Stream.runCollect(Listen.threadNotifications(`${channel}-other`)).pipe(Effect.fork)
      yield* Effect.sleep("50 millis")
      yield* postFromThread(channel)
      // a poster of this thread reaches listeners here too (another BroadcastChannel object)
      const post = yield* Listen.threadPoster(channel)
      yield* post
      const wakeups = yield* Fiber.join(woken).pipe(Effect.timeout("10 seconds"))
      expect(Chunk.size(wakeups)).toBe(2)
      expect(Option.isNone(yield* Fiber.poll(other))).toBe(true)
      yield* Fiber.interrupt(other)
    }))
})
