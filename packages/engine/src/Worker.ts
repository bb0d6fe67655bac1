/**
 * Workers: claim due tasks with a lease and run one short step each (submit, poll, or finish), then let go.
 *
 * A task waiting on its upstream holds no worker (decisions.md §3): after a submit or a poll the step records what
 * it learned and when the task is next due, and releases the lease. So `concurrency` bounds the steps running at
 * once, not the tasks in flight, and one process carries tens of thousands of tasks.
 *
 * Wake-ups: an accepted task or an upstream callback (`Upstream.changes`) wakes the dispatcher at once (PostgreSQL
 * `NOTIFY` across processes); a step of this worker that schedules its task before the dispatcher's next look wakes
 * it too. Asking `nextDueAt` (at most every `idle`, and every 100 ms once the due time it knows has passed) is the
 * backstop. A submit whose first poll is due at once polls under the same claim. A worker that dies leaves leases
 * that run out; another worker then claims the task with a newer fence and continues from the stored upstream job
 * id.
 *
 * Uncertain submits: a submit that may have made a job although its answer was lost (a timeout, a reset, a 5xx)
 * records a submit marker instead of a job id (`Upstream.submitMarker`); the next step asks the upstream for that job
 * (`Upstream.find`: by idempotency key or by the task's id in the job's metadata) and follows it when found. Where
 * the upstream cannot tell, the task waits — a step, not a slot — for a callback or the upstream's bounded time
 * before it is submitted again (docs/channels.md, "Submits without duplicates").
 *
 * Placement: with a `Placement` (the local file store of `@mediagate/node`) the worker's name is the node's id, it
 * asks `Placement.check` before its first claim and on every heartbeat, and claims no task accepted by a node it is
 * apart from (`TaskLifecycle.claim`'s `exclude`); its registry row says which (`NodeBeat.apartFrom`).
 *
 * Outages: a claim that fails (the database restarted, connections killed) never stops the worker. It logs once and
 * tries again after a capped exponential backoff ({@link WorkerOptions.backoff}, `@mediagate/persistence/Backoff`).
 * A step that failed half-way hands its task back, retrying until storage answers; a task of a claim whose answer
 * was lost (committed, then the connection dropped) is run by nobody, so after a failed claim the worker claims under
 * a new name and the heartbeat stops renewing the old one once its steps end: such leases run out and the tasks
 * are claimed again.
 *
 * @since 0.1.0
 */
import { Tracing } from "@mediagate/contract"
import * as Backoff from "@mediagate/persistence/Backoff"
import * as Ids from "@mediagate/persistence/Ids"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
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
import { Admission } from "./Admission.js"
import * as EngineMetrics from "./internal/metrics.js"
import { claimLateness, stepDelays } from "./internal/worker/schedule.js"
import { config } from "./internal/worker/settings.js"
import { claimSpan, stepAttributes } from "./internal/worker/spans.js"
import { runStepWith, type StepStorage } from "./internal/worker/step.js"
import { NodeRegistry } from "./NodeRegistry.js"
import { Placement } from "./Placement.js"
import { TaskLifecycle } from "./TaskLifecycle.js"
import { TaskReads } from "./TaskReads.js"
import type { TaskRecord } from "./TaskRecord.js"
import { TaskRetention } from "./TaskRetention.js"
import { idempotencyWindowMs } from "./TaskService.js"
import { Upstream } from "./Upstream.js"

export {
  /**
   * Default poll schedule: the first poll when the task is expected to be done (80% of its estimate, 1 to 30 s), then 1
   * s, 1.5 s, 2.25 s, ... at most 15 s.
   *
   * @since 0.1.0
   * @category utils
   */
  defaultPollDelayMs,
  /**
   * Default retry backoff after a failed upstream call: 2 s, 4 s, ... at most 60 s.
   *
   * @since 0.1.0
   * @category utils
   */
  defaultRetryDelayMs,
  /**
   * Poll schedule of a job whose upstream retries its callback until it is answered (fal, Replicate): the first poll
   * at twice the task's estimate (60 s to 10 min), then every 60 s.
   *
   * @since 0.1.0
   * @category utils
   */
  retriedCallbackPollDelayMs,
  /**
   * Poll schedule when the upstream reports every change, a safety net for lost callbacks (a restart): the first poll
   * once the job should be done (1.25 × the task's estimate, from 10 s to 60 s), then 20 s, 40 s, ... at most 60 s.
   *
   * @since 0.1.0
   * @category utils
   */
  safetyNetPollDelayMs
} from "./internal/worker/schedule.js"
export {
  /**
   * Worker settings from Effect `Config` (decisions.md §10): `MEDIAGATE_WORKER_CONCURRENCY` (default 32),
   * `MEDIAGATE_WORKER_LEASE` (default `30s`, at least `1s`: how long a task claimed by a process that died stays
   * unclaimed) and `MEDIAGATE_WORKER_CLAIM_INTERVAL` (default `10ms`, at most `1s`: {@link
   * WorkerOptions.claimInterval}).
   *
   * @since 0.1.0
   * @category config
   */
  config
} from "./internal/worker/settings.js"

