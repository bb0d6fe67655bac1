/**
 * The operator's views (`/admin/v1`, docs/operations.md "Operator endpoints and CLI"): accounts with their balance,
 * tasks and webhook deliveries across accounts, and the system status (tasks by state, queues, webhook backlog,
 * worker nodes). Lists page like `GET /api/v1/tasks`: newest first, an opaque keyset cursor, `limit` 1 to 100
 * (default 20), `pagination.total` counting every match.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { oneOf, optional, pageCursor, pageLimit, text } from "./Fields.js"
import type { TaskStatus } from "./Task.js"
import { Task, TaskListQuery, taskStatuses, TaskSummary } from "./Task.js"
import { Timestamp } from "./Timestamp.js"
import { Delivery, DeliveryAttempt, DeliveryStatus } from "./Webhook.js"

/** `limit` and `cursor` of an operator list: as the task list's. */
const limit = pageLimit
const cursor = pageCursor

/** An account id filter. */
const accountId = optional(text(64, 1).annotations({ description: "Only this account's items (`acct_...`)" }))

/**
 * Query of `GET /admin/v1/accounts`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AccountListQuery = Schema.Struct({
  search: optional(
    text(128, 1).annotations({
      description: "Prefix of the account id or of its name, case-insensitive"
    })
  ),
  limit,
  cursor
}).annotations({ identifier: "AccountListQuery" })
/**
 * Query of `GET /admin/v1/accounts`, decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AccountListQuery = typeof AccountListQuery.Type

/**
 * Query of `GET /admin/v1/tasks`: the filters of `GET /api/v1/tasks`, plus `account_id`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AdminTaskListQuery = Schema.Struct({
  ...TaskListQuery.fields,
  account_id: accountId,
  environment: optional(
    oneOf("live", "test").annotations({ description: "Only tasks of this environment; default: both" })
  )
}).annotations({ identifier: "AdminTaskListQuery" })
/**
 * Query of `GET /admin/v1/tasks`, decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AdminTaskListQuery = typeof AdminTaskListQuery.Type

/**
 * An item of the operator's task list: the account-side summary and the owning account.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AdminTaskSummary = Schema.Struct({
  ...TaskSummary.fields,
  account_id: Schema.String,
  environment: oneOf("live", "test").annotations({ description: "The environment of the key that created the task" })
}).annotations({ identifier: "AdminTaskSummary" })
/**
 * An item of the operator's task list.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AdminTaskSummary = typeof AdminTaskSummary.Type

/**
 * The lease of a task a worker holds now.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskLease = Schema.Struct({
  owner: Schema.String.annotations({ description: "The worker's name: `<host>:<pid>:<ulid>` (the node id)" }),
  expires_at: Timestamp
}).annotations({ identifier: "TaskLease" })

/**
 * A task of any account as an operator reads it: the full read plus how the engine is handling it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AdminTask = Schema.Struct({
  ...Task.fields,
  account_id: Schema.String,
  key_id: Schema.String,
  environment: oneOf("live", "test"),
  claims: Schema.Number.annotations({ description: "How many times a worker claimed the task (each claim one step)" }),
  polls: Schema.Number.annotations({ description: "Upstream polls and retried upstream calls so far" }),
  upstream_job_id: Schema.NullOr(Schema.String),
  channel_id: Schema.NullOr(Schema.String).annotations({
    description: "The upstream channel the task was submitted to or reserved on (docs/channels.md); null for test tasks"
  }),
  lease: Schema.NullOr(TaskLease).annotations({ description: "Set while a worker runs a step of the task" }),
  next_run_at: Schema.NullOr(Timestamp).annotations({ description: "When the task is next due (active tasks)" }),
  deadline_at: Timestamp,
  charged: Schema.Number.annotations({ description: "Charged in USD (price and later charges)" }),
  refunded: Schema.Number.annotations({ description: "Refunded in USD" }),
  upstream_seconds: Schema.NullOr(Schema.Number).annotations({
    description: "What the upstream reported the job ran, seconds (null: not reported)"
  }),
  upstream_cost: Schema.NullOr(Schema.Number).annotations({
    description: "What the upstream reported the job cost (or the channel priced its seconds), USD (null: not reported)"
  })
}).annotations({ identifier: "AdminTask" })
/**
 * A task of any account as an operator reads it.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AdminTask = typeof AdminTask.Type

/**
 * Query of `GET /admin/v1/webhooks/deliveries`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AdminDeliveryListQuery = Schema.Struct({
  account_id: accountId,
  status: optional(oneOf(...DeliveryStatus.literals)),
  limit,
  cursor
}).annotations({ identifier: "AdminDeliveryListQuery" })
/**
 * Query of `GET /admin/v1/webhooks/deliveries`, decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AdminDeliveryListQuery = typeof AdminDeliveryListQuery.Type

export {
  /**
   * One request of a delivery, as logged (defined with the account-side delivery list).
   *
   * @since 0.1.0
   * @category schemas
   */
  DeliveryAttempt
} from "./Webhook.js"

