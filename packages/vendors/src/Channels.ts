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
import { Catalog, Families, type Family, Metrics, Services } from "@mediagate/contract"
import { ChannelSlots } from "@mediagate/engine/ChannelSlots"
import { TaskLifecycle } from "@mediagate/engine/TaskLifecycle"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type FindResult, type JobState, markedAt, Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as Ids from "@mediagate/persistence/Ids"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { performance } from "node:perf_hooks"
import { type BreakerOptions, Breakers, type BreakerState } from "./Breaker.js"
import { type ChannelConfig, ChannelRuntime, ChannelStore, type ChannelTransport } from "./ChannelStore.js"
import * as Durations from "./Durations.js"
import type { Estimates } from "./Estimates.js"
import { hostOf } from "./internal/upstreamHttp.js"
import * as Mapping from "./Mapping.js"
import type { PriceBook } from "./Prices.js"
import * as Relay from "./Relay.js"
import * as ResultCopy from "./ResultCopy.js"
import { ResultCopier } from "./ResultCopy.js"
import { SimulatedUpstream } from "./Simulated.js"
import * as Transport from "./Transport.js"
import * as Transports from "./transports/index.js"
import type { InputChecks, Transports as FamilyTransports } from "./Upstreams.js"
import * as Upstreams from "./Upstreams.js"
import { UrlSigner } from "./UrlSigner.js"

/** Router settings. */
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

/** The environment's default channel ids. */
export const defaultIds = { simulated: "default:simulated", relay: "default:relay" } as const

/** The default channels of the environment's routing (see the module comment). */
export const defaultChannels = (
  transports: FamilyTransports,
  relay: Relay.RelayOptions | undefined,
  /** When the process read its environment (epoch ms): the channels' creation and change time. */
  at = 0,
  /** The families routed: each is served by one of the default channels. */
  families: Family.Registry = Families.registry
): ReadonlyArray<ChannelConfig> => {
  // a larger registry's families are passed through as the shipped ones (see docs/extending.md)
  const names = families.map((family) => family.name as Catalog.TaskFamily)
  const on = (transport: Upstreams.Transport) =>
    names.filter((family) => (transports[family] ?? "simulated") === transport)
  const base = {
    models: [],
    priority: 0,
    weight: 1,
    concurrency: 0,
    enabled: true,
    disabledReason: null,
    createdAt: at,
    updatedAt: at
  }
  const simulated: ChannelConfig = {
    ...base,
    id: defaultIds.simulated,
    name: "Simulated upstream (environment)",
    transport: "simulated",
    settings: {},
    credentials: {},
    families: on("simulated")
  }
  const relayed = on("relay")
  return [
    ...(simulated.families.length > 0 ? [simulated] : []),
    ...(relayed.length > 0 && relay !== undefined
      ? [{
        ...base,
        id: defaultIds.relay,
        name: "Relay (environment)",
        transport: "relay" as const,
        settings: {
          baseUrl: relay.baseUrl,
          ...(relay.timeout === undefined ? {} : { timeoutMs: Duration.toMillis(relay.timeout) })
        },
        credentials: { apiKey: relay.apiKey },
        families: relayed
      }]
      : [])
  ]
}

/** The file-signing key a callback URL of a channel and task is signed under. */
const callbackKey = (channelId: string, taskId: string) => `callbacks/${channelId}/${taskId}`

/** Largest result file copied by default: 2 GiB. */
const defaultMaxResultBytes = 2 * 1024 ** 3

/**
 * A job's end with its cost: the seconds the upstream reported priced at the channel's `cost_per_second` when the
 * upstream reported no cost of its own.
 */
export const priced = (channel: ChannelConfig, state: JobState): JobState => {
  const perSecond = channel.settings.costPerSecond
  if (state._tag !== "Succeeded" && state._tag !== "Failed") return state
  if (perSecond === undefined || state.seconds === undefined || state.costMicros !== undefined) return state
  return { ...state, costMicros: Math.round(state.seconds * perSecond * 1_000_000) }
}

/** Whether a channel serves a task's model. */
export const serves = (channel: ChannelConfig, task: Pick<TaskRecord, "provider" | "model">): boolean =>
  channel.families.includes(task.provider) && (channel.models.length === 0 || channel.models.includes(task.model))

