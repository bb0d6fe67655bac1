/**
 * Memory given back once a burst is over: the production server's threads each watch their own event loop and V8
 * heap, and when the heap has grown well past what it was after the last collection while the loop has gone quiet,
 * they ask V8 for the collection it makes under memory pressure (`HeapProfiler.collectGarbage` through an in-process
 * inspector session: every space collected and compacted, and the freed pages handed back to the system).
 *
 * Why: V8 leaves the garbage of a burst in the heap until its memory reducer decides the isolate is idle, 10 to 40
 * s later and sometimes not at all while a little work goes on. A burst of tasks grows each thread's heap by 20 to
 * 30 MB over its live data. The collection costs the thread 30 to 150 ms, run only after `quietWindows` seconds in
 * which its loop was busy less than `busyBelow` of the time, so no request waits behind it unless it arrives in that
 * instant. `MEDIAGATE_IDLE_COLLECTION=false` turns it off (docs/operations.md "Memory").
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Session as InspectorSession } from "node:inspector"
import { performance } from "node:perf_hooks"
import { getHeapStatistics } from "node:v8"

/** When a thread collects. */
export interface IdleCollectionOptions {
  /** How much the heap (V8's committed size) must have grown since the last collection. Default 16 MB. */
  readonly growthBytes?: number
  /** How many windows in a row the loop must have been quiet. Default 2. */
  readonly quietWindows?: number
  /** A window is quiet when the loop was busy less than this share of it. Default 0.05. */
  readonly busyBelow?: number
  /** The window, in ms. Default 1,000. */
  readonly windowMs?: number
  /** The collection (default: V8's collection under memory pressure, through the inspector); answers when done. */
  readonly collect?: () => Promise<void>
  /** The heap's committed size in bytes (default: V8's `total_heap_size`). */
  readonly heapBytes?: () => number
  /** The loop's busy share since the last call (default: `performance.eventLoopUtilization`). */
  readonly utilization?: () => number
}

/**
 * V8's collection under memory pressure on this thread's isolate, through an in-process inspector session (no port
 * is opened). Answers false where Node has no inspector (built without it).
 */
export const collectUnderPressure = async (): Promise<boolean> => {
  let Session: typeof InspectorSession
  try {
    Session = (await import("node:inspector")).Session
  } catch {
    return false
  }
  const session = new Session()
  session.connect()
  try {
    await new Promise<void>((resolve, reject) =>
      session.post("HeapProfiler.collectGarbage", (error) => error === null ? resolve() : reject(error))
    )
    return true
  } finally {
    session.disconnect()
  }
}

/** The loop's busy share since the last call of the answered function. */
const loopUtilization = () => {
  let last = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const share = performance.eventLoopUtilization(now, last).utilization
    last = now
    return share
  }
}

/**
 * Starts watching this thread (a timer that does not keep the process alive); answers how to stop. The first quiet
 * stretch after the start collects too (the start's own garbage), whatever the heap's growth.
 */
export const start = (options: IdleCollectionOptions = {}): () => void => {
  const growth = options.growthBytes ?? 16 * 1024 * 1024
  const quietWindows = options.quietWindows ?? 2
  const busyBelow = options.busyBelow ?? 0.05
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_heap_size)
  const utilization = options.utilization ?? loopUtilization()
  const collect = options.collect ?? (async () => {
    if (!(await collectUnderPressure())) clearInterval(timer)
  })
  /** The heap's size after the last collection (V8's own included): undefined until the first. */
  let baseline: number | undefined
  let quiet = 0
  let collecting = false
  const timer = setInterval(() => {
    const busy = utilization()
    if (collecting) return
    const size = heapBytes()
    if (baseline !== undefined && size < baseline) baseline = size
    quiet = busy < busyBelow ? quiet + 1 : 0
    if (quiet < quietWindows || (baseline !== undefined && size < baseline + growth)) return
    collecting = true
    collect().catch(() => undefined).finally(() => {
      collecting = false
      quiet = 0
      baseline = heapBytes()
      // the collection's own time is not the loop's work
      utilization()
    })
  }, options.windowMs ?? 1_000)
  timer.unref()
  return () => clearInterval(timer)
}

/** Whether the server's threads collect once idle after a burst (`MEDIAGATE_IDLE_COLLECTION`, default true). */
export const enabled: Config.Config<boolean> = Config.boolean("MEDIAGATE_IDLE_COLLECTION").pipe(
  Config.withDefault(true)
)

/** {@link start} for the scope's life when {@link enabled}. */
export const scoped: Effect.Effect<void, ConfigError.ConfigError, Scope.Scope> = Effect.flatMap(
  enabled,
  (on) =>
    on ? Effect.asVoid(Effect.acquireRelease(Effect.sync(() => start()), (stop) => Effect.sync(stop))) : Effect.void
)
