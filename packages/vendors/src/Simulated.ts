/**
 * The simulated upstream (decisions.md §8): every family can run on it, and `test` keys always do. Jobs go
 * through the states of a real upstream (queued, running with progress, succeeded or failed) and write real
 * files: images of the requested size, MP4s of the requested resolution and duration (plus the last frame when
 * asked).
 *
 * Prompt directives steer it (and only it): `[sim:fail]`, `[sim:content-policy]`, `[sim:hang]`,
 * `[sim:delay=N]` (seconds). Durations are multiplied by `MEDIAGATE_SIM_TIME_SCALE`.
 *
 * A job reports its place in a queue while queued (its first 5%, counting down to 1) and log lines (`queued`,
 * `started`, each quarter rendered); a job of 2 s or more also notifies the engine at each quarter, so that its
 * progress and log lines are recorded while it runs, not only when it ends, while the process runs fewer than
 * `progressJobs` other jobs (`MEDIAGATE_SIM_PROGRESS_JOBS`, default 64): a notice costs the engine a step (a claim, a poll,
 * a write), so a busy node's jobs notify only their ends, as a real upstream with completion callbacks does.
 *
 * The job id carries the submit time, so a job's state survives a restart of the process: after a restart the
 * completion callback is lost, and the engine's safety-net poll finds the job done.
 *
 * @since 0.1.0
 */
import { Families, Family, type Outputs, type Task } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type JobState, Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { contentTypeOf, FileStore, sharedPrefix } from "./FileStore.js"
import * as Media from "./Media.js"
import { UrlSigner } from "./UrlSigner.js"

/**
 * Settings of the simulated upstream.
 *
 * @since 0.1.0
 * @category models
 */
export interface SimulatedOptions {
  /** Multiplies every simulated duration (tests use a small value). Default 1. */
  readonly timeScale?: number
  /** Seconds a video job takes before scaling. Default 10. */
  readonly videoSeconds?: number
  /** Seconds an image job takes before scaling. Default 3. */
  readonly imageSeconds?: number
  /** The families whose outputs it renders (default: the registry). */
  readonly families?: Family.Registry
  /**
   * A job submitted while fewer than this many others are in flight also notifies its quarters (progress and log
   * lines recorded while it runs); otherwise only its end. Default 64; `0`: never.
   */
  readonly progressJobs?: number
}

/**
 * What the prompt asks of the simulation.
 *
 * @since 0.1.0
 * @category models
 */
export interface Directives {
  readonly fail: boolean
  readonly contentPolicy: boolean
  readonly hang: boolean
  readonly delaySeconds: number | undefined
}

/**
 * Reads the `[sim:...]` directives of a prompt.
 *
 * @since 0.1.0
 * @category utils
 */
export const directives = (prompt: string): Directives => {
  const delay = /\[sim:delay=(\d+(?:\.\d+)?)\]/i.exec(prompt)
  return {
    fail: /\[sim:fail\]/i.test(prompt),
    contentPolicy: /\[sim:content-policy\]/i.test(prompt),
    hang: /\[sim:hang\]/i.test(prompt),
    delaySeconds: delay === null ? undefined : Number(delay[1])
  }
}

const jobIdOf = (task: TaskRecord, submittedAt: number) => `sim_${submittedAt}_${task.id}`
const submittedAtOf = (jobId: string): number | undefined => {
  const match = /^sim_(\d+)_/.exec(jobId)
  return match === null ? undefined : Number(match[1])
}

const extension = (spec: Outputs.OutputSpec) => spec.format === "jpeg" ? "jpg" : spec.format

/**
 * Where the simulated upstream keeps one rendering of each distinct output (the renderer draws the same file for the
 * same kind, size and duration). The `r1` segment names the renderer's drawing: a change to what it draws takes a
 * new one, so a new task never names a file an older version drew.
 *
 * @since 0.1.0
 * @category constants
 */
export const renderingsPrefix = `${sharedPrefix}r1/`

/**
 * The store key of the one rendering of an output.
 *
 * @since 0.1.0
 * @category encoding
 */
