/**
 * Settings of the HTTP layer, from Effect `Config` (decisions.md §10) or given directly by an embedding app.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { trustedProxyProblem } from "./ClientAddress.js"

/**
 * The rate limits (security.md "Rate limits"); 0 turns a limit off. Requests are counted in fixed one-minute
 * windows; in-flight tasks are the active (`pending`, `queued`, `running`) tasks.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitSettings {
  /** Requests per minute of a key whose own limit is not set (`MEDIAGATE_RATE_LIMIT_RPM`, default 0: off). */
  readonly keyRequestsPerMinute: number
  /** Requests per minute of all keys of an account together (`MEDIAGATE_RATE_LIMIT_ACCOUNT_RPM`, default 0: off). */
  readonly accountRequestsPerMinute: number
  /** Active tasks of a key whose own limit is not set (`MEDIAGATE_MAX_IN_FLIGHT_TASKS`, default 0: off). */
  readonly keyMaxInFlightTasks: number
  /** Active tasks of an account (`MEDIAGATE_MAX_IN_FLIGHT_TASKS_ACCOUNT`, default 0: off). */
  readonly accountMaxInFlightTasks: number
  /**
   * Failed admin-token attempts per minute and client address (`MEDIAGATE_ADMIN_AUTH_FAILURES_PER_MINUTE`, default 10).
   */
  readonly adminFailuresPerMinute: number
  /** Webhook `test` and `replay` calls per minute and account (`MEDIAGATE_WEBHOOK_ACTIONS_PER_MINUTE`, default 30). */
  readonly webhookActionsPerMinute: number
  /** Open task event streams of a key on this node (`MEDIAGATE_MAX_EVENT_STREAMS`, default 32; 0: off). */
  readonly keyMaxEventStreams: number
  /** Open task event streams of this node, all keys (`MEDIAGATE_MAX_EVENT_STREAMS_NODE`, default 1000; 0: off). */
  readonly nodeMaxEventStreams: number
}

/**
 * Default rate limits: request rates and in-flight tasks off, 10 admin-token failures and 30 webhook actions a minute,
 * 32 open event streams per key and 1000 per node.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultRateLimits: RateLimitSettings = {
  keyRequestsPerMinute: 0,
  accountRequestsPerMinute: 0,
  keyMaxInFlightTasks: 0,
  accountMaxInFlightTasks: 0,
  adminFailuresPerMinute: 10,
  webhookActionsPerMinute: 30,
  keyMaxEventStreams: 32,
  nodeMaxEventStreams: 1000
}

/**
 * Settings of the HTTP layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerSettings {
  /** Largest request body in bytes (decisions.md §1: 1 MiB). */
  readonly maxBodyBytes: number
  /**
   * Addresses/CIDRs of proxies whose `X-Forwarded-For` is honoured (strict forms: `10.0.0.1`, `10.0.0.0/8`,
   * `2001:db8::/32`; anything else fails the configuration). See `ClientAddress` for how the header is read.
   */
  readonly trustedProxies: ReadonlyArray<string>
  /** Allow loopback/private webhook and media targets (development and tests). */
  readonly allowPrivateAddresses: boolean
  /** The operator token enabling `/admin/v1`; none turns the admin API off. */
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** The rate limits (see {@link RateLimitSettings}). */
  readonly rateLimits: RateLimitSettings
  /**
   * The absolute base URL the API is reached at (`MEDIAGATE_PUBLIC_BASE_URL`; with a mount prefix when mounted
   * under one): the `servers` entry of the OpenAPI documents (`Docs.ts`). None: `/`, the host serving them.
   */
  readonly publicBaseUrl?: string | undefined
  /** Task event streams: how often a stream reads its task, and the longest silence before a comment line. */
  readonly eventStreams?: EventStreamSettings | undefined
}

/**
 * The timing of task event streams (`GET /api/v1/tasks/{id}/events`).
 *
 * @since 0.1.0
 * @category models
 */
export interface EventStreamSettings {
  /** How often a stream reads its task from the database (`MEDIAGATE_EVENT_POLL_MS`, default 500). */
  readonly pollMs: number
  /** The longest silence before a `: keep-alive` line (`MEDIAGATE_EVENT_HEARTBEAT_MS`, default 15000). */
  readonly heartbeatMs: number
}

