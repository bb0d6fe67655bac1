/**
 * Admission: while this node's workers fall behind, new tasks wait before they are accepted, so that a burst is
 * claimed as fast as it is accepted.
 *
 * A task's lag, as its client sees it, runs from `created_at`, when the client got the task's id. On a node whose
 * CPU is taken, accepting requests and running steps compete: left alone, a burst of requests is accepted faster
 * than its tasks are submitted, and every accepted task waits in the queue (and the jobs of the tasks already
 * running finish late: their polls wait too). The worker reports after each claim how late the oldest task it took
 * was (`claimed at − due at`, or 0 when it found nothing due; a task woken by its job's change is due from when the
 * worker heard it: `claimLateness` of the worker's schedule). Once that passes {@link AdmissionOptions.closeMs} the
 * gate shuts: a request that is about to create a task (generation or retry) waits, before its task is created,
 * until a claim finds the queue caught up again (late ≤ {@link AdmissionOptions.openMs}), or at most
 * {@link AdmissionOptions.maxWaitMs}. The waiting is back-pressure on the clients: their answers come later, the
 * tasks they get run at once. Nothing is refused, and reads, cancels and upstream callbacks never wait.
 *
 * Without an `Admission` (an API-only node: its tasks are claimed elsewhere; the engine used without workers)
 * requests never wait.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { performance } from "node:perf_hooks"
import { TaskReads } from "./TaskReads.js"

/**
 * Admission settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface AdmissionOptions {
  /** A claim this late (ms) shuts the gate. Default 200. */
  readonly closeMs?: number
  /** A claim at most this late (ms), or one that finds nothing due, opens it. Default 50. */
  readonly openMs?: number
  /** The longest a request waits at the shut gate (ms); `0` turns admission off. Default 5000. */
  readonly maxWaitMs?: number
  /**
   * The busiest the event loop may be (a share of its time, 0 to 1) for new tasks to go on at once: above it they
   * wait as at a shut gate, so that the node keeps room for the steps its tasks in flight will need (a burst's jobs
   * end together later, and finishing one costs more than accepting it). Default 1 (no limit); the server's 0.75.
   */
  readonly maxUtilization?: number
  /**
   * The utilization limit holds only while more tasks than this wait on their upstreams (`queued` or `running`, as
   * reported to {@link Gate.upstream}): only then will their ends come due together and need the room kept for
   * them; with fewer, a burst's finishes take less than the lateness that shuts the gate. Default: always (no
   * count needed); the server's 128.
   */
  readonly reserveAbove?: number
  /**
   * The event loop's utilization since the last call (0 to 1); default Node's `performance.eventLoopUtilization`.
   * Read at most every 100 ms, when a request comes to the gate and when a claim reports; smoothed.
   */
  readonly utilization?: () => number
}

/** The event loop's utilization since the last call (Node's measure). */
const eventLoopUtilization = (): () => number => {
  let last = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const window = performance.eventLoopUtilization(now, last)
    last = now
    return window.utilization
  }
}

/**
 * The gate: requests wait at it, the worker opens and shuts it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Gate {
  /** Goes on at once while the gate is open; else waits until it opens, at most `maxWaitMs`. */
  readonly admit: Effect.Effect<void>
  /** The worker's report after a claim: how late (ms) the oldest task it claimed was; 0 when none was due. */
  readonly report: (lateMs: number) => void
  /** Whether the gate is open now. */
  readonly isOpen: () => boolean
  /** Requests waiting at the gate now. */
  readonly waiting: () => number
  /** How many tasks wait on their upstreams now (see {@link AdmissionOptions.reserveAbove}). */
  readonly upstream: (tasks: number) => void
  /** Whether a request came to the gate since the last call (the count of tasks upstream is read only then). */
  readonly used: () => boolean
}

/**
 * This node's admission gate (see the module's header).
 *
 * @since 0.1.0
 * @category services
 */
export class Admission extends Context.Tag("@mediagate/engine/Admission")<Admission, Gate>() {}

/** The settings a gate takes when `options` leave them out (see {@link AdmissionOptions}). */
const defaults = { closeMs: 200, openMs: 50, maxWaitMs: 5000, maxUtilization: 1 } as const

