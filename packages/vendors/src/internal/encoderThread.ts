/**
 * The thread that encodes the simulated upstream's clips (`videoEncoder.ts`), as the renderer (`Media.ts`) uses it:
 * started when a clip is asked for, one clip at a time process-wide, ended {@link encoderIdleMillis} after its last
 * clip.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { Worker } from "node:worker_threads"
import type { EncoderReply } from "./videoEncoder.js"
import type { VideoFrames } from "./videoFrames.js"

/**
 * The encoder thread's module: the built `.js` beside this one; when this module runs from its TypeScript source
 * (the test suites), the `.ts` source through tsx (a development dependency).
 */
const encoderWorker = (): Worker => {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./videoEncoder.js", import.meta.url))
  const source = new URL("./videoEncoder.ts", import.meta.url).href
  return new Worker(
    `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}) })`,
    {
      eval: true
    }
  )
}

/**
 * How long the encoder thread outlives its last clip. The renderer caches clips and a burst of tasks asks for a few
 * sizes, so the thread is usually started once per burst and its memory handed back soon after.
 */
export const encoderIdleMillis = 1000

/** The encoder thread while it is up, and the timer that ends it once idle. */
let encoderThread: Worker | undefined
let encoderIdle: ReturnType<typeof setTimeout> | undefined

/** Starts the encoder thread; one that fails or exits while idle is forgotten (an encoding hears of it itself). */
const startEncoderThread = (): Worker => {
  const thread = encoderWorker()
  thread.on("error", () => undefined).once("exit", () => {
    if (encoderThread === thread) encoderThread = undefined
  })
  return thread
}

const stopEncoderThread = (thread: Worker) => {
  if (encoderThread === thread) encoderThread = undefined
  void thread.terminate()
}

/** One encoding at a time, process-wide: one thread encodes them in turn. */
const encoderLock = Effect.unsafeMakeSemaphore(1)

/**
 * Encodes a clip on the encoder thread (started when needed). While it runs the thread keeps the process alive;
 * idle, it does not. An interrupted encoding ends the thread (the next one starts another). A failure of the
 * encoder or of its thread is a defect, as any other failure to render.
 */
export const encode = (video: VideoFrames): Effect.Effect<Uint8Array> =>
  encoderLock.withPermits(1)(Effect.async<Uint8Array>((resume) => {
    if (encoderIdle !== undefined) clearTimeout(encoderIdle)
    encoderIdle = undefined
    const thread = encoderThread ??= startEncoderThread()
    thread.ref()
    const detach = () => thread.off("message", onMessage).off("error", onError).off("exit", onExit)
    const settle = (outcome: Effect.Effect<Uint8Array>) => {
      detach()
      resume(outcome)
    }
    const onMessage = (reply: EncoderReply) => {
      thread.unref()
      encoderIdle = setTimeout(() => stopEncoderThread(thread), encoderIdleMillis)
      encoderIdle.unref()
      settle(
        "bytes" in reply ? Effect.succeed(reply.bytes) : Effect.dieMessage(`video encoding failed: ${reply.error}`)
      )
    }
    const onError = (error: Error) => {
      stopEncoderThread(thread)
      settle(Effect.die(error))
    }
    const onExit = (code: number) => {
      settle(Effect.dieMessage(`the video encoder's thread exited (code ${code}) during an encoding`))
    }
    thread.on("message", onMessage).on("error", onError).on("exit", onExit)
    thread.postMessage(video)
    return Effect.sync(() => {
      detach()
      stopEncoderThread(thread)
    })
  }))

/** Whether the encoder thread is up (tests). */
export const isRunning = (): boolean => encoderThread !== undefined
