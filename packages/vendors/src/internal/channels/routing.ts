/**
 * The router's pure rules: the environment's default channels, which channels serve a task and in what order it
 * tries them, the cost of a job priced by the second, and a channel's poll rate on this node.
 */
import { type Catalog, Families, type Family } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import type { JobState } from "@mediagate/engine/Upstream"
import * as Ids from "@mediagate/persistence/Ids"
import * as Duration from "effect/Duration"
import type { ChannelConfig } from "../../ChannelStore.js"
import type * as Relay from "../../Relay.js"
import type * as Upstreams from "../../Upstreams.js"

/** The environment's default channel ids. */
export const defaultIds = { simulated: "default:simulated", relay: "default:relay" } as const

/** The default channels of the environment's routing (see the module comment). */
export const defaultChannels = (
  transports: Upstreams.Transports,
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
/** Default polls per second of one channel from one node (set `poll_rate` to what the upstream allows). */
export const defaultPollRate = 100

/**
 * How long a poll counts against its channel's rate, ms: a second, and 100 ms for the time between the count and the
 * upstream's receipt (a busy event loop, a connection opened), which would otherwise let more than the rate reach
 * the upstream within one of its seconds.
 */
export const pollRateWindowMs = 1100

/**
 * A channel's poll rate on this node: at most `perSecond` polls in any {@link pollRateWindowMs}, all of them at once
 * if they come at once (a sliding window: the times of the last `perSecond` polls, in a ring; a poll goes when the
 * oldest of them is that old). A poll that finds no room is put off to when there will be, spread over the time the
 * rate needs for the polls put off in the last second (at least a second), instead of waiting in a worker slot.
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
    const free = this.times[this.oldest]! + pollRateWindowMs
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
