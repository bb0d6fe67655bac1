/**
 * The contract's `AdminChannels` (`/admin/v1/channels`, the `mediagate channels` commands; docs/channels.md) on the
 * {@link ChannelStore}, the router's {@link ChannelRuntime} (the environment's default channels, this node's
 * breakers) and the task storage's load per channel.
 *
 * - **Reads**: the environment's channels (`default:*`, read-only) first, then the stored ones, oldest first; each
 *   with its health (this node's breaker, and the tasks in flight on it on every node). Credentials are never
 *   answered: only whether they are set and their hint (`…abcd`).
 * - **Validation** (`VALIDATION_ERROR`, before anything is written), by the channel's transport in the registry
 *   (`transports/index.ts`): `settings.base_url` (an absolute http(s) URL) where the transport requires it (fal and
 *   replicate default to their public APIs) and none where it takes none (the simulator), `credentials.api_key`
 *   where it is required (given, or already stored) and none where it takes none; `mapping` and `workflows` only
 *   where the transport takes them, then the transport's own rules (a comfyui mapping's targets must be stored
 *   workflows); each model must be one of the channel's families'; a mapping's expressions must compile
 *   (`Mapping.problem`, naming the model and the expression); credentials need `MEDIAGATE_CHANNEL_KEY`; the
 *   `default:*` channels come from the environment and are not changed here. `settings` given in an update are
 *   merged into the stored ones field by field.
 * - **Enabling**: `enabled: true` clears `disabled_reason`; `enabled: false` from an operator records "disabled by
 *   an operator".
 * - **Delete** is refused (`CHANNEL_IN_USE`) while tasks are in flight on the channel: disable it and wait.
 *
 * After a write this process's router reads the channels again at once (`ChannelRuntime.refresh`); other
 * processes within their reload period. Storage failures answer `SERVICE_UNAVAILABLE`.
 *
 * @since 0.1.0
 */
import { Catalog, type Channel, Errors, Money, Services, Tracing } from "@mediagate/contract"
import { ChannelSlots } from "@mediagate/engine/ChannelSlots"
import { StorageClock } from "@mediagate/engine/StorageClock"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import { toUnavailable } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { ChannelSecrets, hintOf, noKeyMessage } from "./ChannelSecrets.js"
import {
  type ChannelConfig,
  type ChannelHealthView,
  type ChannelInput,
  type ChannelPatch,
  ChannelRuntime,
  ChannelStore
} from "./ChannelStore.js"
import * as Mapping from "./Mapping.js"
import * as Transport from "./Transport.js"
import * as Transports from "./transports/index.js"

/**
 * The `disabled_reason` of a channel an operator disabled.
 *
 * @since 0.1.0
 * @category constants
 */
export const operatorReason = "disabled by an operator"

const iso = (ms: number) => new Date(ms).toISOString()

const unavailable = toUnavailable("channels: storage failure")

const invalid = (message: string) => new Errors.ValidationError({ message })

/**
 * A channel as the admin API shows it: no credentials, only whether they are set and their hint.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toChannel = (config: ChannelConfig, health: ChannelHealthView, inFlight: number): Channel.Channel => {
  const apiKey = config.credentials.apiKey
  const hint = config.credentialsHint !== undefined
    ? config.credentialsHint
    : apiKey === undefined
    ? null
    : hintOf(Redacted.value(apiKey))
  return {
    id: config.id,
    name: config.name,
    transport: config.transport,
    settings: wireSettings(config.settings),
    credentials_set: apiKey !== undefined || hint !== null,
    credentials_hint: hint,
    families: config.families,
    models: config.models,
    priority: config.priority,
    weight: config.weight,
    concurrency: config.concurrency,
    enabled: config.enabled,
    disabled_reason: config.disabledReason,
    health: {
      breaker: health.breaker,
      consecutive_failures: health.consecutiveFailures,
      opened_at: health.openedAt === null ? null : iso(health.openedAt),
      last_error: health.lastError,
      in_flight: inFlight
    },
    created_at: iso(config.createdAt),
    updated_at: iso(config.updatedAt)
  }
}

/**
 * A base URL as a relay channel takes it: absolute, http or https, without user or password.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkBaseUrl = (value: string): string | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return "settings.base_url: must be an absolute http or https URL"
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return "settings.base_url: must be an absolute http or https URL"
  }
  if (url.username !== "" || url.password !== "") {
    return "settings.base_url: must not hold a user or password (the API key goes in credentials.api_key)"
  }
  return undefined
}

/** What a channel will be after a write, for validation. */
interface Shape {
  readonly transport: ChannelConfig["transport"]
  readonly settings: ChannelConfig["settings"]
  /** Whether it will have credentials (given, or kept). */
  readonly credentials: boolean
  readonly families: ReadonlyArray<Catalog.TaskFamily>
  readonly models: ReadonlyArray<string>
}

