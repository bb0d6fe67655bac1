/**
 * Workers: claim due tasks with a lease and run one short step each (submit, poll, or finish), then let go.
 *
 * A task waiting on its upstream holds no worker (decisions.md §3): after a submit or a poll the step records what
 * it learned and when the task is next due, and releases the lease. So `concurrency` bounds the steps running at
 * once, not the tasks in flight, and one process carries tens of thousands of tasks.
 *
 * Wake-ups: an accepted task, a step that made a task due, or an upstream callback (`Upstream.changes`) wakes the
 * dispatcher at once (PostgreSQL `NOTIFY` across processes); polling `nextDueAt` is the backstop. A worker that
 * dies leaves leases that run out; another worker then claims the task with a newer fence and continues from the
 * stored upstream job id.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { hostname } from "node:os"
import * as Ids from "@mediagate/persistence/Ids"
import type { Outcome, TaskRecord } from "./TaskRecord.js"
import { idempotencyWindowMs } from "./TaskService.js"
import { TaskStorage } from "./TaskStorage.js"
import { type JobState, Upstream, type UpstreamError } from "./Upstream.js"

/** Worker settings. */
export interface WorkerOptions {
  /** Steps one process runs at once; `0` runs no worker (an API-only node). Default 32. */
  readonly concurrency?: number
  /** Lease of a claimed task. Default 30 s. */
  readonly leaseMs?: number
  /** Longest idle wait before looking for due work again (the backstop). Default 1 s. */
  readonly idleMs?: number
  /**
   * Delay before the n-th upstream poll of a task (n from 0). Default: {@link defaultPollDelayMs}, or
   * {@link safetyNetPollDelayMs} when the upstream notifies every change.
   */
  readonly pollDelayMs?: (polls: number, task: TaskRecord) => number
  /** Delay before retrying a failed upstream call. Default 2 s × 2ⁿ, at most 60 s. */
  readonly retryDelayMs?: (attempt: number) => number
  /** How long shutdown waits for running steps before releasing their leases. Default 10 s. */
  readonly shutdownGraceMs?: number
  /** This worker's name in leases. Default `<host>:<pid>:<ulid>`. */
  readonly owner?: string
}

/**
 * Default poll schedule: the first poll when the task is expected to be done (80% of its estimate, 1 to 30 s),
 * then 1 s, 1.5 s, 2.25 s, ... at most 15 s.
 */
export const defaultPollDelayMs = (polls: number, task: TaskRecord): number =>
  polls === 0
    ? Math.min(30_000, Math.max(1000, Math.round(task.estimatedSeconds * 800)))
    : Math.min(15_000, Math.round(1000 * 1.5 ** (polls - 1)))

/** Poll schedule when the upstream reports every change: a safety net of 10 s, 20 s, ... at most 60 s. */
export const safetyNetPollDelayMs = (polls: number): number => Math.min(60_000, 10_000 * 2 ** polls)

/** Default retry backoff after a failed upstream call: 2 s, 4 s, ... at most 60 s. */
export const defaultRetryDelayMs = (attempt: number): number => Math.min(60_000, 2000 * 2 ** attempt)

