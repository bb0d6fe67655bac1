/**
 * The engine's `Upstream` routed over upstream channels (docs/channels.md).
 *
 * - **Channels**: the operator's channels (`ChannelStore`: database, admin API, CLI, console), reloaded every
 *   `reloadEvery` and at once after a write through this process's store; and the environment's default channels
 *   (`default:simulated`, `default:relay` from `MEDIAGATE_UPSTREAM_<FAMILY>` and `MEDIAGATE_RELAY_*`), which serve a
 *   model only when no stored channel does. `test` tasks always run on the simulated upstream, on no channel.
 * - **Transports**: a channel's upstream is built by its transport's entry in the transport registry
 *   (`transports/index.ts`, or {@link ChannelsOptions.transportRegistry}), whose facts (callbacks, how a lost submit's
 *   job is found, base URL and its default) the router follows; a channel whose transport it does not know is not
 *   routed.
 * - **Routing**: the enabled channels serving the task's model, highest priority first; among equal priorities a
 *   weighted order drawn per task (weighted sampling without replacement, keyed by the task and channel ids: the
 *   same task meets the channels in the same order on every node and after a crash). A channel reserved by an
 *   earlier claim of the task comes first (the same idempotency key finds the job if that submit got through).
 * - **Failover**: a submit that fails for the channel's health (refused connection, 429) or its credentials moves to
 *   the next channel; one whose answer was lost (timeout, reset, 5xx: the job may exist) stays on its channel, where
 *   the worker looks for the job before submitting again (`find`, docs/channels.md "Submits without duplicates").
 *   The task is charged once (at acceptance) whichever channel runs it, and each channel gets the idempotency key
 *   `<task>.<channel>` (a retried submit never makes a second job there). A refusal of the request itself (invalid
 *   input, content policy) fails the task without failover. A job whose channel fails while it runs (its breaker
 *   opens) is given up and submitted again elsewhere (`Lost`).
 * - **Health**: a circuit breaker per channel and process (`Breaker.ts`); a concurrency limit per channel across
 *   every node (`ChannelSlots.reserveChannel`); after `authFailures` authentication failures in a row a
 *   stored channel is disabled with the reason, for an operator to see and fix.
 *
 * @since 0.1.0
 */
import { Catalog, Families, type Family, Services } from "@mediagate/contract"
import type { ChannelSlots } from "@mediagate/engine/ChannelSlots"
import { TaskLifecycle } from "@mediagate/engine/TaskLifecycle"
import { markedAt, Upstream } from "@mediagate/engine/Upstream"
import { retriedCallbackPollDelayMs } from "@mediagate/engine/Worker"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { BreakerOptions } from "./Breaker.js"
import { type ChannelConfig, ChannelRuntime, type ChannelStore, type ChannelTransport } from "./ChannelStore.js"
import * as Durations from "./Durations.js"
import type { Estimates } from "./Estimates.js"
import * as ChannelCalls from "./internal/channels/calls.js"
import { callbackKey } from "./internal/channels/live.js"
import * as ChannelRoutes from "./internal/channels/routes.js"
import * as ChannelState from "./internal/channels/state.js"
import type { PriceBook } from "./Prices.js"
import * as Relay from "./Relay.js"
import type { ResultCopier } from "./ResultCopy.js"
import type { SimulatedUpstream } from "./Simulated.js"
import type * as Transport from "./Transport.js"
import type { InputChecks, Transports as FamilyTransports } from "./Upstreams.js"
import * as Upstreams from "./Upstreams.js"
import { UrlSigner } from "./UrlSigner.js"

export {
  /**
   * The default channels of the environment's routing (see the module comment).
   *
   * @since 0.1.0
   * @category utils
   */
  defaultChannels,
  /**
   * The environment's default channel ids.
   *
   * @since 0.1.0
   * @category constants
   */
  defaultIds,
  /**
   * Default polls per second of one channel from one node (set `poll_rate` to what the upstream allows).
   *
   * @since 0.1.0
   * @category constants
   */
  defaultPollRate,
  /**
   * A channel's poll rate on this node: at most `perSecond` polls in any second, all of them at once if they come at
   * once (a sliding window: the times of the last `perSecond` polls, in a ring; a poll goes when the oldest of them is
   * a second old). A poll that finds no room is put off to when there will be, spread over the time the rate needs for
   * the polls put off in the last second (at least a second), instead of waiting in a worker slot.
   *
   * @since 0.1.0
   * @category models
   */
  PollRate,
  /**
   * A job's end with its cost: the seconds the upstream reported priced at the channel's `cost_per_second` when the
   * upstream reported no cost of its own.
   *
   * @since 0.1.0
   * @category utils
   */
  priced,
  /**
   * The order in which a task tries `channels`: priority first (higher first), then a weighted order per task
   * (Efraimidis–Spirakis: key u^(1/weight), u drawn from the task and channel ids), so that the first choice among
   * equals falls on each channel in proportion to its weight.
   *
   * @since 0.1.0
   * @category utils
   */
  routeOrder,
  /**
   * Whether a channel serves a task's model.
   *
   * @since 0.1.0
   * @category utils
   */
  serves
} from "./internal/channels/routing.js"

