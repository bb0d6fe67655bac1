/**
 * What the parts of the router share: the process's services, the breakers and authentication failures per channel,
 * the environment's default channels and the stored ones (read again every `reloadEvery` and after a write), and the
 * channels that may serve a task, in its routing order. Built once per router by {@link make}.
 */
import { Families, Metrics } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Breakers, type BreakerState } from "../../Breaker.js"
import type { ChannelsOptions } from "../../Channels.js"
import { ChannelStore } from "../../ChannelStore.js"
import { ResultCopier } from "../../ResultCopy.js"
import { SimulatedUpstream } from "../../Simulated.js"
import { UrlSigner } from "../../UrlSigner.js"
import { type Live, makeBuild } from "./live.js"
import { defaultChannels, routeOrder, serves } from "./routing.js"

const breakerGauge: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 }
/** Builds the shared state: reads the stored channels once and keeps reading them. */
export const make = (options: ChannelsOptions) =>
  Effect.gen(function*() {
    const simulated = yield* SimulatedUpstream
    const copier = yield* ResultCopier
    const store = yield* ChannelStore
    const signer = yield* UrlSigner
    const breakers = new Breakers(options.breaker)
    /**
     * The breakers' state changes, as gauge values and log lines (through the program's logger), reported by the fiber
     * whose call caused them, right after it told or asked the breaker.
     */
    const reportTransitions = Effect.suspend(() => {
      const transitions = breakers.transitions()
      // every routed call reports: most have nothing to report
      return transitions.length === 0 ? Effect.void : Effect.forEach(transitions, (transition) => {
        Metrics.channelBreakerState.record(breakerGauge[transition.to], transition.id)
        const line = `channel ${transition.id}: circuit ${transition.from} -> ${transition.to} (${transition.reason})`
        return transition.to === "open" ? Effect.logWarning(line) : Effect.logInfo(line)
      }, { discard: true })
    })
    /** Authentication failures in a row per channel. */
    const authFailures = new Map<string, number>()
    const build = makeBuild({ options, simulated, copier, signer })

    const defaults = defaultChannels(
      options.transports ?? {},
      options.relay,
      yield* Clock.currentTimeMillis,
      options.families ?? Families.registry
    )
    const defaultLive = yield* Effect.map(
      Effect.forEach(defaults, (config) => build(config, false)),
      (built) =>
        new Map(built.flatMap((live) => Option.isSome(live) ? [[live.value.config.id, live.value] as const] : []))
    )
    /** The stored channels, oldest first, and by id. */
    let stored: ReadonlyArray<Live> = []
    let byId = new Map<string, Live>()

    /** Reads the stored channels, keeping the transport of a channel that did not change. */
    const reload = Effect.gen(function*() {
      const configs = yield* store.list
      const next = yield* Effect.forEach(configs, (config) => {
        const known = byId.get(config.id)
        if (known !== undefined && known.config.updatedAt === config.updatedAt) {
          return Effect.succeed(Option.some(known))
        }
        // a new or changed channel starts with a fresh breaker (new settings, new upstream)
        if (known !== undefined) breakers.reset(config.id)
        authFailures.delete(config.id)
        return build(config, true)
      })
      stored = next.flatMap((live) => Option.isSome(live) ? [live.value] : [])
      byId = new Map(stored.map((live) => [live.config.id, live]))
    })
    /** {@link reload}, a failure logged (the channels read last stay in use). */
    const refresh = reload.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("channels: reading the channels failed", cause))
    )
    yield* refresh
    yield* Effect.forkScoped(
      Stream.merge(store.changes, Stream.fromSchedule(Schedule.spaced(options.reloadEvery ?? "5 seconds"))).pipe(
        Stream.runForEach(() => refresh)
      )
    )

    const find = (id: string | null | undefined): Live | undefined =>
      id == null ? undefined : byId.get(id) ?? defaultLive.get(id)

    /**
     * The channels that may serve a task, in its routing order (enabled ones; the defaults only when no stored
     * channel serves the model), and whether any channel serves the model at all.
     */
    const candidates = (task: TaskRecord): ReadonlyArray<Live> => {
      const storedServing = stored.filter((live) => serves(live.config, task))
      const pool = storedServing.length > 0
        ? storedServing.filter((live) => live.config.enabled)
        : [...defaultLive.values()].filter((live) => serves(live.config, task))
      const ordered = routeOrder(task.id, pool, (live) => live.config)
      // a channel an earlier claim of this task reserved comes first
      const reserved = ordered.findIndex((live) => live.config.id === task.channelId)
      if (reserved > 0) ordered.unshift(...ordered.splice(reserved, 1))
      return ordered
    }

    return {
      options,
      simulated,
      copier,
      store,
      breakers,
      reportTransitions,
      authFailures,
      defaults,
      defaultLive,
      reload,
      refresh,
      find,
      candidates,
      /** A stored channel by id (the defaults take no callbacks). */
      storedById: (id: string): Live | undefined => byId.get(id)
    }
  })

/** The shared state of one router. */
export type State = Effect.Effect.Success<ReturnType<typeof make>>
