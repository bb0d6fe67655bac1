/**
 * The engine's `Upstream`, routed per task: `test` keys always run on the simulated upstream; `live` tasks run on
 * the transport configured for their family (decisions.md §8: the simulated upstream is the default). It also
 * feeds `Estimates` with the actual durations of finished tasks.
 *
 * Transports so far: `simulated`. (The relay transport is the next step of issue 4.)
 *
 * @since 0.1.0
 */
import { Upstream } from "@mediagate/engine/Upstream"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Estimates } from "./Estimates.js"
import { SimulatedUpstream } from "./Simulated.js"

/** The routed upstream. */
export const layer: Layer.Layer<Upstream, never, SimulatedUpstream | Estimates> = Layer.effect(
  Upstream,
  Effect.gen(function*() {
    const simulated = yield* SimulatedUpstream
    const estimates = yield* Estimates
    const transportOf = (_task: { readonly environment: "live" | "test" }) => simulated
    return Upstream.of({
      notifiesChanges: simulated.notifiesChanges,
      changes: simulated.changes,
      submit: (task) => transportOf(task).submit(task),
      poll: (task, jobId) =>
        transportOf(task).poll(task, jobId).pipe(
          Effect.tap((state) =>
            state._tag === "Succeeded" && task.startedAt !== null
              ? estimates.observe(task.model, (Date.now() - task.startedAt) / 1000)
              : Effect.void
          )
        ),
      cancel: (task, jobId) => transportOf(task).cancel(task, jobId)
    })
  })
)