/** Runs one step of a claimed task. Exported for tests; the worker runs it for every claim. */
export const runStep = (task: TaskRecord, options: Required<Pick<WorkerOptions, "pollDelayMs" | "retryDelayMs">>) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage
    const upstream = yield* Upstream
    const now = yield* Clock.currentTimeMillis
    const finish = (outcome: Outcome) => Effect.asVoid(storage.finish(task.id, task.fence, outcome))

    if (now >= task.deadlineAt) {
      if (task.upstreamJobId !== null) yield* upstream.cancel(task, task.upstreamJobId)
      return yield* finish({ _tag: "Expired" })
    }

    const onUpstreamError = (error: UpstreamError) =>
      error.retryable
        ? Effect.asVoid(storage.step(task.id, task.fence, {
          nextRunAt: now + options.retryDelayMs(task.polls),
          polled: true
        }))
        : finish({ _tag: "Failed", error: { code: error.code ?? "PROVIDER_ERROR", message: error.message } })

    if (task.upstreamJobId === null) {
      const submitted = yield* Effect.either(upstream.submit(task))
      if (submitted._tag === "Left") return yield* onUpstreamError(submitted.left)
      const jobId = submitted.right.jobId
      const recorded = yield* Effect.either(storage.step(task.id, task.fence, {
        upstreamJobId: jobId,
        nextRunAt: now + options.pollDelayMs(0, task),
        ...(submitted.right.charges === undefined ? {} : { charges: submitted.right.charges })
      }))
      if (recorded._tag === "Left") {
        const error = recorded.left
        if (error._tag === "PersistenceError") return yield* Effect.fail(error)
        // the account cannot pay what the task turned out to cost: the job is not wanted, the task fails (refunded)
        yield* upstream.cancel(task, jobId)
        return yield* finish({ _tag: "Failed", error: { code: error.code, message: error.message } })
      }
      // cancelled (or taken over) while submitting: the job is nobody's now
      if (!recorded.right) yield* upstream.cancel(task, jobId)
      return
    }

    const polled = yield* Effect.either(upstream.poll(task, task.upstreamJobId))
    if (polled._tag === "Left") return yield* onUpstreamError(polled.left)
    const state: JobState = polled.right
    const next = now + options.pollDelayMs(task.polls + 1, task)
    switch (state._tag) {
      case "Queued":
        return yield* Effect.asVoid(storage.step(task.id, task.fence, { nextRunAt: next, polled: true }))
      case "Running":
        return yield* Effect.asVoid(storage.step(task.id, task.fence, {
          status: "running",
          progress: Math.max(0, Math.min(99, state.progress)),
          nextRunAt: next,
          polled: true
        }))
      case "Succeeded":
        return yield* finish({ _tag: "Succeeded", result: state.result })
      case "Failed":
        return yield* finish({ _tag: "Failed", error: { code: state.code, message: state.message } })
    }
  })