/**
 * Router settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelsOptions {
  /** The environment's routing per family (absent: simulated): the default channels. */
  readonly transports?: FamilyTransports
  /** The environment's relay target, for `default:relay`. */
  readonly relay?: Relay.RelayOptions
  /** Checks of remote input media before a task is submitted (none: no checks). */
  readonly inputChecks?: InputChecks
  /** The families routed (default: the shipped registry); the environment's default channels serve each of them. */
  readonly families?: Family.Registry
  /**
   * The transports channels may use (default: the shipped registry, `transports/index.ts`). A stored channel whose
   * transport is not in it is not routed.
   */
  readonly transportRegistry?: Transport.Registry
  readonly breaker?: BreakerOptions
  /** Authentication failures in a row that disable a stored channel. Default 3. */
  readonly authFailures?: number
  /** How often the channels are read again (other processes' writes). Default 5 s. */
  readonly reloadEvery?: Duration.DurationInput
  /** How long a task waits when every channel serving it is at its concurrency limit. Default 1 s. */
  readonly slotWait?: Duration.DurationInput
  /**
   * How long after an uncertain submit (its answer lost) a task waits before it is submitted again, on a channel
   * whose upstream offers no way to find the job that submit may have made (no idempotency key, no lookup by our
   * id) unless a callback names it first. Default 5 minutes (docs/channels.md, "Submits without duplicates").
   */
  readonly submitWait?: Duration.DurationInput
  /**
   * Builds the upstream of a channel of a transport instead of its registry entry's builder (tests, embedders that
   * wrap a transport). A channel's settings and decrypted credentials are its input; the entry's other facts
   * (callbacks, submit recovery) still hold.
   */
  readonly adapters?: Partial<Record<ChannelTransport, (channel: ChannelConfig) => Effect.Effect<Upstream["Type"]>>>
}

/**
 * Builds the routed upstream and its runtime (defaults and breakers for the admin views).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ChannelsOptions = {}) =>
  Effect.gen(function*() {
    const lifecycle = yield* TaskLifecycle
    const signer = yield* UrlSigner
    /**
     * Tasks whose job changed: an upstream's callback woke them, the simulated upstream ended their job, or their copy
     * ended. One hub that the others are forwarded into: a callback costs one publish, not a stage of a merged stream.
     */
    const woken = yield* PubSub.unbounded<string>()
    const state = yield* ChannelState.make(options)
    const { breakers, copier, defaults, find, refresh, simulated } = state
    for (const source of [simulated.changes, copier.changes]) {
      yield* Effect.forkScoped(Stream.runForEachChunk(source, (ids) => PubSub.publishAll(woken, ids)))
    }
    const { called } = ChannelCalls.make(state)
    const { findRouted, legacy, pollRouted, submitRouted } = yield* ChannelRoutes.make(state, called)

    const upstream = yield* Upstreams.measured(
      Upstream.of({
        notifiesChanges: false,
        notifies: (task) => {
          if (task.environment === "test") return true
          const live = find(task.channelId)
          return live !== undefined ? live.notifies : (legacy(task) ?? simulated).notifiesChanges
        },
        // a stored channel's own interval; else, when its upstream calls back (and retries its callbacks), the slower
        // safety net of such upstreams; else the engine's schedule
        pollDelay: (polls, task) => {
          if (task.environment === "test") return simulated.pollDelay?.(polls, task)
          const live = find(task.channelId)
          if (live === undefined) {
            // submitted before channels existed: its family's transport of the environment
            return task.channelId == null && legacy(task) === undefined ? simulated.pollDelay?.(polls, task) : undefined
          }
          return live.transport.pollDelay?.(polls, task) ?? live.config.settings.pollIntervalMs ??
            (live.callsBack ? retriedCallbackPollDelayMs(polls, task) : undefined)
        },
        changes: Stream.fromPubSub(woken),
        submit: (task) =>
          task.environment === "test"
            ? simulated.submit(task).pipe(Upstreams.traced("Upstream.submit", task, "simulated"))
            : submitRouted(task),
        find: (task, since) =>
          task.environment === "test" ? Effect.succeed({ _tag: "NotFound" }) : findRouted(task, since),
        poll: (task, jobId) =>
          Effect.suspend(() => {
            if (task.environment === "test") {
              return simulated.poll(task, jobId).pipe(Upstreams.traced("Upstream.poll", task, "simulated"))
            }
            if (task.channelId == null) {
              // submitted before channels existed: on the environment's transport of its family
              const transport = legacy(task) ?? simulated
              return transport.poll(task, jobId).pipe(
                Upstreams.traced("Upstream.poll", task, transport === simulated ? "simulated" : "relay")
              )
            }
            return pollRouted(task, jobId)
          }),
        cancel: (task, jobId) =>
          Effect.suspend(() => {
            // an uncertain submit's marker names no job
            if (markedAt(jobId) !== undefined) return Effect.void
            if (task.environment === "test") return simulated.cancel(task, jobId)
            const transport = task.channelId == null ? legacy(task) ?? simulated : find(task.channelId)?.transport
            return transport === undefined
              ? Effect.void
              : transport.cancel(task, jobId).pipe(
                Upstreams.traced("Upstream.cancel", task, transport === simulated ? "simulated" : "relay")
              )
          })
      }),
      options.inputChecks,
      options.families ?? Families.registry
    )

    const runtime = ChannelRuntime.of({
      defaults,
      health: (id) => Effect.sync(() => breakers.view(id)),
      refresh
    })

    const callbacks = Services.UpstreamCallbacks.of({
      receive: (callback) =>
        Effect.gen(function*() {
          const live = state.storedById(callback.channelId)
          if (live === undefined) return "unknown" as const
          const signed = yield* signer.verify(
            callbackKey(callback.channelId, callback.taskId),
            callback.expires,
            callback.signature
          )
          if (!signed) return "refused" as const
          if (live.verifyCallback !== undefined && !(yield* live.verifyCallback(callback.body, callback.headers))) {
            yield* Effect.logWarning(
              `channel ${live.config.id}: a callback for ${callback.taskId} failed the upstream's signature`
            )
            return "refused" as const
          }
          // the job it names is recorded on a task whose job is not known yet (its submit's answer lost, or its
          // worker died while submitting): whichever worker claims the task next polls that job
          const jobOf = live.jobOfCallback?.(callback.body)
          if (jobOf !== undefined) {
            yield* lifecycle.noteJob(callback.taskId, live.config.id, jobOf).pipe(Effect.catchAllCause((cause) =>
              Effect.logWarning(
                `channel ${live.config.id}: recording the job a callback for ${callback.taskId} named failed`,
                cause
              )
            ))
          }
          yield* PubSub.publish(woken, callback.taskId)
          return "accepted" as const
        })
    })
    return { upstream, runtime, callbacks }
  })
