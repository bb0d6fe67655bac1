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

/**
 * The names of the transports a channel may use, for the Schemas below (and the SQL store's rows). What each
 * transport is and does lives in `@mediagate/vendors`' transport registry (`transports/index.ts`), which this package
 * cannot import: the compiler there and a test hold this list to the registry's names, in its order
 * (docs/extending.md, "A new transport").
 *
 * @since 0.1.0
 * @category constants
 */
export const channelTransports = ["simulated", "relay", "fal", "replicate", "comfyui", "openai"] as const

/**
 * How a channel reaches its upstream (see {@link channelTransports}).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelTransport = oneOf(...channelTransports).annotations({ identifier: "ChannelTransport" })
/**
 * How a channel reaches its upstream.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelTransport = typeof ChannelTransport.Type

/**
 * A task family a channel serves.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelFamily = oneOf(...taskFamilies)

/**
 * The breaker state of a channel as this node sees it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BreakerState = oneOf("closed", "open", "half_open").annotations({ identifier: "BreakerState" })
/**
 * The breaker state of a channel.
 *
 * @since 0.1.0
 * @category schemas
 */
export type BreakerState = typeof BreakerState.Type

/**
 * How one of our models maps onto a channel's upstream (docs/channels.md, "Model mapping"). The expressions are
 * JSONata, checked when the channel is saved.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelMapping = Schema.Struct({
  target: text(1024, 1).annotations({
    description: "The upstream model: fal app id (`fal-ai/flux/dev`), Replicate `owner/name` or version id, ComfyUI " +
      "workflow name (a key of `settings.workflows`), OpenAI model name. Default: our model id"
  }),
  input: optional(
    text(20_000, 1).annotations({
      description: "JSONata expression over our request `{ model, input, metadata }` (with `$model`, `$target`, " +
        "`$task_id`, `$metadata`) giving the upstream's input, e.g. `{ \"prompt\": input.prompt }`. Default: `input` " +
        "unchanged"
    })
  ),
  output: optional(
    text(20_000, 1).annotations({
      description: "JSONata expression from the upstream's output to our result items: a URL string, an object " +
        "`{ url, format?, kind?, duration?, size_bytes? }` or an array of them. Default: every file URL in the output"
    })
  )
}).annotations({ identifier: "ModelMapping", parseOptions: { onExcessProperty: "error" } })
/**
 * How one of our models maps onto a channel's upstream.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ModelMapping = typeof ModelMapping.Type

/**
 * A ComfyUI workflow stored on a channel: the API-format graph and where the request's fields go.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ComfyWorkflow = Schema.Struct({
  graph: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "The API-format workflow (ComfyUI's \"Export (API)\"): node id → `{ class_type, inputs }`"
  }),
  inputs: optional(
    Schema.Record({ key: text(128, 1), value: text(256, 3) }).annotations({
      description: "Where each field of the (mapped) input goes: field → `<node id>.<input name>`; a field may also " +
        "name its node input directly (`\"6.text\": ...`). Fields without a place are left out"
    })
  )
}).annotations({ identifier: "ComfyWorkflow", parseOptions: { onExcessProperty: "error" } })
/**
 * A ComfyUI workflow stored on a channel.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ComfyWorkflow = typeof ComfyWorkflow.Type

/**
 * Non-secret settings of a channel's transport.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelSettings = Schema.Struct({
  base_url: optional(
    text(2048, 1).annotations({
      description:
        "The upstream's base URL, e.g. `https://gateway.example.com` (relay), `https://queue.fal.run` (fal), " +
        "`https://api.replicate.com` (replicate), `http://gpu-1:8188` (comfyui), `https://gateway.example.com` " +
        "(openai). Required for every transport but `simulated`; fal and replicate default to their public APIs"
    })
  ),
  timeout_ms: optional(
    integer(100, 600_000).annotations({ description: "Longest time one upstream call may take (default 30000)" })
  ),
  mapping: optional(
    Schema.Record({ key: text(128, 1), value: ModelMapping }).pipe(
      Schema.filter((mapping) => Object.keys(mapping).length <= 200 || "must map at most 200 models")
    ).annotations({ description: "Per served model: the upstream target and optional input/output expressions" })
  ),
  result_hosts: optional(
    Schema.Array(text(253, 1)).pipe(Schema.maxItems(50)).annotations({
      description: "Hosts besides `base_url`'s whose result URLs may be private addresses (the operator's own " +
        "storage); every other result host must resolve to public addresses"
    })
  ),
  max_result_bytes: optional(
    integer(1024, 10 * 1024 ** 3).annotations({
      description: "Largest result file copied, in bytes (default 2 GiB)"
    })
  ),
  poll_interval_ms: optional(
    integer(200, 600_000).annotations({
      description: "How often a job is polled when no callback comes (default: the engine's backoff, 1 s to 15 s)"
    })
  ),
  poll_rate: optional(
    integer(1, 100_000).annotations({
      description:
        "Most polls per second this channel receives from one node (default 100; set it to what the upstream allows)"
    })
  ),
  cost_per_second: optional(
    Schema.Number.pipe(Schema.between(0, 1000)).annotations({
      description: "What a second of the upstream's reported run time costs you, USD (for the usage report when the " +
        "upstream reports seconds but no cost)"
    })
  ),
  callbacks: optional(Schema.Boolean.annotations({
    description: "fal, replicate: ask the upstream to call back when a job ends (default true; the callback only " +
      "wakes the task for a poll)"
  })),
  workflows: optional(
    Schema.Record({ key: text(128, 1), value: ComfyWorkflow }).pipe(
      Schema.filter((workflows) => Object.keys(workflows).length <= 200 || "must hold at most 200 workflows")
    ).annotations({ description: "comfyui: the workflows by name (a mapping's `target`)" })
  )
}).annotations({ identifier: "ChannelSettings", parseOptions: { onExcessProperty: "error" } })
/**
 * Non-secret settings of a channel's transport.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelSettings = typeof ChannelSettings.Type

/**
 * Secret settings of a channel, stored encrypted and never returned.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelCredentials = Schema.Struct({
  api_key: text(4096, 1).annotations({
    description: "The upstream's API key: relay and openai `Bearer`, fal `Key`, replicate `Bearer` (token), comfyui " +
      "`Bearer` to the proxy in front of it"
  })
}).annotations({ identifier: "ChannelCredentials", parseOptions: { onExcessProperty: "error" } })
/**
 * Secret settings of a channel.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelCredentials = typeof ChannelCredentials.Type

/**
 * A channel's health: this node's breaker and the tasks in flight on it across every node.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelHealth = Schema.Struct({
  breaker: BreakerState,
  consecutive_failures: Schema.Number,
  opened_at: Schema.NullOr(Timestamp).annotations({ description: "When the breaker last opened (while not closed)" }),
  last_error: Schema.NullOr(Schema.String).annotations({ description: "The last failure this node saw, if any" }),
  in_flight: Schema.Number.annotations({
    description: "Tasks submitted to or reserved on the channel and not finished, every node"
  })
}).annotations({ identifier: "ChannelHealth" })
/**
 * A channel's health.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelHealth = typeof ChannelHealth.Type

/**
 * A channel as the admin API shows it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Channel = Schema.Struct({
  id: Schema.String.annotations({ description: "`ch_` + ULID, or `default` for the environment's channel" }),
  name: Schema.String,
  transport: ChannelTransport,
  settings: ChannelSettings,
  credentials_set: Schema.Boolean,
  credentials_hint: Schema.NullOr(Schema.String).annotations({
    description: "`…` and the last 4 characters of the API key"
  }),
  families: Schema.Array(ChannelFamily),
  models: Schema.Array(Schema.String).annotations({ description: "Models served; empty: every model of `families`" }),
  priority: Schema.Number,
  weight: Schema.Number,
  concurrency: Schema.Number.annotations({
    description: "Most tasks in flight at once across every node; 0: no limit"
  }),
  enabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(Schema.String).annotations({
    description: "Why the channel was disabled automatically (repeated authentication failures), or by whom"
  }),
  health: ChannelHealth,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Channel" })
/**
 * A channel as the admin API shows it.
 *
 * @since 0.1.0
 * @category schemas
 */
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
  concurrency: integer(0, 1_000_000).annotations({
    description: "Most tasks in flight at once, all nodes; 0 (default): no limit"
  }),
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