/**
 * A gate with `options`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: AdmissionOptions = {}): Gate => {
  const closeMs = options.closeMs ?? defaults.closeMs
  const openMs = Math.min(options.openMs ?? defaults.openMs, closeMs)
  const maxWaitMs = options.maxWaitMs ?? defaults.maxWaitMs
  const maxUtilization = options.maxUtilization ?? defaults.maxUtilization
  const reserveAbove = options.reserveAbove ?? -1
  const measure = maxUtilization < 1 ? options.utilization ?? eventLoopUtilization() : undefined
  let open = true
  let upstream = 0
  let used = false
  /** Whether the event loop was busier than `maxUtilization` at the last reading (smoothed over two readings). */
  let busy = false
  let smoothed = 0
  let readAt = 0
  const read = () => {
    if (measure === undefined) return
    const now = Date.now()
    if (now - readAt < 100) return
    readAt = now
    smoothed = (smoothed + measure()) / 2
    busy = smoothed > maxUtilization && upstream > reserveAbove
  }
  // each waiting request's wake-up; it removes itself when it runs (opened, timed out or interrupted)
  const waiters = new Set<() => void>()
  const wait = Effect.async<void>((resume) => {
    const go = () => {
      waiters.delete(go)
      clearTimeout(timer)
      resume(Effect.void)
    }
    const timer = setTimeout(go, maxWaitMs)
    waiters.add(go)
    return Effect.sync(() => {
      waiters.delete(go)
      clearTimeout(timer)
    })
  })
  const release = () => {
    for (const go of [...waiters]) go()
  }
  /**
   * While requests wait only because the event loop is busy, it is read again every 100 ms (one timer for them all,
   * not kept alive for the process): they go on once it is not.
   */
  let recheck: ReturnType<typeof setTimeout> | undefined
  const watchLoad = () => {
    if (recheck !== undefined || measure === undefined) return
    recheck = setTimeout(() => {
      recheck = undefined
      if (waiters.size === 0) return
      read()
      if (open && !busy) return release()
      watchLoad()
    }, 100)
    recheck.unref?.()
  }
  return {
    admit: Effect.suspend(() => {
      used = true
      read()
      if ((open && !busy) || maxWaitMs <= 0) return Effect.void
      if (open) watchLoad()
      return wait
    }),
    report: (lateMs) => {
      read()
      if (lateMs > closeMs) open = false
      else if (lateMs <= openMs) open = true
      if (open && !busy && waiters.size > 0) release()
      else if (open && waiters.size > 0) watchLoad()
    },
    isOpen: () => open,
    waiting: () => waiters.size,
    upstream: (tasks) => {
      upstream = tasks
      if (upstream <= reserveAbove) busy = false
      if (open && !busy && waiters.size > 0) release()
    },
    used: () => {
      const answer = used
      used = false
      return answer
    }
  }
}

/**
 * A gate that never holds a request and passes each claim's report on to `report`: the workers' side of a gate kept
 * elsewhere (the production server on two threads: its worker thread's claims open and shut the API thread's gate).
 *
 * @since 0.1.0
 * @category constructors
 */
export const reporting = (report: (lateMs: number) => void): Gate => ({
  admit: Effect.void,
  report,
  isOpen: () => true,
  waiting: () => 0,
  upstream: () => {},
  used: () => false
})

/**
 * A gate with `options` as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: AdmissionOptions = {}): Layer.Layer<Admission> =>
  Layer.sync(Admission, () => make(options))

/**
 * A gate with `options` whose count of tasks waiting on their upstreams ({@link AdmissionOptions.reserveAbove}) is
 * read from the task storage (`TaskReads.overview`: every account's tasks `queued` or `running`) every 500 ms while
 * requests come to the gate. A read that fails keeps the last count.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCounted = (options: AdmissionOptions = {}): Layer.Layer<Admission, never, TaskReads> =>
  Layer.scoped(
    Admission,
    Effect.gen(function*() {
      const gate = make(options)
      // the count matters only to a gate that waits and limits the loop's utilization above a reserve
      const counted = options.reserveAbove !== undefined &&
        (options.maxUtilization ?? defaults.maxUtilization) < 1 && (options.maxWaitMs ?? defaults.maxWaitMs) > 0
      if (!counted) return gate
      const reads = yield* TaskReads
      const count = reads.overview.pipe(
        Effect.map(({ byStatus }) => gate.upstream(byStatus.queued + byStatus.running)),
        Effect.ignore
      )
      yield* Effect.forkScoped(Effect.forever(
        Effect.zipRight(Effect.sleep("500 millis"), Effect.suspend(() => gate.used() ? count : Effect.void))
      ))
      return gate
    })
  )

/**
 * Admission settings from Effect `Config`: `MEDIAGATE_ADMISSION_MAX_WAIT_MS` (default 5000; `0` turns admission off),
 * `MEDIAGATE_ADMISSION_LATE_MS` (default 200: the claim lateness that shuts the gate; it opens again at a quarter of
 * it), `MEDIAGATE_ADMISSION_MAX_UTILIZATION` (default 0.75: the event loop's busiest share for new tasks to go on
 * at once; `1`: no limit) and `MEDIAGATE_ADMISSION_RESERVE_ABOVE` (default 128: that limit holds while more tasks
 * than this wait on their upstreams).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<AdmissionOptions> = Config.all({
  maxWaitMs: Config.integer("MEDIAGATE_ADMISSION_MAX_WAIT_MS").pipe(
    Config.validate({ message: "must be from 0 to 60000", validation: (n) => n >= 0 && n <= 60_000 }),
    Config.withDefault(5000)
  ),
  closeMs: Config.integer("MEDIAGATE_ADMISSION_LATE_MS").pipe(
    Config.validate({ message: "must be from 1 to 60000", validation: (n) => n >= 1 && n <= 60_000 }),
    Config.withDefault(200)
  ),
  maxUtilization: Config.number("MEDIAGATE_ADMISSION_MAX_UTILIZATION").pipe(
    Config.validate({ message: "must be from 0.1 to 1", validation: (n) => n >= 0.1 && n <= 1 }),
    Config.withDefault(0.75)
  ),
  reserveAbove: Config.integer("MEDIAGATE_ADMISSION_RESERVE_ABOVE").pipe(
    Config.validate({ message: "must be from 0 to 1000000", validation: (n) => n >= 0 && n <= 1_000_000 }),
    Config.withDefault(128)
  )
}).pipe(Config.map(({ closeMs, maxUtilization, maxWaitMs, reserveAbove }) => ({
  closeMs,
  maxWaitMs,
  maxUtilization,
  reserveAbove,
  openMs: Math.floor(closeMs / 4)
})))

/**
 * The gate with its settings from Effect `Config`, counting the tasks upstream from the task storage
 * ({@link layerCounted}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Admission, ConfigError.ConfigError, TaskReads> = Layer.unwrapEffect(
  Effect.map(config, layerCounted)
)