/**
 * What the router needs.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements =
  | SimulatedUpstream
  | Estimates
  | PriceBook
  | ChannelStore
  | ChannelSlots
  | TaskLifecycle
  | ResultCopier
  | UrlSigner

/**
 * What the router provides: the routed upstream, its runtime for the admin views, and the callbacks' port.
 *
 * @since 0.1.0
 * @category models
 */
export type Provided = Upstream | ChannelRuntime | Services.UpstreamCallbacks

/**
 * The routed upstream, its runtime and the upstream callbacks as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ChannelsOptions = {}): Layer.Layer<Provided, never, Requirements> =>
  Layer.scopedContext(
    Effect.map(make(options), ({ callbacks, runtime, upstream }) =>
      Context.make(Upstream, upstream).pipe(
        Context.add(ChannelRuntime, runtime),
        Context.add(Services.UpstreamCallbacks, callbacks)
      ))
  )

/** A count setting: an integer, 1 or more. */
const atLeastOne = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: "must be 1 or more", validation: (n) => n >= 1 })
  )

/**
 * The router's settings from Effect `Config`: the environment's default channels (`MEDIAGATE_UPSTREAM_<FAMILY>`;
 * `MEDIAGATE_RELAY_URL`/`_API_KEY` when a family uses the relay), input checks (private targets only under
 * `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`), `MEDIAGATE_CHANNEL_BREAKER_FAILURES` (5),
 * `MEDIAGATE_CHANNEL_BREAKER_COOLDOWN` (`30s`), `MEDIAGATE_CHANNEL_AUTH_FAILURES` (3) and
 * `MEDIAGATE_CHANNEL_SUBMIT_WAIT` (`5m`: {@link ChannelsOptions.submitWait}).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Effect.Effect<ChannelsOptions, ConfigError.ConfigError> = Effect.gen(function*() {
  const { allowPrivate, authFailures, cooldown, failures, submitWait, transports } = yield* Config.all({
    transports: Upstreams.config,
    allowPrivate: Config.boolean("MEDIAGATE_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
    failures: atLeastOne("MEDIAGATE_CHANNEL_BREAKER_FAILURES", 5),
    cooldown: Durations.durationConfig("MEDIAGATE_CHANNEL_BREAKER_COOLDOWN", "30s"),
    authFailures: atLeastOne("MEDIAGATE_CHANNEL_AUTH_FAILURES", 3),
    submitWait: Durations.durationConfig("MEDIAGATE_CHANNEL_SUBMIT_WAIT", "5m")
  })
  const usesRelay = Catalog.taskFamilies.some((family) => transports[family] === "relay")
  return {
    transports,
    ...(usesRelay ? { relay: yield* Relay.config } : {}),
    inputChecks: { allowPrivate },
    breaker: { failures, cooldown: Duration.millis(cooldown) },
    authFailures,
    submitWait: Duration.millis(submitWait)
  }
})

/**
 * The router with its settings from Effect `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Provided, ConfigError.ConfigError, Requirements> = Layer.unwrapEffect(
  Effect.map(config, (options) => layer(options))
)
