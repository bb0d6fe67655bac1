/**
 * The engine's `Upstream` routed by the environment alone: `test` keys always run on the simulated upstream; `live`
 * tasks run on the transport configured for their family (`MEDIAGATE_UPSTREAM_VENDOR1` ... `_VENDOR8`: `simulated`,
 * the default, or `relay`), for embedders and tests that keep no channel store (the server routes over channels:
 * `Channels.ts`, which reads the same settings for its default channels). {@link measured} is what both add around
 * their routing: input checks and their charges, and the durations of finished tasks for `Estimates`.
 *
 * @since 0.1.0
 */
import { Catalog, Families, Family, Tracing } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { Upstream } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Rec from "effect/Record"
import * as Stream from "effect/Stream"
import { Estimates } from "./Estimates.js"
import * as MediaInputs from "./MediaInputs.js"
import { PriceBook } from "./Prices.js"
import { RelayUpstream } from "./Relay.js"
import type { FetchOptions } from "./RemoteMedia.js"
import { SimulatedUpstream } from "./Simulated.js"

/**
 * The transports the environment can route a family to (`MEDIAGATE_UPSTREAM_<FAMILY>`): the two of the transport
 * registry that need no channel store, and the channel router's default channels.
 *
 * @since 0.1.0
 * @category constants
 */
export const environmentTransports = ["simulated", "relay"] as const

/**
 * A transport the environment can route a family to.
 *
 * @since 0.1.0
 * @category models
 */
export type Transport = (typeof environmentTransports)[number]

/**
 * The transport of each family (absent: simulated).
 *
 * @since 0.1.0
 * @category models
 */
export type Transports = Partial<Readonly<Record<Catalog.TaskFamily, Transport>>>

/**
 * Settings of the input-media checks run before a task is submitted (none: no checks).
 *
 * @since 0.1.0
 * @category models
 */
export interface InputChecks {
  readonly allowPrivate: boolean
  readonly timeout?: Duration.DurationInput
  /** DNS resolver (tests). */
  readonly lookup?: FetchOptions["lookup"]
}

/**
 * A span of an upstream call (family, model, the channel when routed, transport), made only while the tracer is on.
 *
 * @since 0.1.0
 * @category utils
 */
export const traced = (name: string, task: TaskRecord, transport: string, channel?: string) =>
  Tracing.spanWith(name, () => ({
    kind: "client",
    attributes: {
      "mediagate.family": task.provider,
      "mediagate.model": task.model,
      "mediagate.task_id": task.id,
      ...(channel === undefined ? {} : { "mediagate.channel": channel }),
      "mediagate.transport": transport
    }
  }))

/**
 * What every routed upstream adds around its routing: with `inputChecks`, a task's remote input media are fetched
 * and checked before it is submitted (`INVALID_INPUT_MEDIA` on a breach) and the charges its family measures on them
 * (priced from the `PriceBook`) are returned with the submission; the durations of finished jobs feed `Estimates`
 * (the upstream's own measure when it gives one).
 *
 * @since 0.1.0
 * @category utils
 */
export const measured = (
  routed: Upstream["Type"],
  inputChecks: InputChecks | undefined,
  families: Family.Registry
): Effect.Effect<Upstream["Type"], never, Estimates | PriceBook> =>
  Effect.gen(function*() {
    const estimates = yield* Estimates
    const table = yield* PriceBook
    return Upstream.of({
      ...routed,
      submit: (task) =>
        inputChecks === undefined ? routed.submit(task) : Effect.gen(function*() {
          const measuredInputs = yield* MediaInputs.checkTask(task, inputChecks, families)
          const submitted = yield* routed.submit(task)
          const request = { model: task.model, input: task.input }
          const charges = Family.familyOf(families, task.endpoint)?.charges(
            task.endpoint,
            request,
            measuredInputs,
            table
          )
          return { ...submitted, charges: charges ?? [] }
        }),
      poll: (task, jobId) =>
        routed.poll(task, jobId).pipe(Effect.tap((state) => {
          const startedAt = task.startedAt
          return state._tag === "Succeeded" && startedAt !== null
            ? Effect.flatMap(
              Clock.currentTimeMillis,
              (now) => estimates.observe(task.model, state.seconds ?? (now - startedAt) / 1000)
            )
            : Effect.void
        }))
    })
  })

const usesRelay = (transports: Transports) => Catalog.taskFamilies.some((family) => transports[family] === "relay")

/** The routed upstream over the simulated transport and, when given, the relay. */
const make = (
  transports: Transports,
  relay: Option.Option<RelayUpstream["Type"]>,
  inputChecks: InputChecks | undefined,
  families: Family.Registry
) =>
  Effect.gen(function*() {
    const simulated = yield* SimulatedUpstream
    if (usesRelay(transports) && Option.isNone(relay)) {
      return yield* Effect.dieMessage(
        "a family uses the relay, but the upstream was built without one (Upstreams.layerRelayed)"
      )
    }
    const transportOf = (task: TaskRecord) =>
      task.environment === "live" && transports[task.provider] === "relay" && Option.isSome(relay)
        ? relay.value
        : simulated
    const all = Option.isSome(relay) ? [simulated, relay.value] : [simulated]
    const spanned = (name: string, task: TaskRecord) =>
      traced(name, task, transportOf(task) === simulated ? "simulated" : "relay")
    return yield* measured(
      Upstream.of({
        notifiesChanges: all.every((transport) => transport.notifiesChanges),
        changes: Stream.mergeAll(all.map((transport) => transport.changes), { concurrency: "unbounded" }),
        pollDelay: (polls, task) => transportOf(task).pollDelay?.(polls, task),
        submit: (task) => transportOf(task).submit(task).pipe(spanned("Upstream.submit", task)),
        poll: (task, jobId) => transportOf(task).poll(task, jobId).pipe(spanned("Upstream.poll", task)),
        cancel: (task, jobId) => transportOf(task).cancel(task, jobId).pipe(spanned("Upstream.cancel", task))
      }),
      inputChecks,
      families
    )
  })

/**
 * The routed upstream on the simulated transport (a family routed to the relay is a defect here: use
 * {@link layerRelayed}). With `inputChecks`, a task's remote input media are fetched and checked before it is
 * submitted (`INVALID_INPUT_MEDIA` on a breach), and the charges its family measures on them (priced from the
 * `PriceBook`) are returned with the submission.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  transports: Transports = {},
  inputChecks?: InputChecks,
  families: Family.Registry = Families.registry
): Layer.Layer<Upstream, never, SimulatedUpstream | Estimates | PriceBook> =>
  Layer.effect(Upstream, make(transports, Option.none(), inputChecks, families))

/**
 * {@link layer} with the families of `transports` routed to the relay: `live` tasks go to the `RelayUpstream`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRelayed = (
  transports: Transports,
  inputChecks?: InputChecks,
  families: Family.Registry = Families.registry
): Layer.Layer<Upstream, never, SimulatedUpstream | Estimates | PriceBook | RelayUpstream> =>
  Layer.effect(
    Upstream,
    Effect.flatMap(RelayUpstream, (relay) => make(transports, Option.some(relay), inputChecks, families))
  )

/**
 * The transports from Effect `Config` (`MEDIAGATE_UPSTREAM_VENDOR1` ...).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Transports> = Config.all(
  Rec.map(
    Catalog.models,
    (_, family): Config.Config<Transport> =>
      Config.literal(...environmentTransports)(`MEDIAGATE_UPSTREAM_${family.toUpperCase()}`).pipe(
        Config.withDefault("simulated" as const)
      )
  )
)