export const renderingKey = (spec: Outputs.OutputSpec): string =>
  spec.media === "video"
    ? `${renderingsPrefix}video-${spec.width}x${spec.height}-${spec.durationSeconds}s.${extension(spec)}`
    : spec.kind === "last_frame"
    ? `${renderingsPrefix}last-frame-${spec.width}x${spec.height}.${extension(spec)}`
    : `${renderingsPrefix}image-${spec.width}x${spec.height}.${extension(spec)}`

/** A job's "finished" notice: when it is due and for which task. */
interface Notice {
  readonly at: number
  readonly taskId: string
  /** Whether it is the job's end (not a quarter). */
  readonly end: boolean
}

/**
 * The pending "job finished" notices, earliest first: a binary min-heap on an array. One notice is two fields in
 * an array, where a sleeping fiber per job cost about 10 KB of heap (15,000 jobs in flight held 150 MB).
 */
const noticeHeap = () => {
  const heap: Array<Notice> = []
  const swap = (i: number, j: number) => {
    const t = heap[i]!
    heap[i] = heap[j]!
    heap[j] = t
  }
  return {
    peek: (): Notice | undefined => heap[0],
    push: (notice: Notice) => {
      heap.push(notice)
      for (let i = heap.length - 1; i > 0;) {
        const parent = (i - 1) >> 1
        if (heap[parent]!.at <= heap[i]!.at) break
        swap(i, parent)
        i = parent
      }
    },
    pop: (): Notice | undefined => {
      const top = heap[0]
      const last = heap.pop()
      if (heap.length > 0 && last !== undefined) {
        heap[0] = last
        for (let i = 0;;) {
          const left = 2 * i + 1
          const right = left + 1
          let least = i
          if (left < heap.length && heap[left]!.at < heap[least]!.at) least = left
          if (right < heap.length && heap[right]!.at < heap[least]!.at) least = right
          if (least === i) break
          swap(i, least)
          i = least
        }
      }
      return top
    }
  }
}