/**
 * Default event stream timing: the task read every 500 ms, a keep-alive line after 15 s of silence.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultEventStreams: EventStreamSettings = { pollMs: 500, heartbeatMs: 15_000 }

/**
 * Default settings: 1 MiB bodies, no trusted proxies, strict addresses, admin API off.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: ServerSettings = {
  maxBodyBytes: 1024 * 1024,
  trustedProxies: [],
  allowPrivateAddresses: false,
  adminToken: Option.none(),
  rateLimits: defaultRateLimits
}

/**
 * The settings of the HTTP layer.
 *
 * @since 0.1.0
 * @category services
 */
export class ServerConfig extends Context.Tag("@mediagate/server/ServerConfig")<ServerConfig, ServerSettings>() {}

/**
 * Settings given directly (missing ones take {@link defaults}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (settings: Partial<ServerSettings> = {}): Layer.Layer<ServerConfig> =>
  Layer.succeed(ServerConfig, { ...defaults, ...settings })

const list = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map((text) => text.split(",").map((s) => s.trim()).filter((s) => s.length > 0))
  )

/** An integer setting from `min` to `max` (`message` says so when it is not). */
const integerIn = (name: string, fallback: number, min: number, max: number, message: string) =>
  Config.integer(name).pipe(
    Config.validate({ message, validation: (n) => n >= min && n <= max }),
    Config.withDefault(fallback)
  )

const limit = (name: string, fallback: number) =>
  integerIn(name, fallback, 0, 1_000_000, "must be an integer from 0 (off) to 1000000")

const interval = (name: string, fallback: number) =>
  integerIn(name, fallback, 50, 600_000, "must be an integer number of milliseconds from 50 to 600000")

/**
 * The rate limits as Effect `Config` (the `MEDIAGATE_*` variables of {@link RateLimitSettings}).
 *
 * @since 0.1.0
 * @category config
 */
export const rateLimitsConfig: Config.Config<RateLimitSettings> = Config.all({
  keyRequestsPerMinute: limit("MEDIAGATE_RATE_LIMIT_RPM", defaultRateLimits.keyRequestsPerMinute),
  accountRequestsPerMinute: limit("MEDIAGATE_RATE_LIMIT_ACCOUNT_RPM", defaultRateLimits.accountRequestsPerMinute),
  keyMaxInFlightTasks: limit("MEDIAGATE_MAX_IN_FLIGHT_TASKS", defaultRateLimits.keyMaxInFlightTasks),
  accountMaxInFlightTasks: limit("MEDIAGATE_MAX_IN_FLIGHT_TASKS_ACCOUNT", defaultRateLimits.accountMaxInFlightTasks),
  adminFailuresPerMinute: limit("MEDIAGATE_ADMIN_AUTH_FAILURES_PER_MINUTE", defaultRateLimits.adminFailuresPerMinute),
  webhookActionsPerMinute: limit("MEDIAGATE_WEBHOOK_ACTIONS_PER_MINUTE", defaultRateLimits.webhookActionsPerMinute),
  keyMaxEventStreams: limit("MEDIAGATE_MAX_EVENT_STREAMS", defaultRateLimits.keyMaxEventStreams),
  nodeMaxEventStreams: limit("MEDIAGATE_MAX_EVENT_STREAMS_NODE", defaultRateLimits.nodeMaxEventStreams)
})

/**
 * The settings as Effect `Config`: the environment variables of decisions.md §10.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<ServerSettings> = Config.all({
  maxBodyBytes: Config.integer("MEDIAGATE_MAX_BODY_BYTES").pipe(Config.withDefault(defaults.maxBodyBytes)),
  trustedProxies: list("MEDIAGATE_TRUSTED_PROXIES").pipe(Config.mapOrFail((entries) => {
    const problems = entries.flatMap((entry) => trustedProxyProblem(entry) ?? [])
    return problems.length === 0
      ? Either.right(entries)
      : Either.left(ConfigError.InvalidData(["MEDIAGATE_TRUSTED_PROXIES"], problems.join("; ")))
  })),
  allowPrivateAddresses: Config.boolean("MEDIAGATE_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  adminToken: Config.option(Config.redacted("MEDIAGATE_ADMIN_TOKEN")),
  rateLimits: rateLimitsConfig,
  publicBaseUrl: Config.option(Config.string("MEDIAGATE_PUBLIC_BASE_URL")).pipe(Config.map(Option.getOrUndefined)),
  eventStreams: Config.all({
    pollMs: interval("MEDIAGATE_EVENT_POLL_MS", defaultEventStreams.pollMs),
    heartbeatMs: interval("MEDIAGATE_EVENT_HEARTBEAT_MS", defaultEventStreams.heartbeatMs)
  })
})

/**
 * The settings read from Effect `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<ServerConfig, ConfigError.ConfigError> = Layer.effect(
  ServerConfig,
  config
)
