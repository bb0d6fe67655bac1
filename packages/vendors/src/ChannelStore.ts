/**
 * The storage port of upstream channels (docs/channels.md): the channels the router reads, the operator's writes
 * (admin API, CLI, operator console), and the router's automatic disable after repeated authentication failures.
 * Credentials are handed in and out in the clear here: implementations store them encrypted (`ChannelSecrets`).
 *
 * @since 0.1.0
 */
import type { Catalog, Channel } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Stream from "effect/Stream"

/**
 * How a channel reaches its upstream: the contract's `channelTransports`, the names of the transport registry.
 *
 * @since 0.1.0
 * @category models
 */
export type ChannelTransport = Channel.ChannelTransport

/**
 * How one of our models maps onto the upstream (the contract's `ModelMapping`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelMapping {
  readonly target: string
  readonly input?: string
  readonly output?: string
}

/**
 * A channel as the router and the admin service use it (credentials decrypted).
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelConfig {
  /** `ch_` + ULID; `default` for the channel built from the environment (never stored). */
  readonly id: string
  readonly name: string
  readonly transport: ChannelTransport
  readonly settings: {
    /** relay: base URL of the other service. */
    readonly baseUrl?: string
    /** Longest time one upstream call may take, ms. */
    readonly timeoutMs?: number
    /** Per served model: the upstream target and the input/output expressions (JSONata). */
    readonly mapping?: Readonly<Record<string, ModelMapping>>
    /** Hosts besides the base URL's whose result URLs may be private addresses. */
    readonly resultHosts?: ReadonlyArray<string>
    /** Largest result file copied, bytes. */
    readonly maxResultBytes?: number
    /** How often a job is polled when no callback comes, ms. */
    readonly pollIntervalMs?: number
    /** Most polls per second from one node. */
    readonly pollRate?: number
    /** What a second of the upstream's reported run time costs, USD (the usage report). */
    readonly costPerSecond?: number
    /** Whether to ask the upstream for completion callbacks (default true). */
    readonly callbacks?: boolean
    /** comfyui: the workflows by name. */
    readonly workflows?: Readonly<Record<string, Channel.ComfyWorkflow>>
  }
  readonly credentials: {
    /** relay: the other service's API key. */
    readonly apiKey?: Redacted.Redacted<string>
  }
  /**
   * Stored channels: `…` and the last 4 characters of the stored API key (only `…` for a key shorter than 12
   * characters), kept in clear beside the ciphertext; null without credentials. Set even when the credentials
   * cannot be decrypted (they are stored, just unreadable). Absent: derive it from `credentials`.
   */
  readonly credentialsHint?: string | null
  /** Task families served (at least one). */
  readonly families: ReadonlyArray<Catalog.TaskFamily>
  /** Models served; empty: every model of `families`. */
  readonly models: ReadonlyArray<string>
  /** Higher first. */
  readonly priority: number
  /** Share among healthy channels of the same priority (≥ 1). */
  readonly weight: number
  /** Most tasks in flight at once across every node; 0: no limit. */
  readonly concurrency: number
  readonly enabled: boolean
  /** Why it was disabled automatically (or by the operator), if it was. */
  readonly disabledReason: string | null
  /** Epoch ms. */
  readonly createdAt: number
  /** Epoch ms; changes on every write (the router rebuilds a channel's transport when it changes). */
  readonly updatedAt: number
}

/**
 * What a new channel is made of.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelInput {
  readonly name: string
  readonly transport: ChannelTransport
  readonly settings?: ChannelConfig["settings"]
  readonly credentials?: ChannelConfig["credentials"]
  readonly families: ReadonlyArray<Catalog.TaskFamily>
  readonly models?: ReadonlyArray<string>
  readonly priority?: number
  readonly weight?: number
  readonly concurrency?: number
  readonly enabled?: boolean
  /** Why it starts disabled (with `enabled: false`; ignored otherwise). */
  readonly disabledReason?: string | null
}

/**
 * A change of a channel: the fields given are replaced (`credentials: null` removes them); never its transport.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelPatch extends Partial<Omit<ChannelInput, "transport" | "credentials" | "disabledReason">> {
  readonly credentials?: ChannelConfig["credentials"] | null
  /** Set with `enabled: false` by the router (auto-disable); cleared by `enabled: true`. */
  readonly disabledReason?: string | null
}

/**
 * The channel storage port.
 *
 * @since 0.1.0
 * @category services
 */
export class ChannelStore extends Context.Tag("@mediagate/vendors/ChannelStore")<ChannelStore, {
  /** Every stored channel, oldest first. */
  readonly list: Effect.Effect<ReadonlyArray<ChannelConfig>, PersistenceError>
  readonly get: (id: string) => Effect.Effect<Option.Option<ChannelConfig>, PersistenceError>
  readonly create: (input: ChannelInput) => Effect.Effect<ChannelConfig, PersistenceError>
  /** None when there is no such channel. */
  readonly update: (id: string, patch: ChannelPatch) => Effect.Effect<Option.Option<ChannelConfig>, PersistenceError>
  /** False when there is no such channel. */
  readonly remove: (id: string) => Effect.Effect<boolean, PersistenceError>
  /**
   * Signals a write made through this store object (the router reloads at once; other processes see writes at
   * their next periodic reload).
   */
  readonly changes: Stream.Stream<void>
}>() {}

/**
 * A channel's health as one node sees it (its circuit breaker).
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelHealthView {
  readonly breaker: "closed" | "open" | "half_open"
  readonly consecutiveFailures: number
  /** Epoch ms the breaker last opened, while it is not closed. */
  readonly openedAt: number | null
  /** The last failure this node saw on the channel. */
  readonly lastError: string | null
}

/**
 * The router's side that the admin views read (implemented by `Channels.layer`): the environment's default channels
 * and this node's breakers.
 *
 * @since 0.1.0
 * @category services
 */
export class ChannelRuntime extends Context.Tag("@mediagate/vendors/ChannelRuntime")<ChannelRuntime, {
  /**
   * The channels built from the environment (`MEDIAGATE_UPSTREAM_<FAMILY>`, `MEDIAGATE_RELAY_*`): ids
   * `default:simulated` and `default:relay`, never stored, read-only. They serve a model only when no stored channel
   * does.
   */
  readonly defaults: ReadonlyArray<ChannelConfig>
  /** This node's breaker of a channel (closed with no failures for a channel it never used). */
  readonly health: (id: string) => Effect.Effect<ChannelHealthView>
  /**
   * Reads the stored channels again now (the admin service calls it after a write, so that this process routes
   * by the change at once; other processes read them every few seconds).
   */
  readonly refresh: Effect.Effect<void>
}>() {}