const hostPattern =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$/i

/**
 * The first rule `shape` breaks (see the module's comment), by the transports of `registry`.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkShape = (shape: Shape, registry: Transport.Registry = Transports.registry): string | undefined => {
  const { settings, transport } = shape
  const definition = Transport.find(registry, transport)
  if (definition === undefined) return `transport: ${transport} is not a transport`
  const a = Transport.aChannel(transport)
  if (definition.baseUrl === "none") {
    if (settings.baseUrl !== undefined) return `settings.base_url: ${a} takes no base_url`
  } else {
    if (settings.baseUrl === undefined && definition.baseUrl === "required") {
      return `settings.base_url: required for ${a} (the upstream's absolute http or https URL)`
    }
    const url = settings.baseUrl === undefined ? undefined : checkBaseUrl(settings.baseUrl)
    if (url !== undefined) return url
  }
  if (definition.apiKey === "none" && shape.credentials) return `credentials: ${a} takes no credentials`
  if (definition.apiKey === "required" && !shape.credentials) return `credentials.api_key: required for ${a}`
  const served = new Set<string>(shape.families.flatMap((family) => Catalog.models[family]))
  const foreign = shape.models.filter((model) => !served.has(model))
  if (foreign.length > 0) {
    return `models: ${foreign.join(", ")} ${foreign.length === 1 ? "is not a model" : "are not models"} of ` +
      `${shape.families.join(", ")}`
  }
  const serves = (model: string) => shape.models.length === 0 ? served.has(model) : shape.models.includes(model)
  const mapping = Mapping.problem(settings.mapping, serves)
  if (mapping !== undefined) return mapping
  if (settings.mapping !== undefined && !definition.mapping) return `settings.mapping: ${a} takes no mapping`
  if (settings.workflows !== undefined && !definition.workflows) {
    const takers = registry.filter((other) => other.workflows).map((other) => Transport.aChannel(other.name))
    return `settings.workflows: only ${takers.join(" or ")} takes workflows`
  }
  const own = definition.check?.(settings)
  if (own !== undefined) return own
  const badHost = (settings.resultHosts ?? []).find((host) => !hostPattern.test(host))
  if (badHost !== undefined) return `settings.result_hosts: ${badHost} is not a host name`
  return undefined
}

const unique = <A>(values: ReadonlyArray<A>): ReadonlyArray<A> => [...new Set(values)]

/** The wire settings as the store keeps them. */
const settingsOf = (settings: Channel.ChannelSettings | undefined): ChannelConfig["settings"] => ({
  ...(settings?.base_url === undefined ? {} : { baseUrl: settings.base_url.trim() }),
  ...(settings?.timeout_ms === undefined ? {} : { timeoutMs: settings.timeout_ms }),
  ...(settings?.mapping === undefined ? {} : { mapping: settings.mapping }),
  ...(settings?.result_hosts === undefined
    ? {}
    : { resultHosts: settings.result_hosts.map((host) => host.toLowerCase()) }),
  ...(settings?.max_result_bytes === undefined ? {} : { maxResultBytes: settings.max_result_bytes }),
  ...(settings?.poll_interval_ms === undefined ? {} : { pollIntervalMs: settings.poll_interval_ms }),
  ...(settings?.poll_rate === undefined ? {} : { pollRate: settings.poll_rate }),
  ...(settings?.callbacks === undefined ? {} : { callbacks: settings.callbacks }),
  ...(settings?.cost_per_second === undefined ? {} : { costPerSecond: settings.cost_per_second }),
  ...(settings?.workflows === undefined ? {} : { workflows: settings.workflows })
})

/**
 * The stored settings as the admin API shows them.
 *
 * @since 0.1.0
 * @category utils
 */
