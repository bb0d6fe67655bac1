/**
 * The production server on two threads (`MEDIAGATE_WORKER_THREAD=true`, with workers): the main thread
 * serves HTTP (an API node: it accepts and reads tasks, runs no workers), a worker thread of the same process runs
 * the task workers, the webhook dispatcher and the retention pruner, each on a database connection of its own. A
 * Node process runs its JavaScript on one thread; this puts a second core to work on the tasks.
 *
 * - The worker thread runs the process's main script again (`process.argv[1]`: `npm start`'s bundle, the
 *   `mediagate` command); `Server.runMain` sees the thread's marker ({@link isWorkerThread}) and runs
 *   {@link workerProgram} there instead of the program it was given.
 * - The main thread builds its stack first (migrations, the first start's keys), then starts the thread and waits for
 *   its stack to be ready before it opens the port. Its stop (SIGTERM, SIGINT) asks the thread to stop (its workers hand back their leases)
 *   and waits for it; a thread that ends on its own stops the server with an error, for its supervisor to restart.
 * - Admission (engine.md "Workers"): the API thread keeps the gate; it measures the worker thread's event loop, and
 *   the worker thread's claims open and shut it (a message when a claim's lateness crosses a threshold).
 * - Wake-ups: an accepted task wakes the worker thread at once (PostgreSQL `NOTIFY`; SQLite a `BroadcastChannel`,
 *   `@mediagate/persistence/Listen`).
 * - `/metrics` on the main thread adds the worker thread's own metrics (asked for at each scrape); the operators'
 *   channel views show the worker thread's breakers, and a write of a channel makes it read the channels at once.
 * - Upstream callbacks reach the main thread's port: it writes their tasks due (`Worker.layerForwardChanges`).
 * - The thread's log lines go to the process's stdout through the main thread (Node's worker stdio).
 */
import * as Admission from "@mediagate/engine/Admission"
import type { ChannelHealthView, ChannelRuntime } from "@mediagate/vendors/ChannelStore"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads"
import * as Mediagate from "../Mediagate.js"
import * as Metrics from "../Metrics.js"
import * as IdleCollection from "./idleCollection.js"
import * as ThreadRole from "./threadRole.js"

/** The `workerData` key that marks Mediagate's worker thread. */
const marker = "@mediagate/node/worker-thread"

/**
 * The worker thread's young generation, in MB (V8's, all its semi-spaces): a sixth of what `npm start`'s
 * `--max-semi-space-size=16` gives the API thread. Its steps' objects die young; a larger young generation only
 * kept more garbage resident after a burst (bench:rss on SQLite with `MALLOC_ARENA_MAX=2`, RSS 10 s after 100,000
 * tasks: 212 MB with V8's size, 204 MB with this one; tasks/s the same within the machine's noise).
 */
const workerYoungGenerationMb = 8

/** How long the API thread waits for the worker thread's answer (metrics, a breaker, a reload of the channels). */
const answerTimeoutMs = 2_000

/** How long a stop waits for the worker thread to hand back its leases and close before it is terminated. */
const stopTimeoutMs = 30_000

/** Messages from the worker thread. */
type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "late"; readonly ms: number }
  | { readonly type: "answer"; readonly id: number; readonly answer: unknown }

/** The questions the API thread asks the worker thread. */
type Question =
  | { readonly type: "metrics" }
  | { readonly type: "health"; readonly channel: string }
  | { readonly type: "refresh" }

/** Messages to the worker thread. */
type ToWorker = { readonly type: "stop" } | { readonly type: "ask"; readonly id: number; readonly question: Question }

/**
 * `settings` in front of the config provider in place (both threads' stacks: the file secret the main thread
 * generated).
 */
export const withSettings = (settings: Readonly<Record<string, string>>): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.configProviderWith((current) =>
      Effect.succeed(Layer.setConfigProvider(
        ConfigProvider.fromJson(settings).pipe(ConfigProvider.orElse(() => current))
      ))
    )
  )

/**
 * Whether this thread is Mediagate's worker thread.
 */