/**
 * Worker settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerOptions {
  /** Steps one process runs at once; `0` runs no worker (an API-only node). Default 32. */
  readonly concurrency?: number
  /** Lease of a claimed task. Default 30 s. */
  readonly lease?: Duration.DurationInput
  /** Longest idle wait before looking for due work again (the backstop). Default 1 s. */
  readonly idle?: Duration.DurationInput
  /**
   * Delay before the n-th upstream poll of a task (n from 0). Default: {@link defaultPollDelayMs}, or
   * {@link safetyNetPollDelayMs} when the upstream notifies every change.
   */
  readonly pollDelay?: (polls: number, task: TaskRecord) => Duration.DurationInput
  /** Delay before retrying a failed upstream call. Default 2 s × 2ⁿ, at most 60 s. */
  readonly retryDelay?: (attempt: number) => Duration.DurationInput
  /** How long shutdown waits for running steps before releasing their leases. Default 10 s. */
  readonly shutdownGrace?: Duration.DurationInput
  /** This worker's name in leases. Default `<host>:<pid>:<ulid>`. */
  readonly owner?: string
  /** Backoff of the dispatcher while claims fail (storage unavailable). Default 100 ms, doubling, at most 5 s. */
  readonly backoff?: Backoff.Options
  /**
   * The shortest time between two claims (default 0: a claim at every wake-up). Under a stream of wake-ups — an
   * upstream callback per finished job, an accept per request — a claim then takes every task due since the last
   * one, and their steps, finishes and events are written in batches instead of one transaction each; a task waits
   * at most this long longer to be claimed. The server sets it (`MEDIAGATE_WORKER_CLAIM_INTERVAL`, default `10ms`).
   */
  readonly claimInterval?: Duration.DurationInput
}

/**
 * Runs one step of a claimed task. Exported for tests; the worker runs it for every claim.
 *
 * A submit whose first poll is due at once (a poll delay of 0) polls under the same claim, and records the job
 * with what the poll told (progress and the next poll, or the end of the task) in one storage write.
 *
 * @since 0.1.0
 * @category utils
 */
export const runStep = (task: TaskRecord, options: Required<Pick<WorkerOptions, "pollDelay" | "retryDelay">>) =>
  Effect.flatMap(
    Effect.all([TaskLifecycle, TaskReads, Upstream]),
    ([lifecycle, reads, upstream]) =>
      runStepWith({ step: lifecycle.step, finish: lifecycle.finish, getById: reads.getById }, upstream, task, options)
  )

/** The most tasks whose change a worker remembers hearing (see `heard` in {@link run}). */
const heardLimit = 65_536

/**
 * Runs the worker until the scope closes. Needs the storage ports it uses and the upstream.
 *
 * @since 0.1.0
 * @category utils
 */