/**
 * A delivery of any account, with its target and its attempt log.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AdminDelivery = Schema.Struct({
  ...Delivery.fields,
  account_id: Schema.String,
  webhook_id: Schema.NullOr(Schema.String).annotations({ description: "Null for a per-job (`webhookUrl`) delivery" }),
  url: Schema.String,
  attempt_log: Schema.Array(DeliveryAttempt)
}).annotations({ identifier: "AdminDelivery" })
/**
 * A delivery of any account, with its attempt log.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AdminDelivery = typeof AdminDelivery.Type

/**
 * The number of tasks in each state.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TasksByStatus = Schema.Struct(
  Object.fromEntries(taskStatuses.map((status) => [status, Schema.Number])) as {
    readonly [K in TaskStatus]: typeof Schema.Number
  }
).annotations({ identifier: "TasksByStatus" })
/**
 * The number of tasks in each state.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TasksByStatus = typeof TasksByStatus.Type

/**
 * The figures of the engine.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskFigures = Schema.Struct({
  by_status: TasksByStatus.annotations({ description: "Every account's tasks per state (exact, from the counters)" }),
  queue_depth: Schema.Number.annotations({ description: "Tasks accepted and not yet claimed (`pending`)" }),
  in_flight_upstream: Schema.Number.annotations({
    description: "Tasks handed to their upstream (`queued`, `running`)"
  }),
  due: Schema.Number.annotations({ description: "Active tasks due now and not leased: work waiting for a worker" })
}).annotations({ identifier: "TaskFigures" })
/**
 * The figures of the engine.
 *
 * @since 0.1.0
 * @category schemas
 */
export type TaskFigures = typeof TaskFigures.Type

/**
 * The webhook backlog.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WebhookBacklog = Schema.Struct({
  pending: Schema.Number.annotations({ description: "Deliveries not settled yet (due now or waiting for a retry)" }),
  due: Schema.Number.annotations({ description: "Pending deliveries whose next attempt is due now" }),
  failed_last_hour: Schema.Number.annotations({ description: "Deliveries that failed for good in the last hour" })
}).annotations({ identifier: "WebhookBacklog" })
/**
 * The webhook backlog.
 *
 * @since 0.1.0
 * @category schemas
 */
export type WebhookBacklog = typeof WebhookBacklog.Type

/**
 * A process running task workers, as it registered itself.
 *
 * @since 0.1.0
 * @category schemas
 */
export const NodeStatus = Schema.Struct({
  id: Schema.String.annotations({ description: "The worker's name in leases: `<host>:<pid>:<ulid>`" }),
  host: Schema.String,
  pid: Schema.Number,
  started_at: Timestamp,
  last_seen_at: Timestamp,
  concurrency: Schema.Number.annotations({ description: "Engine steps the node runs at once" }),
  leases: Schema.Number.annotations({ description: "Task leases the node held at its last heartbeat" }),
  stale: Schema.Boolean.annotations({ description: "Not seen for 3 of its heartbeat periods (it may be gone)" }),
  files_unshared_with: Schema.Array(Schema.String).annotations({
    description: "Live nodes whose result files this node cannot see: its local file store is not their directory. " +
      "It then claims no task they accepted (docs/operations.md). Empty: shared, the S3 store, or no other node"
  })
}).annotations({ identifier: "NodeStatus" })
/**
 * A process running task workers.
 *
 * @since 0.1.0
 * @category schemas
 */
export type NodeStatus = typeof NodeStatus.Type

/**
 * `GET /admin/v1/system`: the same on every node (the figures come from the database).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SystemStatus = Schema.Struct({
  tasks: TaskFigures,
  webhooks: WebhookBacklog,
  nodes: Schema.Array(NodeStatus),
  checked_at: Timestamp.annotations({ description: "The storage clock when the figures were read" })
}).annotations({ identifier: "SystemStatus" })
/**
 * The system status.
 *
 * @since 0.1.0
 * @category schemas
 */
export type SystemStatus = typeof SystemStatus.Type

/**
 * The engine side of the status: task figures and nodes, read at `checkedAt` (epoch ms, storage clock).
 *
 * @since 0.1.0
 * @category models
 */
export interface EngineStatus {
  readonly tasks: TaskFigures
  readonly nodes: ReadonlyArray<NodeStatus>
  readonly checkedAt: number
}
