/**
 * What the engine suites share: a storage backend's type, the principal of a live key, a request, a wait for tasks
 * to end, and the engine (TaskService + Worker + storage + fake upstream) they run on, in real time with short
 * durations.
 */
import * as Fixtures from "@mediagate/testing/fixtures"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Billing } from "../src/Billing.js"
import * as Planner from "../src/Planner.js"
import * as ResultLinks from "../src/ResultLinks.js"
import * as TaskService from "../src/TaskService.js"
import { type Ports, TaskStorage } from "../src/TaskStorage.js"
import * as Worker from "../src/Worker.js"
import { makeFakeUpstream } from "./FakeUpstream.js"
import { makeRecordingBilling } from "./support.js"

/** A storage backend for the engine suite (real clock). */
export type EngineBackend = (billing: Layer.Layer<Billing>) => Layer.Layer<TaskStorage | Ports, unknown>

/** The principal of a live key of `acct_a` (`@mediagate/testing/fixtures`). */
export const principal = Fixtures.principal

/** A request of the suites' video model. */
export const request = (prompt: string) => ({ model: "vendor3-3", input: { prompt, aspect_ratio: "16:9" } })

/** Waits until every given task is terminal (or fails the test after `timeoutMs`). */
export const awaitTerminal = (ids: ReadonlyArray<string>, timeoutMs = 10_000) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage
    const deadline = Date.now() + timeoutMs
    while (true) {
      const tasks = yield* Effect.forEach(ids, (id) => storage.getById(id))
      const open = tasks.filter((t) =>
        Option.isNone(t) || !["succeeded", "failed", "cancelled", "expired"].includes(t.value.status)
      )
      if (open.length === 0) return tasks.map(Option.getOrThrow)
      if (Date.now() > deadline) {
        return yield* Effect.dieMessage(`${open.length} tasks not terminal: ${JSON.stringify(open.slice(0, 3))}`)
      }
      yield* Effect.sleep(20)
    }
  })

/** The engine of the suites on `backend`: `setup(options)` builds its layer, billing ledger and upstream log. */
export const engineSetup = (backend: EngineBackend) =>
(options: {
  durationMs?: number
  timeout?: Duration.DurationInput
  concurrency?: number
  callbacks?: boolean
  pollDelay?: Duration.DurationInput
  /** Wraps the storage the worker sees (e.g. to count its calls). */
  storage?: Layer.Layer<TaskStorage | Ports, never, TaskStorage>
} = {}) => {
  const billing = makeRecordingBilling()
  const upstream = makeFakeUpstream({ durationMs: options.durationMs ?? 60, callbacks: options.callbacks ?? true })
  const storage = backend(billing.layer)
  const layer = Worker.layer({
    concurrency: options.concurrency ?? 16,
    lease: "2 seconds",
    idle: "200 millis",
    pollDelay: () => options.pollDelay ?? "25 millis",
    retryDelay: () => "25 millis",
    shutdownGrace: "1 second"
  }).pipe(
    Layer.provideMerge(TaskService.layer),
    Layer.provide(ResultLinks.layerAsStored),
    Layer.provideMerge(
      Planner.layerFixed({ priceMicros: 1_000_000, estimatedSeconds: 1, timeout: options.timeout ?? "1 minute" })
    ),
    Layer.provideMerge(options.storage === undefined ? storage : Layer.provideMerge(options.storage, storage)),
    Layer.provideMerge(upstream.layer)
  )
  return { layer, ledger: billing.ledger, log: upstream.log }
}