/** Runs the worker until the scope closes. Needs the storage and the upstream. */
export const run = (options: WorkerOptions = {}) =>
  Effect.gen(function*() {
    const concurrency = options.concurrency ?? 32
    if (concurrency <= 0) return
    const storage = yield* TaskStorage
    const upstream = yield* Upstream
    const leaseMs = options.leaseMs ?? 30_000
    const idleMs = options.idleMs ?? 1000
    const owner = options.owner ?? `${hostname()}:${process.pid}:${Ids.ulid()}`
    const stepOptions = {
      pollDelayMs: options.pollDelayMs ?? (upstream.notifiesChanges ? safetyNetPollDelayMs : defaultPollDelayMs),
      retryDelayMs: options.retryDelayMs ?? defaultRetryDelayMs
    }
    const pokes = yield* Queue.sliding<void>(1)
    const poke = Queue.offer(pokes, undefined)
    const steps = yield* FiberSet.make<void, never>()
    let running = 0

    yield* Effect.forkScoped(Stream.runForEach(storage.wakeups, () => poke))
    // upstream callbacks, batched: a burst of finished jobs costs one storage write
    yield* Effect.forkScoped(
      upstream.changes.pipe(
        Stream.groupedWithin(512, Duration.millis(5)),
        Stream.runForEach((ids) =>
          storage.markDue([...ids]).pipe(Effect.catchAll((error) => Effect.logWarning("markDue failed", error)))
        )
      )
    )
    yield* Effect.forkScoped(
      storage.heartbeat(owner, leaseMs).pipe(
        Effect.catchAll((error) => Effect.logWarning("heartbeat failed", error)),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(100, Math.floor(leaseMs / 3)))))
      )
    )

    // a failed step hands its task back (due after a retry delay), trying until storage answers, so that the
    // heartbeat does not keep an orphaned lease alive
    const handBack = (task: TaskRecord) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        storage.step(task.id, task.fence, { nextRunAt: now + stepOptions.retryDelayMs(0), polled: true })).pipe(
          Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.upTo(Duration.millis(leaseMs)))),
          Effect.ignore
        )

    const step = (task: TaskRecord) =>
      runStep(task, stepOptions).pipe(
        Effect.provideService(TaskStorage, storage),
        Effect.provideService(Upstream, upstream),
        Effect.catchAllCause((cause) =>
          Effect.zipRight(Effect.logError(`step of ${task.id} failed`, cause), handBack(task))
        ),
        Effect.withSpan("Worker.step", { attributes: { taskId: task.id, status: task.status } }),
        Effect.ensuring(Effect.zipRight(Effect.sync(() => running--), poke))
      )

    const idle = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = yield* storage.nextDueAt.pipe(Effect.orElseSucceed(() => Option.none<number>()))
      const wait = Option.match(due, { onNone: () => idleMs, onSome: (at) => Math.min(idleMs, Math.max(0, at - now)) })
      if (wait > 0) yield* Effect.race(Queue.take(pokes), Effect.sleep(Duration.millis(wait)))
    })

    const dispatch = Effect.gen(function*() {
      const free = concurrency - running
      if (free <= 0) return yield* Queue.take(pokes)
      const claimed = yield* storage.claim(owner, free, leaseMs).pipe(
        Effect.catchAll((error) => Effect.as(Effect.logError("claim failed", error), [] as ReadonlyArray<TaskRecord>))
      )
      for (const task of claimed) {
        running++
        yield* FiberSet.run(steps, step(task))
      }
      if (claimed.length < free) yield* idle
    })

    // housekeeping: forget idempotency records past their window
    yield* Effect.forkScoped(
      Effect.flatMap(Clock.currentTimeMillis, (now) => storage.pruneIdempotency(now - idempotencyWindowMs)).pipe(
        Effect.catchAll((error) => Effect.logWarning("idempotency pruning failed", error)),
        Effect.repeat(Schedule.spaced(Duration.minutes(10)))
      )
    )

    const dispatcher = yield* Effect.forkScoped(Effect.forever(dispatch))

    // graceful shutdown: stop claiming, let running steps finish (up to the grace period), hand back leases
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(dispatcher)
        // finalizers run uninterruptibly: the wait must be made interruptible for the grace period to cut it short
        yield* Effect.interruptible(FiberSet.awaitEmpty(steps)).pipe(
          Effect.timeout(Duration.millis(options.shutdownGraceMs ?? 10_000)),
          Effect.ignore
        )
        yield* FiberSet.clear(steps)
        const released = yield* storage.releaseAll(owner).pipe(Effect.orElseSucceed(() => 0))
        if (released > 0) yield* Effect.logInfo(`worker ${owner} released ${released} leases`)
      })
    )
    yield* Effect.logDebug(`worker ${owner} started (concurrency ${concurrency})`)
  })

/** Worker settings from Effect `Config` (decisions.md §10): `MEDIAGATE_WORKER_CONCURRENCY` (default 32). */
export const config: Config.Config<WorkerOptions> = Config.all({
  concurrency: Config.integer("MEDIAGATE_WORKER_CONCURRENCY").pipe(
    Config.withDefault(32),
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 })
  )
})

/** The worker with its settings from Effect `Config`. */
export const layerConfig = (overrides: WorkerOptions = {}): Layer.Layer<never, ConfigError.ConfigError, TaskStorage | Upstream> =>
  Layer.unwrapEffect(Effect.map(config, (options) => layer({ ...options, ...overrides })))

/** The worker as a layer: it runs while the layer is alive. */
export const layer = (options: WorkerOptions = {}): Layer.Layer<never, never, TaskStorage | Upstream> =>
  Layer.scopedDiscard(run(options))