/**
 * Builds the simulated upstream.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: SimulatedOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* FileStore
    const signer = yield* UrlSigner
    const media = yield* Media.Renderer
    const changes = yield* PubSub.unbounded<string>()
    const scale = options.timeScale ?? 1
    /** The shortest job that also tells its quarters (ms). */
    const progressNoticeMs = 2_000
    const progressJobs = options.progressJobs ?? defaultProgressJobs
    /** Jobs of this process whose end notice is pending. */
    let inFlight = 0
    // the "job finished" notices: one fiber, owned by the layer's scope, sleeps until the earliest is due and
    // publishes every notice that is due; a submit with an earlier notice wakes it
    const notices = noticeHeap()
    const earlier = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due: Array<string> = []
      for (let next = notices.peek(); next !== undefined && next.at <= now; next = notices.peek()) {
        const notice = notices.pop()!
        if (notice.end) inFlight--
        due.push(notice.taskId)
      }
      if (due.length > 0) yield* PubSub.publishAll(changes, due)
      const next = notices.peek()
      yield* next === undefined
        ? Queue.take(earlier)
        : Effect.race(Queue.take(earlier), Effect.sleep(Duration.millis(next.at - now)))
    })))

    const families = options.families ?? Families.registry
    const plan = (task: TaskRecord) => {
      const outputs = Family.findEndpoint(families, task.endpoint)?.outputs({ model: task.model, input: task.input }) ??
        []
      const steer = directives(String(task.input["prompt"] ?? ""))
      const base = steer.delaySeconds ??
        (outputs.some((o) => o.media === "video") ? options.videoSeconds ?? 10 : options.imageSeconds ?? 3)
      return { outputs, steer, durationMs: Math.max(0, Math.round(base * 1000 * scale)) }
    }

    /** Whether the task's job ends as it is submitted (no length, not told to hang). */
    const isInstant = (task: TaskRecord) => {
      const { durationMs, steer } = plan(task)
      return durationMs === 0 && !steer.hang
    }

    // every distinct rendering is stored once, under renderingKey, and each task's result names it: a task's files
    // cost no rendering, no bytes and no file operation. The store is looked at again for a rendering after
    // renderingCheckMs (an operator may have removed it): one that is gone is stored again.
    const stored = new Map<string, { readonly size: number; checkedAt: number }>()
    /**
     * One lock per rendering: the jobs that end together before it is stored wait for the first one's rendering
     * instead of each rendering it (a burst of video jobs ending at once queued hundreds of encodes).
     */
    const renderingLocks = new Map<string, Effect.Semaphore>()
    const lockOf = (key: string) => {
      const known = renderingLocks.get(key)
      if (known !== undefined) return known
      const made = Effect.unsafeMakeSemaphore(1)
      renderingLocks.set(key, made)
      return made
    }
    const render = (spec: Outputs.OutputSpec) =>
      spec.media === "video"
        ? media.renderVideo({ width: spec.width, height: spec.height, durationSeconds: spec.durationSeconds })
        : spec.kind === "last_frame"
        ? media.renderLastFrame({ width: spec.width, height: spec.height, durationSeconds: 1 })
        : media.renderImage({ width: spec.width, height: spec.height, format: spec.format })
    /** Renders and stores `spec` under `key` unless a job that held the lock before did; its size. */
    const storeRendering = (spec: Outputs.OutputSpec, key: string, now: number) =>
      lockOf(key).withPermits(1)(Effect.suspend(() => {
        const done = stored.get(key)
        if (done !== undefined) return Effect.succeed(done.size)
        return Effect.flatMap(render(spec), (bytes) =>
          Effect.map(store.put(key, bytes, contentTypeOf(key)), ({ size }) => {
            stored.set(key, { size, checkedAt: now })
            return size
          }))
      }))
    /** Makes sure the rendering of `spec` is stored under `key`; its size. */
    const rendering = (spec: Outputs.OutputSpec, key: string, now: number) => {
      const known = stored.get(key)
      if (known === undefined) {
        return storeRendering(spec, key, now)
      }
      if (now - known.checkedAt < renderingCheckMs) {
        return Effect.succeed(known.size)
      }
      known.checkedAt = now
      return Effect.flatMap(store.open(key), (opened) => {
        if (opened._tag === "Some") {
          return Effect.succeed(opened.value.size)
        }
        // gone from the store: forgotten, so that the first job to get the lock stores it again
        if (stored.get(key) === known) {
          stored.delete(key)
        }
        return storeRendering(spec, key, now)
      })
    }

    /** The result items of a finished job, its renderings stored (idempotent). */
    const produce = (outputs: ReadonlyArray<Outputs.OutputSpec>, now: number) =>
      Effect.forEach(outputs, (spec) => {
        const key = renderingKey(spec)
        return Effect.zipWith(rendering(spec, key, now), signer.sign(key), (size, url): Task.ResultItem => ({
          url,
          ...(spec.media === "video" ? { duration: spec.durationSeconds } : {}),
          format: spec.format,
          size_bytes: size,
          width: spec.width,
          height: spec.height,
          kind: spec.kind
        }))
      })

    /** The job's log lines at `progress` (%): queued, started, each quarter rendered. */
    const logLines = (task: TaskRecord, progress: number) => {
      const lines = [`${task.model}: queued`]
      if (progress >= 5) {
        lines.push(`${task.model}: started ${task.operation}`)
      }
      for (let part = 25; part <= progress && part < 100; part += 25) {
        lines.push(`${task.model}: ${part}% rendered`)
      }
      return lines
    }

    return Upstream.of({
      notifiesChanges: true,
      changes: Stream.fromPubSub(changes),
      // a job of no length is done when it is submitted: polled at once, under the submit's claim (the task ends in
      // one step: no notice, no second claim)
      pollDelay: (polls, task) =>
        polls === 0 && isInstant(task) ? 0 : undefined,
      submit: (task) =>
        Effect.flatMap(Clock.currentTimeMillis, (submittedAt) => {
          const { durationMs, steer } = plan(task)
          const submitted = Effect.succeed({ jobId: jobIdOf(task, submittedAt) })
          if (steer.hang || durationMs <= 0) {
            return submitted
          }
          const at = submittedAt + durationMs
          const first = notices.peek()
          notices.push({ at, taskId: task.id, end: true })
          // a job of 2 s or more also tells at a quarter, half and three quarters, when its progress and log
          // lines are worth a look, unless the process runs progressJobs others or more
          if (durationMs >= progressNoticeMs && inFlight < progressJobs) {
            for (const part of [1, 2, 3]) {
              notices.push({ at: submittedAt + (durationMs * part) / 4, taskId: task.id, end: false })
            }
          }
          inFlight++
          const earliest = notices.peek()
          return first === undefined || (earliest !== undefined && earliest.at < first.at)
            ? Effect.zipRight(Queue.offer(earlier, undefined), submitted)
            : submitted
        }),
      poll: (task, jobId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const submittedAt = submittedAtOf(jobId)
          if (submittedAt === undefined) {
            return Effect.fail(new UpstreamError({ message: `unknown simulated job ${jobId}`, retryable: false }))
          }
          const { durationMs, outputs, steer } = plan(task)
          const elapsed = now - submittedAt
          if (steer.hang || elapsed < durationMs) {
            const progress = steer.hang ? Math.min(95, elapsed / 1000) : (100 * elapsed) / Math.max(1, durationMs)
            const logs = logLines(task, progress)
            return Effect.succeed<JobState>(
              progress < 5
                ? { _tag: "Queued", position: Math.max(1, Math.ceil(5 - progress)), logs }
                : { _tag: "Running", progress: Math.floor(progress), logs }
            )
          }
          if (steer.contentPolicy) {
            return Effect.succeed<JobState>({
              _tag: "Failed",
              code: "PROVIDER_ERROR",
              message: "content policy violation: the upstream refused the prompt"
            })
          }
          if (steer.fail) {
            return Effect.succeed<JobState>({
              _tag: "Failed",
              code: "PROVIDER_ERROR",
              message: "the upstream failed to generate the output"
            })
          }
          return produce(outputs, now).pipe(
            Effect.map((result): JobState => ({ _tag: "Succeeded", result })),
            Effect.mapError((error) =>
              new UpstreamError({ message: `storing the output failed: ${String(error)}`, retryable: true })
            )
          )
        }),
      cancel: () =>
        Effect.void
    })
  })