/**
 * Body of `POST /admin/v1/channels`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelCreate = Schema.Struct({
  name: text(200, 1),
  transport: ChannelTransport,
  settings: optional(ChannelSettings),
  credentials: optional(ChannelCredentials),
  families: routing.families,
  ...optionalRouting
}).annotations({ identifier: "ChannelCreate", parseOptions: { onExcessProperty: "error" } })
/**
 * Body of `POST /admin/v1/channels`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelCreate = typeof ChannelCreate.Type

/**
 * Body of `PATCH /admin/v1/channels/:id`: the fields to change. `credentials` replaces the stored ones (`null`
 * removes them); `enabled: true` clears `disabled_reason`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelUpdate = Schema.Struct({
  name: optional(text(200, 1)),
  settings: optional(ChannelSettings),
  credentials: optional(Schema.NullOr(ChannelCredentials)),
  families: optional(routing.families),
  ...optionalRouting
}).annotations({ identifier: "ChannelUpdate", parseOptions: { onExcessProperty: "error" } })
/**
 * Body of `PATCH /admin/v1/channels/:id`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelUpdate = typeof ChannelUpdate.Type

/**
 * `GET /admin/v1/channels/usage`: the window (default: the last 30 days).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelUsageQuery = Schema.Struct({
  since: optional(Timestamp.annotations({ description: "Tasks created at or after this time (default: 30 days ago)" }))
}).annotations({ identifier: "ChannelUsageQuery" })
/**
 * The window of a usage report.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelUsageQuery = typeof ChannelUsageQuery.Type

/**
 * One channel and model: what its ended live tasks were charged against what the upstream reported.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChannelUsage = Schema.Struct({
  channel_id: Schema.String,
  channel_name: Schema.NullOr(Schema.String).annotations({ description: "null for a channel since deleted" }),
  transport: Schema.NullOr(ChannelTransport),
  model: Schema.String,
  tasks: Schema.Number.annotations({ description: "Ended tasks (succeeded, failed, cancelled, expired)" }),
  succeeded: Schema.Number,
  failed: Schema.Number,
  charged: Schema.Number.annotations({ description: "Charged to accounts, net of refunds, USD" }),
  upstream_cost: Schema.Number.annotations({
    description: "What the upstream reported the jobs cost (or the channel's `cost_per_second` priced), USD"
  }),
  upstream_seconds: Schema.Number.annotations({ description: "What the upstream reported the jobs ran, seconds" }),
  reported: Schema.Number.annotations({ description: "Tasks with an upstream cost" }),
  margin: Schema.Number.annotations({ description: "charged − upstream_cost, USD" })
}).annotations({ identifier: "ChannelUsage" })
/**
 * One channel and model's charged against upstream cost.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChannelUsage = typeof ChannelUsage.Type