export const run = (options: WorkerOptions = {}) =>
  Effect.gen(function*() {
    const concurrency = options.concurrency ?? 32
    if (concurrency <= 0) return
    const lifecycle = yield* TaskLifecycle
    const registry = yield* NodeRegistry
    const retention = yield* TaskRetention
    const reads = yield* TaskReads
    const upstream = yield* Upstream
    const leaseMs = Duration.toMillis(options.lease ?? "30 seconds")
    const idleMs = Duration.toMillis(options.idle ?? "1 second")
    // with a Placement, its node id; the tasks of the nodes it is apart from are not claimed (looked at before the
    // first claim, on every heartbeat, and when a claim brings a task of a node not seen at the last look)
    const placement = Option.getOrUndefined(yield* Effect.serviceOption(Placement))
    // with an Admission gate, each claim reports how late its oldest task was (new tasks wait while it is shut)
    const admission = Option.getOrUndefined(yield* Effect.serviceOption(Admission))
    const baseOwner = options.owner ?? placement?.nodeId ?? `${hostname()}:${process.pid}:${Ids.ulid()}`
    let apart: ReadonlyArray<string> = []
    const lookAgain = placement === undefined ? Effect.void : Effect.map(placement.check, (ids) => {
      apart = ids
    })
    /**
     * The name this worker claims under. A claim that fails may still have committed (the connection was lost
     * after the commit): its tasks are leased to the name but run by nobody. So the name changes after a failed
     * claim, and a former name is kept alive by the heartbeat only while steps it claimed still run; the leases of
     * such lost claims then run out and the tasks are claimed again.
     */
    let owner = baseOwner
    let generation = 0
    /** Steps running per former name (the current name is always kept alive). */
    const formerOwners = new Map<string, number>()
    const ownerOf = new Map<string, string>()
    const stepOptions = stepDelays(options, upstream)
    const pokes = yield* Queue.sliding<void>(1)
    const poke = Queue.offer(pokes, undefined)
    const steps = yield* FiberSet.make<void, never>()
    let running = 0
    /** The last claim took every free slot (or none was free): more work may be due as soon as a step ends. */
    let full = false
    /** When the idle dispatcher looks for work again unless woken (epoch ms); -Infinity while it is not waiting. */
    let wakeAt = -Infinity
    /**
     * When work is next due as far as this worker knows (Infinity: nothing active): the storage's last answer,
     * lowered by the next runs this worker's steps wrote since; and when the storage was asked.
     */
    let known: { readonly at: number; due: number } | undefined
    /** The earliest next run this worker's steps wrote while the storage was being asked. */
    let stepsDue = Infinity
    /** The earliest next run this worker's steps wrote since the last claim began (that claim may have missed it). */
    let dueSinceClaim = Infinity
    /** Deadlines of the tasks whose steps run (storage never schedules a task beyond its deadline). */
    const deadlines = new Map<string, number>()
    /**
     * Ask the storage when work is next due at most this often while a known due time has passed (under load the
     * dispatcher is woken faster than that, and claims find the due work anyway).
     */
    const recheckMs = Math.min(100, Math.max(10, Math.floor(idleMs / 4)))
    const claimIntervalMs = Duration.toMillis(options.claimInterval ?? 0)
    /** When the last claim began (epoch ms). */
    let lastClaimAt = -Infinity

    /**
     * The tasks the upstream reported a change of, to make due (`markDue`; a task whose step is running stays due
     * through that step's write).
     */
    const changedTasks = yield* Queue.unbounded<string>()
    /**
     * When this worker heard the change of each task woken since (epoch ms, the first one until its claim): the
     * lateness its claim reports counts from there (`claimLateness`). A task another process claims leaves its
     * entry behind: the oldest are dropped past `heardLimit`.
     */
    const heard = new Map<string, number>()
    const hear = (ids: Chunk.Chunk<string>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        for (const id of ids) if (!heard.has(id)) heard.set(id, now)
        for (const id of heard.keys()) {
          if (heard.size <= heardLimit) break
          heard.delete(id)
        }
        return Queue.offerAll(changedTasks, ids)
      })

    /**
     * The storage as steps see it: a step that schedules its task before the idle dispatcher's next look wakes it;
     * one written while the dispatcher is busy is remembered for its next wait.
     */
    const stepStorage: StepStorage = {
      getById: reads.getById,
      step: (id, fence, update) =>
        Effect.tap(lifecycle.step(id, fence, update), (written) =>
          Effect.suspend(() => {
            if (!written) return Effect.void
            const at = Math.min(update.nextRunAt, deadlines.get(id) ?? Infinity)
            stepsDue = Math.min(stepsDue, at)
            dueSinceClaim = Math.min(dueSinceClaim, at)
            if (known !== undefined) known.due = Math.min(known.due, at)
            return at < wakeAt ? poke : Effect.void
          })),
      // every end of a task a step writes (succeeded, failed, expired) counts in the metrics once committed
      finish: (id, fence, outcome, finishOptions) =>
        Effect.tap(lifecycle.finish(id, fence, outcome, finishOptions), (ended) => {
          if (Option.isSome(ended)) EngineMetrics.finished(ended.value)
          return Effect.void
        })
    }

    yield* Effect.forkScoped(Stream.runForEach(lifecycle.wakeups, () => poke))
    // upstream callbacks, batched: a burst of finished jobs costs one storage write; the changes go into the queue of
    // tasks to make due; one fiber writes them: what came in the 5 ms after the first, and while the last write ran,
    // goes in one write (a timer per write, not per change)
    yield* Effect.forkScoped(Stream.runForEachChunk(upstream.changes, hear))
    const nextDue = Effect.flatMap(Queue.takeBetween(changedTasks, 1, 512), (first) =>
      first.length >= 512 ? Effect.succeed(first) : Effect.zipRight(
        Effect.sleep(Duration.millis(5)),
        Effect.map(Queue.takeUpTo(changedTasks, 512 - first.length), (more) =>
          Chunk.appendAll(first, more))
      ))
    yield* Effect.forkScoped(Effect.forever(
      Effect.flatMap(nextDue, (due) =>
        markDueRetried(lifecycle, options.backoff, due))
    ))
    const heartbeatMs = Math.max(100, Math.floor(leaseMs / 3))
    // each beat also registers this process in the node registry (one upsert: the operators' system status); the
    // first one before the worker starts, so that a node is registered (and has looked at its Placement) before it
    // claims anything or its server accepts a task
    const extend = Effect.suspend(() =>
      Effect.forEach([owner, ...formerOwners.keys()], (name) => registry.heartbeat(name, leaseMs))
    )
    const beat = extend.pipe(
      Effect.zipLeft(lookAgain),
      Effect.flatMap((held) =>
        registry.beatNode({
          id: baseOwner,
          host: hostname(),
          pid: process.pid,
          concurrency,
          heartbeatMs,
          leases: held.reduce((a, b) => a + b, 0),
          apartFrom: apart
        })
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("heartbeat failed", cause))
    )
    yield* beat
    const heartbeat = yield* Effect.forkScoped(Effect.forever(Effect.delay(beat, Duration.millis(heartbeatMs))))

    /**
     * The tasks of a claim that this worker runs: with a Placement, a task accepted by a node not seen at the last look
     * (one that started since) makes it look again, and the tasks of a node it is then apart from are handed back, due
     * at once, for that node (a node claims only what its peers may claim: see Placement).
     */
    const placed = (claimed: ReadonlyArray<TaskRecord>, now: number) =>
      placement === undefined || !claimed.some((task) => task.nodeId != null && !placement.knows(task.nodeId))
        ? Effect.succeed(claimed)
        : Effect.gen(function*() {
          yield* lookAgain
          const back = claimed.filter((task) => task.nodeId != null && apart.includes(task.nodeId))
          yield* Effect.forEach(back, (task) => Effect.ignore(lifecycle.step(task.id, task.fence, { nextRunAt: now })))
          return back.length === 0 ? claimed : claimed.filter((task) => !back.includes(task))
        })

    // a failed step hands its task back (due after a retry delay), trying until storage answers, so that the
    // heartbeat does not keep an orphaned lease alive
    const handBack = (task: TaskRecord) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        stepStorage.step(task.id, task.fence, {
          nextRunAt: now + Duration.toMillis(stepOptions.retryDelay(0)),
          polled: true
        })).pipe(
          // as long as this process lives (its slot stays taken meanwhile): a lease given up on here would be kept
          // alive by the heartbeat, and the task never run again. Shutdown releases every lease anyway.
          Effect.sandbox,
          Effect.retry(Backoff.schedule(options.backoff)),
          Effect.ignore
        )

    const step = (task: TaskRecord, claimStarted: bigint, claimEnded: bigint) =>
      Effect.zipRight(claimSpan(task, claimStarted, claimEnded), runStepWith(stepStorage, upstream, task, stepOptions))
        .pipe(
          Effect.catchAllCause((cause) =>
            Effect.zipRight(Effect.logError(`step of ${task.id} failed`, cause), handBack(task))
          ),
          // the step continues the trace of the request that created the task (when it was kept)
          Tracing.spanWith("Worker.step", () => {
            const parent = Tracing.parentOf(task.traceContext)
            return {
              attributes: { ...stepAttributes(task), "mediagate.status": task.status },
              ...(parent === undefined ? {} : { parent })
            }
          }),
          // a step's end frees a slot; it brings no new work unless the dispatcher is waiting for a slot (a step that
          // schedules its task soon wakes the dispatcher through `stepStorage`)
          Effect.ensuring(Effect.suspend(() => {
            running--
            deadlines.delete(task.id)
            const claimedBy = ownerOf.get(task.id)
            ownerOf.delete(task.id)
            const left = claimedBy === undefined ? undefined : formerOwners.get(claimedBy)
            if (claimedBy !== undefined && left !== undefined) {
              if (left <= 1) {
                formerOwners.delete(claimedBy)
              } else formerOwners.set(claimedBy, left - 1)
            }
            return full ? poke : Effect.void
          }))
        )

    /** Waits for a wakeup, or until work is due: by the storage's answer, this worker's steps, or the idle backstop. */
    const idle = Effect.gen(function*() {
      // a wakeup already waiting, or a step that made its task due after the last claim began: look again at once
      if (Option.isSome(yield* Queue.poll(pokes))) {
        return
      }
      const now = yield* Clock.currentTimeMillis
      if (dueSinceClaim <= now) return
      // ask the storage at most every `idle` (the backstop: other processes' work), and when the known due time
      // has passed (the work was claimed, or is due), at most every `recheckMs`
      if (known === undefined || now - known.at >= idleMs || (known.due <= now && now - known.at >= recheckMs)) {
        stepsDue = Infinity
        const due = yield* lifecycle.nextDueAt.pipe(Effect.orElseSucceed(() => Option.none<number>()))
        const at = yield* Clock.currentTimeMillis
        known = yield* Effect.sync(() => ({ at, due: Math.min(Option.getOrElse(due, () => Infinity), stepsDue) }))
        // work due already (it became due after the claim): claim it; asked again only after `recheckMs`
        if (known.due <= at) return
      }
      const last = known
      // computed and published at once: a step ending from here on wakes the dispatcher if it is due earlier
      const planned = yield* Effect.sync(() => {
        wakeAt = Math.min(last.at + idleMs, last.due > now ? last.due : last.at + recheckMs)
        return wakeAt
      })
      const wait = planned - (yield* Clock.currentTimeMillis)
      if (wait > 0) yield* Effect.race(Queue.take(pokes), Effect.sleep(Duration.millis(wait)))
    }).pipe(Effect.ensuring(Effect.sync(() => {
      wakeAt = -Infinity
    })))

    const dispatch = Effect.gen(function*() {
      const free = concurrency - running
      if (free <= 0) {
        full = true
        return yield* Queue.take(pokes)
      }
      // at most one claim per `claimInterval` while claims find fewer tasks than there are free slots: the wake-ups
      // that come meanwhile are served by the next claim at once (a claim that filled every slot is followed at once)
      if (claimIntervalMs > 0 && !full) {
        const since = (yield* Clock.currentTimeMillis) - lastClaimAt
        if (since < claimIntervalMs) yield* Effect.sleep(Duration.millis(claimIntervalMs - since))
        lastClaimAt = yield* Clock.currentTimeMillis
      }
      dueSinceClaim = Infinity
      const claimStarted = yield* Clock.currentTimeNanos
      // a failed claim (storage unavailable) ends the round: the loop backs off (see `dispatcher` below)
      const claimed = yield* lifecycle.claim(owner, free, leaseMs, apart).pipe(Effect.tapErrorCause(() =>
        Effect.sync(() => {
          // nothing known of the queue: new tasks are not held (their accept fails on its own while storage is down)
          admission?.report(0)
          // the claim may have committed: claim under a new name from now on (see `owner`)
          const steps = [...ownerOf.values()].filter((name) =>
            name === owner
          ).length
          if (steps > 0) formerOwners.set(owner, steps)
          owner = `${baseOwner}:${++generation}`
        })
      ))
      full = claimed.length >= free
      const claimEnded = yield* Clock.currentTimeNanos
      const claimedAt = Number(claimEnded / 1_000_000n)
      const taken = yield* placed(claimed, claimedAt)
      // none due: the queue is caught up (0); a claim of woken tasks whose changes were heard elsewhere tells nothing
      const late = claimLateness(claimed, claimedAt, (id) => heard.get(id))
      for (const task of claimed) heard.delete(task.id)
      if (late !== undefined) admission?.report(late)
      for (const task of taken) {
        EngineMetrics.claimed(task, claimedAt)
        running++
        deadlines.set(task.id, task.deadlineAt)
        ownerOf.set(task.id, owner)
        yield* FiberSet.run(steps, step(task, claimStarted, claimEnded))
      }
      if (!full) {
        yield* idle
      }
    })

    // housekeeping: forget idempotency records past their window
    yield* Effect.forkScoped(
      Effect.flatMap(Clock.currentTimeMillis, (now) => retention.pruneIdempotency(now - idempotencyWindowMs)).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("idempotency pruning failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.minutes(10)))
      )
    )

    // never ends on a failure or defect: logs it and tries again after a capped backoff
    const dispatcher = yield* Effect.forkScoped(Backoff.loop("task worker: claim", dispatch, options.backoff))

    // graceful shutdown: stop claiming, let running steps finish (up to the grace period), hand back leases
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(dispatcher)
        // finalizers run uninterruptibly: the wait must be made interruptible for the grace period to cut it short
        yield* Effect.interruptible(FiberSet.awaitEmpty(steps)).pipe(
          Effect.timeout(options.shutdownGrace ?? "10 seconds"),
          Effect.ignore
        )
        yield* FiberSet.clear(steps)
        const released = yield* Effect.forEach(
          [owner, ...formerOwners.keys()],
          (name) => registry.releaseAll(name).pipe(Effect.orElseSucceed(() => 0))
        ).pipe(Effect.map((counts) => counts.reduce((a, b) => a + b, 0)))
        if (released > 0) yield* Effect.logInfo(`worker ${owner} released ${released} leases`)
        // the heartbeat stops first: a beat after the removal would register the node again
        yield* Fiber.interrupt(heartbeat)
        yield* Effect.ignore(registry.removeNode(baseOwner))
      })
    )
    yield* Effect.logDebug(`worker ${owner} started (concurrency ${concurrency})`)
  })