/** A number in (0, 1) drawn from a string, the same everywhere. */
const unit = (text: string): number => (Ids.hash32(text) + 0.5) / 4294967296

/**
 * The order in which a task tries `channels`: priority first (higher first), then a weighted order per task
 * (Efraimidis–Spirakis: key u^(1/weight), u drawn from the task and channel ids), so that the first choice among
 * equals falls on each channel in proportion to its weight.
 */
export const routeOrder = <C>(
  taskId: string,
  channels: ReadonlyArray<C>,
  /** A channel's id, priority and weight. */
  of: (channel: C) => Pick<ChannelConfig, "id" | "priority" | "weight">
): Array<C> =>
  channels
    .map((channel) => {
      const { id, priority, weight } = of(channel)
      return { channel, priority, key: Math.log(unit(`${taskId}/${id}`)) / Math.max(1, weight) }
    })
    .sort((a, b) => b.priority - a.priority || b.key - a.key)
    .map(({ channel }) => channel)

/** A channel the router can call. */
interface Live {
  readonly config: ChannelConfig
  readonly transport: Upstream["Type"]
  readonly stored: boolean
  /** Checks the upstream's own signature of a callback (absent: the transport's upstream signs none). */
  readonly verifyCallback?: Transport.Built["verifyCallback"]
  /** The job a genuine callback names (see {@link Transport.Built}). */
  readonly jobOfCallback?: Transport.Built["jobOfCallback"]
  /** Whether the channel's upstream reports the end of every job (callbacks): polls are then a safety net. */
  readonly notifies: boolean
  /** How the job of an uncertain submit is found on the channel (its transport's). */
  readonly submitRecovery: Transport.SubmitRecovery
  /**
   * The channel's poll rate (see {@link PollRate}); none for the simulated upstream unless its settings give one (it
   * runs in this process: there is no upstream API to spare).
   */
  readonly pollRate: PollRate | undefined
}

/** Default polls per second of one channel from one node (set `poll_rate` to what the upstream allows). */
export const defaultPollRate = 100

/**
 * A channel's poll rate on this node: at most `perSecond` polls in any second, all of them at once if they come at
 * once (a sliding window: the times of the last `perSecond` polls, in a ring; a poll goes when the oldest of them is
 * a second old). A poll that finds no room is put off to when there will be, spread over the time the rate needs for
 * the polls put off in the last second (at least a second), instead of waiting in a worker slot.
 */
export class PollRate {
  /** When the last `perSecond` polls went (epoch ms), oldest at `oldest`. */
  private readonly times: Float64Array
  private oldest = 0
  /** Polls put off since `refusedSince`. */
  private refused = 0
  private refusedSince = -Infinity
  constructor(readonly perSecond: number) {
    this.times = new Float64Array(Math.max(1, Math.floor(perSecond))).fill(-Infinity)
  }
  /** 0 when a poll may go now (and counts it), else how long to wait, ms. */
  take(now: number): number {
    const free = this.times[this.oldest]! + 1000
    if (free > now) {
      if (now - this.refusedSince >= 1000) {
        this.refusedSince = now
        this.refused = 0
      }
      this.refused++
      const spread = Math.max(1000, (this.refused / this.perSecond) * 1000)
      return Math.ceil(free - now + Math.random() * spread)
    }
    this.times[this.oldest] = now
    this.oldest = (this.oldest + 1) % this.times.length
    return 0
  }
}

const breakerGauge: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 }

const unavailable = (message: string, retryAfterMs?: number) =>
  new UpstreamError({
    message,
    retryable: true,
    kind: "unavailable",
    ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(100, Math.round(retryAfterMs)) })
  })

/** How a failed call counts: a refusal of the request (an answer), or a failure of the channel. */
const failureKind = (error: UpstreamError): "refused" | "auth" | "unavailable" =>
  error.kind ?? (error.retryable ? "unavailable" : "refused")

