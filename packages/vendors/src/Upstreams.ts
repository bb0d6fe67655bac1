/**
 * The engine's `Upstream`, routed per task: `test` keys always run on the simulated upstream; `live` tasks run on
 * the transport configured for their family (`MEDIAGATE_UPSTREAM_VENDOR1` ... `_VENDOR8`: `simulated`, the default,
 * or `relay`). It also feeds `Estimates` with the actual durations of finished tasks.
 *
 * @since 0.1.0
 */
import { Catalog } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { Upstream } from "@mediagate/engine/Upstream"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Estimates } from "./Estimates.js"
import { RelayUpstream } from "./Relay.js"
import { SimulatedUpstream } from "./Simulated.js"

/** A transport. */
export type Transport = "simulated" | "relay"

/** The transport of each family (absent: simulated). */
export type Transports = Partial<Readonly<Record<Catalog.TaskFamily, Transport>>>

/** The routed upstream. A family routed to the relay needs a `RelayUpstream` in context. */
export const layer = (transports: Transports = {}): Layer.Layer<Upstream, never, SimulatedUpstream | Estimates> =>
  Layer.effect(
    Upstream,
    Effect.gen(function*() {
      const simulated = yield* SimulatedUpstream
      const estimates = yield* Estimates
      const relay = yield* Effect.serviceOption(RelayUpstream)
      const relayed = Catalog.taskFamilies.filter((family) => transports[family] === "relay")
      if (relayed.length > 0 && Option.isNone(relay)) {
        return yield* Effect.dieMessage(`families ${relayed.join(", ")} use the relay, but no relay is configured`)
      }
      const transportOf = (task: TaskRecord) =>
        task.environment === "live" && transports[task.provider] === "relay" && Option.isSome(relay)
          ? relay.value
          : simulated
      const all = Option.isSome(relay) && relayed.length > 0 ? [simulated, relay.value] : [simulated]
      return Upstream.of({
        notifiesChanges: all.every((transport) => transport.notifiesChanges),
        changes: Stream.mergeAll(all.map((transport) => transport.changes), { concurrency: "unbounded" }),
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

/** The transports from Effect `Config` (`MEDIAGATE_UPSTREAM_VENDOR1` ...). */
export const config: Config.Config<Transports> = Config.all(
  Object.fromEntries(Catalog.taskFamilies.map((family) => [
    family,
    Config.literal("simulated", "relay")(`MEDIAGATE_UPSTREAM_${family.toUpperCase()}`).pipe(
      Config.withDefault("simulated" as const)
    )
  ])) as Record<Catalog.TaskFamily, Config.Config<Transport>>
)

/** The routed upstream with its transports from Effect `Config`. */
export const layerConfig: Layer.Layer<Upstream, ConfigError.ConfigError, SimulatedUpstream | Estimates> = Layer
  .unwrapEffect(Effect.map(config, layer))