/**
 * What a worker needs: the storage ports it uses and the upstream.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = TaskLifecycle | TaskReads | NodeRegistry | TaskRetention | Upstream

/**
 * The worker with its settings from Effect `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (overrides: WorkerOptions = {}): Layer.Layer<never, ConfigError.ConfigError, Requirements> =>
  Layer.unwrapEffect(Effect.map(config, (options) => layer({ ...options, ...overrides })))

/**
 * The worker as a layer: it runs while the layer is alive.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: WorkerOptions = {}): Layer.Layer<never, never, Requirements> =>
  Layer.scopedDiscard(run(options))

/**
 * A node without workers (an API-only node, the API thread of the production server): the upstream's changes it
 * hears (the callbacks that reach its HTTP port) are written as due tasks (`TaskLifecycle.markDue`, which wakes the
 * workers of the other processes and threads), what came in the same 5 ms in one write, retried as the worker
 * retries its own. Without it such a callback would wait for its task's safety-net poll.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerForwardChanges = (
  options: Pick<WorkerOptions, "backoff"> = {}
): Layer.Layer<never, never, TaskLifecycle | Upstream> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const [lifecycle, upstream] = yield* Effect.all([TaskLifecycle, Upstream])
    const changes = upstream.changes.pipe(Stream.groupedWithin(512, Duration.millis(5)))
    yield* Effect.forkScoped(Stream.runForEach(changes, (ids) => markDueRetried(lifecycle, options.backoff, ids)))
  }))

/**
 * Upstream changes written as due tasks. A change is not dropped for an outage (the task would wait for its
 * safety-net poll): tried again with backoff for up to 5 minutes, then left to that poll.
 */
const markDueRetried = (
  lifecycle: TaskLifecycle["Type"],
  backoff: WorkerOptions["backoff"],
  ids: Chunk.Chunk<string>
): Effect.Effect<void> =>
  lifecycle.markDue(Chunk.toReadonlyArray(ids)).pipe(
    Effect.retry(Backoff.schedule(backoff).pipe(Schedule.upTo(Duration.minutes(5)))),
    Effect.catchAllCause((cause) => Effect.logWarning("markDue failed", cause))
  )