export const isWorkerThread = (): boolean =>
  !isMainThread && typeof workerData === "object" && workerData !== null &&
  (workerData as Record<string, unknown>)[marker] === true

/**
 * The API thread's bridge before the worker thread runs: no utilization, no metrics, no gate yet.
 */
export const makeBridge = (): ThreadRole.ApiBridge => ({
  utilization: () => 0,
  gate: undefined,
  metrics: Effect.succeed([]),
  channelHealth: () => Effect.succeed(undefined),
  refreshChannels: Effect.void
})

/**
 * Starts the worker thread on `entry` (default the process's main script), its `settings` in front of the environment and waits until its stack is ready;
 * answers an effect that fails when the thread ends on its own. Closing the scope stops the thread.
 */
export const spawn = (
  bridge: ThreadRole.ApiBridge,
  options: { readonly entry?: string; readonly settings?: Readonly<Record<string, string>> } = {}
): Effect.Effect<Effect.Effect<never, Mediagate.StartError>, Mediagate.StartError, Scope.Scope> =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<never, Mediagate.StartError>()
    const ready = yield* Deferred.make<void, Mediagate.StartError>()
    let stopping = false
    const worker = yield* Effect.acquireRelease(
      Effect.try({
        try: () =>
          new Worker(options.entry ?? process.argv[1] ?? "", {
            workerData: { [marker]: true, settings: options.settings ?? {} },
            resourceLimits: { maxYoungGenerationSizeMb: workerYoungGenerationMb }
          }),
        catch: (cause) =>
          new Mediagate.StartError({ message: `cannot start the worker thread: ${String(cause)}`, retryable: false })
      }),
      (worker) =>
        Effect.async<void>((resume) => {
          stopping = true
          const timer = setTimeout(() => void worker.terminate(), stopTimeoutMs)
          worker.once("exit", () => {
            clearTimeout(timer)
            resume(Effect.void)
          })
          worker.postMessage({ type: "stop" } satisfies ToWorker)
        })
    )
    const pending = new Map<number, (answer: unknown) => void>()
    let nextId = 0
    worker.on("message", (message: FromWorker) => {
      if (message.type === "late") bridge.gate?.report(message.ms)
      else if (message.type === "answer") pending.get(message.id)?.(message.answer)
      else if (message.type === "ready") Deferred.unsafeDone(ready, Effect.void)
      else {
        const error = new Mediagate.StartError({ message: `worker thread: ${message.message}`, retryable: false })
        Deferred.unsafeDone(ready, Effect.fail(error))
      }
    })
    /** The worker thread's answer to `question`, or undefined when none came within {@link answerTimeoutMs}. */
    const ask = (question: Question) =>
      Effect.async<unknown>((resume) => {
        const id = nextId++
        const done = (answer: unknown) => {
          pending.delete(id)
          clearTimeout(timer)
          resume(Effect.succeed(answer))
        }
        const timer = setTimeout(() => done(undefined), answerTimeoutMs)
        pending.set(id, done)
        worker.postMessage({ type: "ask", id, question } satisfies ToWorker)
        return Effect.sync(() => {
          pending.delete(id)
          clearTimeout(timer)
        })
      })
    worker.on("error", (cause) => {
      const error = new Mediagate.StartError({ message: `worker thread failed: ${cause.message}`, retryable: false })
      Deferred.unsafeDone(ready, Effect.fail(error))
      Deferred.unsafeDone(ended, Effect.fail(error))
    })
    worker.on("exit", (code) => {
      if (stopping) return
      const error = new Mediagate.StartError({
        message: `the worker thread ended (exit code ${code})`,
        retryable: false
      })
      Deferred.unsafeDone(ready, Effect.fail(error))
      Deferred.unsafeDone(ended, Effect.fail(error))
    })
    let last = worker.performance.eventLoopUtilization()
    bridge.utilization = () => {
      const now = worker.performance.eventLoopUtilization()
      const window = worker.performance.eventLoopUtilization(now, last)
      last = now
      return window.utilization
    }
    bridge.metrics = Effect.map(ask({ type: "metrics" }), (answer) => (answer ?? []) as ReadonlyArray<Metrics.Series>)
    bridge.channelHealth = (channel) =>
      Effect.map(ask({ type: "health", channel }), (answer) => answer as ChannelHealthView | undefined)
    bridge.refreshChannels = Effect.asVoid(ask({ type: "refresh" }))
    yield* Deferred.await(ready)
    yield* Effect.logInfo("workers: on a worker thread (MEDIAGATE_WORKER_THREAD)")
    return Deferred.await(ended)
  })