/** Builds the routed upstream and its runtime (defaults and breakers for the admin views). */
export const make = (options: ChannelsOptions = {}) =>
  Effect.gen(function*() {
    const simulated = yield* SimulatedUpstream
    const copier = yield* ResultCopier
    const store = yield* ChannelStore
    const slots = yield* ChannelSlots
    const lifecycle = yield* TaskLifecycle
    const signer = yield* UrlSigner
    const allowPrivate = options.inputChecks?.allowPrivate ?? false
    /** Tasks an upstream's callback woke. */
    const woken = yield* PubSub.unbounded<string>()
    const authLimit = Math.max(1, options.authFailures ?? 3)
    const slotWaitMs = Duration.toMillis(options.slotWait ?? "1 second")
    const submitWaitMs = Duration.toMillis(options.submitWait ?? "5 minutes")
    const transportRegistry = options.transportRegistry ?? Transports.registry
    const breakers = new Breakers(options.breaker)
    /**
     * The breakers' state changes, as gauge values and log lines (through the program's logger), reported by the fiber
     * whose call caused them, right after it told or asked the breaker.
     */
    const reportTransitions = Effect.suspend(() =>
      Effect.forEach(breakers.transitions(), (transition) => {
        Metrics.channelBreakerState.record(breakerGauge[transition.to], transition.id)
        const line = `channel ${transition.id}: circuit ${transition.from} -> ${transition.to} (${transition.reason})`
        return transition.to === "open" ? Effect.logWarning(line) : Effect.logInfo(line)
      }, { discard: true })
    )
    /** Authentication failures in a row per channel. */
    const authFailures = new Map<string, number>()

    /** The URL an upstream calls back for a task of a channel: signed for the channel and task, until after the deadline. */
    const callbackUrlOf = (channelId: string) => (task: TaskRecord) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // upstreams retry callbacks for hours (fal: up to 2 h)
        const ttlSeconds = Math.ceil(Math.max(0, task.deadlineAt - now) / 1000) + 3 * 3600
        const signed = new URL(yield* signer.sign(callbackKey(channelId, task.id), ttlSeconds))
        const base = signed.href.slice(0, signed.href.indexOf("/files/"))
        const query = `expires=${signed.searchParams.get("expires")}&signature=${signed.searchParams.get("signature")}`
        return `${base}/callbacks/v1/${encodeURIComponent(channelId)}/${encodeURIComponent(task.id)}?${query}`
      })

    /**
     * What a channel's transport is built from; none when the transport needs a base URL and the channel gives none
     * (and its transport has no default). The base URL is empty for a transport that takes none.
     */
    const contextOf = (config: ChannelConfig, definition: Transport.Any): Transport.Context | undefined => {
      const fallback = typeof definition.baseUrl === "object" ? definition.baseUrl.default : undefined
      const given = config.settings.baseUrl ?? fallback
      if (definition.baseUrl !== "none" && given === undefined) return undefined
      const baseUrl = definition.baseUrl === "none" || given === undefined ? "" : given.replace(/\/+$/, "")
      const callbacks = definition.callbacks && config.settings.callbacks !== false
      return {
        channel: config,
        baseUrl,
        mapping: Mapping.compile(config.settings.mapping),
        copier,
        policy: {
          trustedHosts: [...(baseUrl === "" ? [] : [hostOf(baseUrl)]), ...(config.settings.resultHosts ?? [])],
          allowPrivate,
          timeoutMs: config.settings.timeoutMs ?? 30_000,
          maxBytes: config.settings.maxResultBytes ?? defaultMaxResultBytes,
          lookup: options.inputChecks?.lookup
        },
        callbackUrl: callbacks ? callbackUrlOf(config.id) : () => Effect.succeed(undefined)
      }
    }

    /**
     * A channel's transport from its registry entry (or the `adapters` option); none when the registry does not know
     * its transport or the channel lacks what the transport needs.
     */
    const build = (config: ChannelConfig, stored: boolean): Effect.Effect<Option.Option<Live>> =>
      Effect.gen(function*() {
        const definition = Transport.find(transportRegistry, config.transport)
        const adapter = options.adapters?.[config.transport]
        const context = adapter !== undefined || definition === undefined ? undefined : contextOf(config, definition)
        const built = adapter !== undefined
          ? Option.some<Transport.Built>({ upstream: yield* adapter(config) })
          : definition === undefined || context === undefined
          ? Option.none<Transport.Built>()
          : yield* definition.build(context).pipe(
            Effect.provideService(SimulatedUpstream, simulated),
            Effect.provideService(ResultCopier, copier)
          )
        const inProcess = definition?.submitRecovery === "in-process"
        return Option.map(built, (built): Live => ({
          config,
          transport: built.upstream,
          stored,
          ...(built.verifyCallback === undefined ? {} : { verifyCallback: built.verifyCallback }),
          ...(built.jobOfCallback === undefined ? {} : { jobOfCallback: built.jobOfCallback }),
          notifies: built.upstream.notifiesChanges ||
            (definition?.callbacks === true && config.settings.callbacks !== false),
          submitRecovery: definition?.submitRecovery ?? "wait",
          // a transport in this process has no upstream API to spare: its polls are limited only when asked
          pollRate: inProcess && config.settings.pollRate === undefined
            ? undefined
            : new PollRate(config.settings.pollRate ?? defaultPollRate)
        }))
      })

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

    /** Times a call to a channel, counts its outcome and tells the breaker. */
    const called = <A>(
      live: Live,
      task: TaskRecord,
      call: "submit" | "poll",
      effect: Effect.Effect<A, UpstreamError>
    ) =>
      Effect.suspend(() => {
        const started = performance.now()
        const id = live.config.id
        return effect.pipe(
          Effect.tapBoth({
            onSuccess: () =>
              Effect.flatMap(Clock.currentTimeMillis, (now) => {
                breakers.success(id, now)
                authFailures.delete(id)
                Metrics.channelRequests.record(1, id, call, "ok")
                return reportTransitions
              }),
            onFailure: (error) =>
              Effect.flatMap(Clock.currentTimeMillis, (now) => {
                const kind = failureKind(error)
                if (kind === "refused") {
                  breakers.success(id, now)
                  Metrics.channelRequests.record(1, id, call, "ok")
                  return reportTransitions
                }
                breakers.failure(id, now, error.message)
                Metrics.channelRequests.record(1, id, call, kind)
                return kind === "auth"
                  ? Effect.zipRight(reportTransitions, authFailed(live, error.message))
                  : reportTransitions
              })
          }),
          Effect.ensuring(
            Effect.sync(() => Metrics.channelDuration.record((performance.now() - started) / 1000, id, call))
          ),
          Upstreams.traced(`Upstream.${call}`, task, live.config.transport, id)
        )
      })

    /** Counts an authentication failure; the `authLimit`-th in a row disables a stored channel. */
    const authFailed = (live: Live, message: string) =>
      Effect.suspend(() => {
        const id = live.config.id
        const count = (authFailures.get(id) ?? 0) + 1
        authFailures.set(id, count)
        if (count < authLimit) return Effect.void
        if (!live.stored) {
          return Effect.logError(
            `channel ${id}: ${count} authentication failures in a row (${message}); fix the environment's credentials`
          )
        }
        authFailures.delete(id)
        const reason = `disabled automatically after ${count} authentication failures in a row: ${message}`
        return store.update(id, { enabled: false, disabledReason: reason }).pipe(
          Effect.zipRight(Effect.logWarning(`channel ${id} (${live.config.name}) ${reason}`)),
          Effect.zipRight(reload),
          Effect.catchAllCause((cause) => Effect.logWarning(`channel ${id}: disabling it failed`, cause))
        )
      })

    const submitRouted = (task: TaskRecord) =>
      Effect.gen(function*() {
        const route = candidates(task)
        if (route.length === 0) {
          return yield* new UpstreamError({
            message: `no enabled upstream channel serves model ${task.model}`,
            retryable: false
          })
        }
        let full = false
        let openUntil = Infinity
        let last: UpstreamError | undefined
        for (const live of route) {
          const id = live.config.id
          const now = yield* Clock.currentTimeMillis
          if (!breakers.available(id, now)) {
            openUntil = Math.min(openUntil, breakers.retryAt(id, now))
            continue
          }
          if (live.config.concurrency > 0) {
            const reserved = yield* slots.reserveChannel(task.id, task.fence, id, live.config.concurrency).pipe(
              Effect.mapError((error) => unavailable(`channels: reserving a slot failed: ${error.message}`))
            )
            if (!reserved) {
              full = true
              continue
            }
          }
          const admitted = breakers.admit(id, now)
          yield* reportTransitions
          if (admitted._tag === "Refused") {
            openUntil = Math.min(openUntil, admitted.retryAt)
            continue
          }
          const submitted = yield* Effect.either(
            called(live, task, "submit", live.transport.submit({ ...task, channelId: id }))
          )
          if (submitted._tag === "Right") return { jobId: submitted.right.jobId, channelId: id }
          const error = submitted.left
          if (failureKind(error) === "refused") return yield* error
          // the request may have made a job here: no failover, the worker looks for that job on this channel — unless
          // the channel is failing (its breaker opened) and another can take the task: as with a job whose channel
          // dies, a job it may have made is left there rather than the task waiting for it
          const failing = breakers.view(id).breaker === "open" && elsewhere(task, yield* Clock.currentTimeMillis)
          if (error.uncertain === true && !failing) {
            return yield* new UpstreamError({
              message: `channel ${id}: ${error.message}`,
              retryable: true,
              kind: "unavailable",
              uncertain: true,
              channelId: id
            })
          }
          last = error
          if (error.uncertain === true) {
            yield* Effect.logWarning(
              `task ${task.id}: channel ${id} is failing; a job its lost submit made is left there`
            )
          }
          Metrics.channelFailovers.record(1, id, "submit")
          yield* Effect.logWarning(
            `task ${task.id}: submit on channel ${id} failed (${error.message}); trying the next channel`
          )
        }
        const now = yield* Clock.currentTimeMillis
        if (last !== undefined) {
          return yield* unavailable(`every channel serving ${task.model} failed; the last: ${last.message}`)
        }
        if (full) {
          return yield* unavailable(`every channel serving ${task.model} is at its concurrency limit`, slotWaitMs)
        }
        return yield* unavailable(`every channel serving ${task.model} has its circuit open`, openUntil - now)
      })

    /** Another channel could take the task now (for giving up a job on a failed channel). */
    const elsewhere = (task: TaskRecord, now: number) =>
      candidates(task).some((live) => live.config.id !== task.channelId && breakers.available(live.config.id, now))

    const pollRouted = (task: TaskRecord, jobId: string): Effect.Effect<JobState, UpstreamError> =>
      Effect.gen(function*() {
        const live = find(task.channelId)
        if (live === undefined) {
          return { _tag: "Lost", message: `channel ${task.channelId} is gone` } as const
        }
        const id = live.config.id
        // the poll a finished copy caused: answered from the copy, without asking the upstream again
        const copied = copier.ended(task, jobId)
        if (copied !== undefined) return priced(live.config, ResultCopy.jobState(copied))
        const now = yield* Clock.currentTimeMillis
        const rate = live.pollRate
        const wait = rate === undefined ? 0 : rate.take(now)
        if (rate !== undefined && wait > 0) {
          return yield* unavailable(`channel ${id}: ${rate.perSecond} polls a second reached`, wait)
        }
        const admitted = breakers.admit(id, now)
        yield* reportTransitions
        if (admitted._tag === "Refused") {
          if (elsewhere(task, now)) {
            Metrics.channelFailovers.record(1, id, "poll")
            return { _tag: "Lost", message: `channel ${id} has its circuit open` } as const
          }
          return yield* unavailable(`channel ${id} has its circuit open`, admitted.retryAt - now)
        }
        const polled = yield* Effect.either(called(live, task, "poll", live.transport.poll(task, jobId)))
        if (polled._tag === "Right") return priced(live.config, polled.right)
        const error = polled.left
        if (failureKind(error) === "refused") return yield* error
        const after = yield* Clock.currentTimeMillis
        if (breakers.view(id).breaker === "open" && elsewhere(task, after)) {
          Metrics.channelFailovers.record(1, id, "poll")
          return { _tag: "Lost", message: `channel ${id} failed: ${error.message}` } as const
        }
        // the job may still be there: poll again after the backoff
        return yield* new UpstreamError({ message: error.message, retryable: true, kind: "unavailable" })
      })

    /**
     * The job an uncertain submit of a task may have made on its channel: the transport's lookup (idempotency key,
     * our id in the job's metadata) or a callback it noticed; `Unknown` (wait `submitWait`) where it has neither.
     */
    const findRouted = (task: TaskRecord, since: number): Effect.Effect<FindResult, UpstreamError> =>
      Effect.gen(function*() {
        if (task.channelId == null) return yield* findOnRoute(task, since)
        const live = find(task.channelId)
        // the channel is gone: its job cannot be followed, the task goes elsewhere
        if (live === undefined) return { _tag: "NotFound" } as const
        // the channel is failing (its breaker open) while another can take the task: its job is not looked for, the
        // task goes elsewhere (as a job whose channel dies)
        const now = yield* Clock.currentTimeMillis
        if (breakers.view(live.config.id).breaker === "open" && elsewhere(task, now)) {
          return { _tag: "NotFound" } as const
        }
        if (live.transport.find === undefined) return lookless(live)
        const found = yield* live.transport.find(task, since).pipe(
          Upstreams.traced("Upstream.find", task, live.config.transport, live.config.id)
        )
        return found._tag === "Unknown" ? { _tag: "Unknown", waitMs: submitWaitMs } as const : found
      })

    /**
     * What a channel without a lookup knows of a job a submit may have made: nothing (`Unknown`: the task waits), but
     * the simulator runs in this process and never leaves a job unrecorded behind a lost answer (`NotFound`).
     */
    const lookless = (live: Live): FindResult =>
      live.submitRecovery === "in-process"
        ? { _tag: "NotFound" }
        : { _tag: "Unknown", waitMs: submitWaitMs }

    /**
     * The job of a task whose submit began on a channel not recorded (its worker died while submitting): looked for
     * on each channel of the task's route, in order; `Unknown` when one of them cannot tell and none has it.
     */
    const findOnRoute = (task: TaskRecord, since: number) =>
      Effect.gen(function*() {
        let unknown = false
        for (const live of candidates(task)) {
          const on = { ...task, channelId: live.config.id }
          if (live.transport.find === undefined) {
            if (lookless(live)._tag === "Unknown") unknown = true
            continue
          }
          const found = yield* live.transport.find(on, since).pipe(
            Upstreams.traced("Upstream.find", on, live.config.transport, live.config.id)
          )
          if (found._tag === "Found") return { ...found, channelId: live.config.id }
          if (found._tag === "Unknown") unknown = true
        }
        return unknown ? { _tag: "Unknown", waitMs: submitWaitMs } as const : { _tag: "NotFound" } as const
      })

    /** The transport of a task submitted before channels existed (no channel recorded): the environment's. */
    const legacy = (task: TaskRecord) =>
      (options.transports ?? {})[task.provider] === "relay" ? defaultLive.get(defaultIds.relay)?.transport : undefined

    const upstream = yield* Upstreams.measured(
      Upstream.of({
        notifiesChanges: false,
        notifies: (task) => {
          if (task.environment === "test") return true
          const live = find(task.channelId)
          return live !== undefined ? live.notifies : (legacy(task) ?? simulated).notifiesChanges
        },
        pollDelay: (_polls, task) =>
          task.environment === "test" ? undefined : find(task.channelId)?.config.settings.pollIntervalMs,
        changes: Stream.mergeAll([simulated.changes, copier.changes, Stream.fromPubSub(woken)], {
          concurrency: "unbounded"
        }),
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
          const live = byId.get(callback.channelId)
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

/** What the router needs. */
export type Requirements =
  | SimulatedUpstream
  | Estimates
  | PriceBook
  | ChannelStore
  | ChannelSlots
  | TaskLifecycle
  | ResultCopier
  | UrlSigner

/** What the router provides: the routed upstream, its runtime for the admin views, and the callbacks' port. */
export type Provided = Upstream | ChannelRuntime | Services.UpstreamCallbacks

/** The routed upstream, its runtime and the upstream callbacks as a layer. */
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

/** The router with its settings from Effect `Config`. */
export const layerConfig: Layer.Layer<Provided, ConfigError.ConfigError, Requirements> = Layer.unwrapEffect(
  Effect.map(config, (options) => layer(options))
)