/** How long (ms) a rendering this process stored is taken to be in the store before it is looked for again. */
const renderingCheckMs = 60_000

/** The jobs in flight up to which a job also notifies its quarters (see {@link SimulatedOptions.progressJobs}). */
const defaultProgressJobs = 64

/**
 * The simulated upstream's settings from Effect `Config`: `MEDIAGATE_SIM_TIME_SCALE` (default 1),
 * `MEDIAGATE_SIM_PROGRESS_JOBS` (default 64).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<SimulatedOptions> = Config.all({
  timeScale: Config.number("MEDIAGATE_SIM_TIME_SCALE").pipe(
    Config.validate({ message: "must be more than 0", validation: (n) => n > 0 }),
    Config.withDefault(1)
  ),
  progressJobs: Config.integer("MEDIAGATE_SIM_PROGRESS_JOBS").pipe(
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(defaultProgressJobs)
  )
})

/**
 * The simulated upstream as the engine's `Upstream`.
 *
 * @since 0.1.0
 * @category services
 */
export class SimulatedUpstream extends Context.Tag("@mediagate/vendors/SimulatedUpstream")<
  SimulatedUpstream,
  Upstream["Type"]
>() {}

/**
 * The simulated upstream with the given settings, rendering with a renderer of its own (`Media.layer`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SimulatedOptions = {}): Layer.Layer<SimulatedUpstream, never, FileStore | UrlSigner> =>
  Layer.scoped(SimulatedUpstream, make(options)).pipe(Layer.provide(Media.layer()))

/**
 * The simulated upstream with its settings from Effect `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<SimulatedUpstream, ConfigError.ConfigError, FileStore | UrlSigner> = Layer
  .unwrapEffect(Effect.map(config, layer))
