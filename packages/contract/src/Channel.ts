/**
 * Upstream channels (`/admin/v1/channels`, docs/channels.md): the upstreams a family's live tasks are routed to, with
 * their priority, weight, concurrency limit and health. Credentials are write-only: a channel read says whether
 * they are set and shows the last four characters, never the secret.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { taskFamilies } from "./Catalog.js"
import { integer, oneOf, optional, text } from "./Fields.js"
import { Timestamp } from "./Timestamp.js"

/** How a channel reaches its upstream: the built-in simulator, or another service speaking this API (relay). */
export const ChannelTransport = oneOf("simulated", "relay").annotations({ identifier: "ChannelTransport" })
/** How a channel reaches its upstream. */
export type ChannelTransport = typeof ChannelTransport.Type

/** A task family a channel serves. */
export const ChannelFamily = oneOf(...taskFamilies)

/** The breaker state of a channel as this node sees it. */
export const BreakerState = oneOf("closed", "open", "half_open").annotations({ identifier: "BreakerState" })
/** The breaker state of a channel. */
export type BreakerState = typeof BreakerState.Type

/** Non-secret settings of a channel's transport. */
export const ChannelSettings = Schema.Struct({
  base_url: optional(text(2048, 1).annotations({
    description: "relay: base URL of the other service, e.g. `https://gateway.example.com` (required for relay)"
  })),
  timeout_ms: optional(integer(100, 600_000).annotations({ description: "Longest time one upstream call may take (default 30000)" }))
}).annotations({ identifier: "ChannelSettings", parseOptions: { onExcessProperty: "error" } })
/** Non-secret settings of a channel's transport. */
export type ChannelSettings = typeof ChannelSettings.Type

/** Secret settings of a channel, stored encrypted and never returned. */
export const ChannelCredentials = Schema.Struct({
  api_key: text(4096, 1).annotations({ description: "relay: the other service's API key" })
}).annotations({ identifier: "ChannelCredentials", parseOptions: { onExcessProperty: "error" } })
/** Secret settings of a channel. */
export type ChannelCredentials = typeof ChannelCredentials.Type

/** A channel's health: this node's breaker and the tasks in flight on it across every node. */
export const ChannelHealth = Schema.Struct({
  breaker: BreakerState,
  consecutive_failures: Schema.Number,
  opened_at: Schema.NullOr(Timestamp).annotations({ description: "When the breaker last opened (while not closed)" }),
  last_error: Schema.NullOr(Schema.String).annotations({ description: "The last failure this node saw, if any" }),
  in_flight: Schema.Number.annotations({ description: "Tasks submitted to or reserved on the channel and not finished, every node" })
}).annotations({ identifier: "ChannelHealth" })
/** A channel's health. */
export type ChannelHealth = typeof ChannelHealth.Type

/** A channel as the admin API shows it. */
export const Channel = Schema.Struct({
  id: Schema.String.annotations({ description: "`ch_` + ULID, or `default` for the environment's channel" }),
  name: Schema.String,
  transport: ChannelTransport,
  settings: ChannelSettings,
  credentials_set: Schema.Boolean,
  credentials_hint: Schema.NullOr(Schema.String).annotations({ description: "`…` and the last 4 characters of the API key" }),
  families: Schema.Array(ChannelFamily),
  models: Schema.Array(Schema.String).annotations({ description: "Models served; empty: every model of `families`" }),
  priority: Schema.Number,
  weight: Schema.Number,
  concurrency: Schema.Number.annotations({ description: "Most tasks in flight at once across every node; 0: no limit" }),
  enabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(Schema.String).annotations({
    description: "Why the channel was disabled automatically (repeated authentication failures), or by whom"
  }),
  health: ChannelHealth,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Channel" })
/** A channel as the admin API shows it. */
export type Channel = typeof Channel.Type

const routing = {
  families: Schema.Array(ChannelFamily).pipe(Schema.minItems(1), Schema.maxItems(taskFamilies.length)).annotations({
    description: "Task families served (at least one)",
    message: () => ({ message: `must be a non-empty list of ${taskFamilies.join(", ")}`, override: true })
  }),
  models: Schema.Array(text(128, 1)).pipe(Schema.maxItems(200)).annotations({
    description: "Models served (each of one of `families`); empty or absent: every model of the families"
  }),
  priority: integer(-1000, 1000).annotations({ description: "Higher first; default 0" }),
  weight: integer(1, 1000).annotations({ description: "Share among healthy channels of the same priority; default 1" }),
  concurrency: integer(0, 1_000_000).annotations({ description: "Most tasks in flight at once, all nodes; 0 (default): no limit" }),
  enabled: Schema.Boolean
}

/** The routing fields a create may and an update may leave out. */
const optionalRouting = {
  models: optional(routing.models),
  priority: optional(routing.priority),
  weight: optional(routing.weight),
  concurrency: optional(routing.concurrency),
  enabled: optional(routing.enabled)
}

/** Body of `POST /admin/v1/channels`. */
export const ChannelCreate = Schema.Struct({
  name: text(200, 1),
  transport: ChannelTransport,
  settings: optional(ChannelSettings),
  credentials: optional(ChannelCredentials),
  families: routing.families,
  ...optionalRouting
}).annotations({ identifier: "ChannelCreate", parseOptions: { onExcessProperty: "error" } })
/** Body of `POST /admin/v1/channels`. */
export type ChannelCreate = typeof ChannelCreate.Type

/**
 * Body of `PATCH /admin/v1/channels/:id`: the fields to change. `credentials` replaces the stored ones (`null`
 * removes them); `enabled: true` clears `disabled_reason`.
 */
export const ChannelUpdate = Schema.Struct({
  name: optional(text(200, 1)),
  settings: optional(ChannelSettings),
  credentials: optional(Schema.NullOr(ChannelCredentials)),
  families: optional(routing.families),
  ...optionalRouting
}).annotations({ identifier: "ChannelUpdate", parseOptions: { onExcessProperty: "error" } })
/** Body of `PATCH /admin/v1/channels/:id`. */
export type ChannelUpdate = typeof ChannelUpdate.Type