export const wireSettings = (settings: ChannelConfig["settings"]): Channel.ChannelSettings => ({
  ...(settings.baseUrl === undefined ? {} : { base_url: settings.baseUrl }),
  ...(settings.timeoutMs === undefined ? {} : { timeout_ms: settings.timeoutMs }),
  ...(settings.mapping === undefined ? {} : { mapping: settings.mapping }),
  ...(settings.resultHosts === undefined ? {} : { result_hosts: settings.resultHosts }),
  ...(settings.maxResultBytes === undefined ? {} : { max_result_bytes: settings.maxResultBytes }),
  ...(settings.pollIntervalMs === undefined ? {} : { poll_interval_ms: settings.pollIntervalMs }),
  ...(settings.pollRate === undefined ? {} : { poll_rate: settings.pollRate }),
  ...(settings.callbacks === undefined ? {} : { callbacks: settings.callbacks }),
  ...(settings.costPerSecond === undefined ? {} : { cost_per_second: settings.costPerSecond }),
  ...(settings.workflows === undefined ? {} : { workflows: settings.workflows })
})

const credentialsOf = (credentials: Channel.ChannelCredentials): ChannelConfig["credentials"] => ({
  apiKey: Redacted.make(credentials.api_key)
})

/**
 * The message refusing a write to a default channel.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEnvironment = (id: string, change: "changed" | "deleted") =>
  `channel ${id} comes from the environment (MEDIAGATE_UPSTREAM_<FAMILY>, MEDIAGATE_RELAY_URL, ` +
  `MEDIAGATE_RELAY_API_KEY) and cannot be ${change} here: change the environment, or add a channel that serves ` +
  `its models (docs/channels.md)`

/**
 * What the admin service is built on.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = ChannelStore | ChannelRuntime | ChannelSecrets | ChannelSlots | StorageClock

/**
 * Builds the admin service of channels.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Services.AdminChannels["Type"], never, Requirements> = Effect.gen(function*() {
  const store = yield* ChannelStore
  const runtime = yield* ChannelRuntime
  const secrets = yield* ChannelSecrets
  const storage = yield* ChannelSlots
  const clock = yield* StorageClock

  const isDefault = (id: string) => runtime.defaults.some((channel) => channel.id === id)
  const notFound = (id: string) => new Errors.ChannelNotFound({ message: `channel ${id} not found` })

  /** The channels as shown, with their health (one read of the load for all). */
  const shown = (configs: ReadonlyArray<ChannelConfig>) =>
    Effect.flatMap(
      storage.channelLoad,
      (load) =>
        Effect.forEach(configs, (config) =>
          Effect.map(runtime.health(config.id), (health) =>
            toChannel(config, health, load.get(config.id) ?? 0)))
    )

  const one = (config: ChannelConfig) => Effect.map(shown([config]), (channels) => channels[0]!)

  const checkKey = (credentials: unknown) =>
    credentials != null && secrets.keyId === null ? Effect.fail(invalid(noKeyMessage)) : Effect.void

  const find = (id: string) =>
    Effect.flatMap(store.get(id), Option.match({ onNone: () => Effect.fail(notFound(id)), onSome: Effect.succeed }))

  const list: Services.AdminChannels["Type"]["list"] = Effect.flatMap(
    store.list,
    (stored) => shown([...runtime.defaults, ...stored])
  )
    .pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("Channels.list"))

  const get: Services.AdminChannels["Type"]["get"] = (id) =>
    Effect.suspend(() => {
      const fixed = runtime.defaults.find((channel) => channel.id === id)
      return Effect.flatMap(fixed === undefined ? find(id) : Effect.succeed(fixed), one)
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("Channels.get"))

  const create: Services.AdminChannels["Type"]["create"] = (body) =>
    Effect.gen(function*() {
      const settings = settingsOf(body.settings)
      const families = unique(body.families)
      const models = unique(body.models ?? [])
      const broken = checkShape({
        transport: body.transport,
        settings,
        credentials: body.credentials !== undefined,
        families,
        models
      })
      if (broken !== undefined) return yield* invalid(broken)
      yield* checkKey(body.credentials)
      const enabled = body.enabled ?? true
      const input: ChannelInput = {
        name: body.name,
        transport: body.transport,
        settings,
        ...(body.credentials === undefined ? {} : { credentials: credentialsOf(body.credentials) }),
        families,
        models,
        ...MemoryStore.given(body, ["priority", "weight", "concurrency"]),
        enabled,
        ...(enabled ? {} : { disabledReason: operatorReason })
      }
      const created = yield* store.create(input)
      yield* runtime.refresh
      return yield* one(created)
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("Channels.create"))

  const update: Services.AdminChannels["Type"]["update"] = (id, body) =>
    Effect.gen(function*() {
      if (isDefault(id)) return yield* invalid(fromEnvironment(id, "changed"))
      const current = yield* find(id)
      const settings = body.settings === undefined
        ? current.settings
        : { ...current.settings, ...settingsOf(body.settings) }
      const families = body.families === undefined ? current.families : unique(body.families)
      const models = body.models === undefined ? current.models : unique(body.models)
      const kept = current.credentials.apiKey !== undefined || (current.credentialsHint ?? null) !== null
      const credentials = body.credentials === undefined ? kept : body.credentials !== null
      const broken = checkShape({ transport: current.transport, settings, credentials, families, models })
      if (broken !== undefined) return yield* invalid(broken)
      yield* checkKey(body.credentials)
      const patch: ChannelPatch = {
        ...MemoryStore.given(body, ["name", "priority", "weight", "concurrency"]),
        ...(body.settings === undefined ? {} : { settings }),
        ...(body.credentials === undefined
          ? {}
          : { credentials: body.credentials === null ? null : credentialsOf(body.credentials) }),
        ...(body.families === undefined ? {} : { families }),
        ...(body.models === undefined ? {} : { models }),
        ...(body.enabled === undefined
          ? {}
          : body.enabled
          ? { enabled: true }
          : { enabled: false, disabledReason: operatorReason })
      }
      const updated = yield* store.update(id, patch)
      if (Option.isNone(updated)) return yield* notFound(id)
      yield* runtime.refresh
      return yield* one(updated.value)
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("Channels.update"))

  const remove: Services.AdminChannels["Type"]["remove"] = (id) =>
    Effect.gen(function*() {
      // the contract's delete answers no VALIDATION_ERROR: a channel of the environment is a conflict
      if (isDefault(id)) return yield* new Errors.ChannelInUse({ message: fromEnvironment(id, "deleted") })
      yield* find(id)
      const inFlight = (yield* storage.channelLoad).get(id) ?? 0
      if (inFlight > 0) {
        return yield* new Errors.ChannelInUse({
          message: `channel ${id} has ${inFlight} ${inFlight === 1 ? "task" : "tasks"} in flight: disable it, wait ` +
            `for them to finish, then delete it`
        })
      }
      if (!(yield* store.remove(id))) return yield* notFound(id)
      yield* runtime.refresh
      return { id, deleted: true as const }
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("Channels.remove"))

  const usage: Services.AdminChannels["Type"]["usage"] = (query) =>
    Effect.gen(function*() {
      const since = query.since === undefined ? (yield* clock.now) - 30 * 86_400_000 : Date.parse(query.since)
      if (!Number.isFinite(since)) return yield* invalid("since: must be an ISO 8601 date-time")
      const rows = yield* storage.channelUsage(since)
      const configs = new Map([...runtime.defaults, ...yield* store.list].map((config) => [config.id, config]))
      return rows.map((row): Channel.ChannelUsage => {
        const config = configs.get(row.channelId)
        const upstreamMicros = row.upstreamCostMicros
        return {
          channel_id: row.channelId,
          channel_name: config?.name ?? null,
          transport: config?.transport ?? null,
          model: row.model,
          tasks: row.tasks,
          succeeded: row.succeeded,
          failed: row.failed,
          charged: Money.fromMicros(row.chargedMicros),
          upstream_cost: Money.fromMicros(upstreamMicros),
          upstream_seconds: Math.round(row.upstreamSeconds * 1000) / 1000,
          reported: row.reported,
          margin: Money.fromMicros(row.chargedMicros - upstreamMicros)
        }
      })
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("Channels.usage"))

  return Services.AdminChannels.of({ list, get, create, update, remove, usage })
})

/**
 * The admin service of channels as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services.AdminChannels, never, Requirements> = Layer.effect(
  Services.AdminChannels,
  make
)