/**
 * The worker thread's program: the stack's ports with its workers (`Mediagate.layerPortsConfig`: no HTTP service, no
 * dashboard), ready once built; it reports its claims
 * to the API thread's gate when their lateness crosses a threshold, answers metrics requests, and stops when asked.
 */
export const workerProgram: Effect.Effect<void, Mediagate.StartError> = Effect.gen(function*() {
  const port = parentPort
  if (port === null) return yield* new Mediagate.StartError({ message: "not a worker thread", retryable: false })
  const post = (message: FromWorker) => port.postMessage(message)
  const options: Admission.AdmissionOptions = yield* Effect.orElseSucceed(Admission.config, () => ({}))
  const closeMs = options.closeMs ?? 200
  const openMs = options.openMs ?? 50
  // a report changes the gate only when it shuts it (late > closeMs) or opens it (late ≤ openMs): only those go
  let lastClass = "open"
  const report = (ms: number) => {
    const kind = ms > closeMs ? "shut" : ms <= openMs ? "open" : lastClass
    if (kind !== lastClass) post({ type: "late", ms })
    lastClass = kind
  }
  yield* Effect.orElse(IdleCollection.scoped, () => Effect.void)
  const stopped = yield* Deferred.make<void>()
  let channels: ChannelRuntime["Type"] | undefined
  const answer = (question: Question): Effect.Effect<unknown> => {
    if (question.type === "metrics") return Effect.sync(() => Metrics.seriesOf(Metric.unsafeSnapshot()))
    if (channels === undefined) return Effect.succeed(undefined)
    return question.type === "health" ? channels.health(question.channel) : Effect.as(channels.refresh, true)
  }
  port.on("message", (message: ToWorker) => {
    if (message.type === "stop") return Deferred.unsafeDone(stopped, Effect.void)
    Effect.runFork(
      Effect.map(answer(message.question), (value) => post({ type: "answer", id: message.id, answer: value }))
    )
  })
  const role: ThreadRole.Role = { _tag: "Workers", report, channels: (runtime) => (channels = runtime) }
  // the settings the main thread passed (a generated file secret) in front of the environment
  const settings = (workerData as { readonly settings?: Record<string, string> }).settings ?? {}
  // the stack's ports and background processes, without the HTTP service the API thread serves; a start that fails
  // on a database outage is tried again as the server's own start is
  const stack = Mediagate.layerPortsConfig.pipe(
    Layer.provide(Layer.succeed(ThreadRole.ThreadRole, role)),
    Layer.provide(withSettings(settings))
  )
  const built = Layer.build(stack).pipe(
    Effect.tapError((error) =>
      error.retryable
        ? Effect.logWarning(`worker thread: could not start (${error.message}); trying again`)
        : Effect.void
    ),
    Effect.retry(Schedule.whileInput(Mediagate.defaultRetry, (error: Mediagate.StartError) => error.retryable))
  )
  yield* Effect.raceFirst(
    Effect.flatMap(built, () => Effect.zipRight(Effect.sync(() => post({ type: "ready" })), Effect.never)),
    Deferred.await(stopped)
  ).pipe(Effect.tapError((error) => Effect.sync(() => post({ type: "failed", message: error.message }))))
  port.removeAllListeners("message")
}).pipe(
  Effect.scoped,
  // the stack is closed: the thread ends now, whatever handles of its libraries are left (its lines are flushed on
  // exit); in a worker thread `process.exit` ends the thread, not the process
  Effect.zipRight(Effect.sync(() => process.exit(0)))
)
