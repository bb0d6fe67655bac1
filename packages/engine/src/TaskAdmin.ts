/**
 * The engine's side of the operator API (the contract's `AdminTasks` port): tasks across accounts, one task with
 * what the engine knows of it, and the engine's status (tasks by state, queues, worker nodes).
 *
 * - The list is the storage's own list without an account filter (or with `account_id`): the same filters, order,
 *   keyset cursor and totals as `GET /api/v1/tasks`.
 * - Nodes: every process running workers upserts its row on each heartbeat (`Worker`), removes it on a graceful
 *   shutdown. A node not seen for {@link staleBeats} of its heartbeat periods is reported `stale` (it may have died:
 *   its leases run out and other nodes take its tasks over); one not seen for {@link nodeDropAfterMs} is dropped from
 *   the registry. Times are the storage clock, so every node answers the same.
 *
 * @since 0.1.0
 */
import { type Admin, Errors, Money, Services, Tracing } from "@mediagate/contract"
import { toUnavailable } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { NodeRegistry, type NodeRow } from "./NodeRegistry.js"
import { ResultLinks } from "./ResultLinks.js"
import { StorageClock } from "./StorageClock.js"
import { TaskReads } from "./TaskReads.js"
import { type TaskRecord, toSummary, toTask } from "./TaskRecord.js"
import { listPage } from "./TaskService.js"

/**
 * Heartbeat periods a node may miss before it is reported stale.
 *
 * @since 0.1.0
 * @category constants
 */
export const staleBeats = 3

/**
 * How long after it was last seen a node is dropped from the registry: one hour.
 *
 * @since 0.1.0
 * @category constants
 */
export const nodeDropAfterMs = 60 * 60 * 1000

const iso = (ms: number) => new Date(ms).toISOString()

const unavailable = toUnavailable("storage failure")

/**
 * A task as an operator reads it (result links as given).
 *
 * @since 0.1.0
 * @category encoding
 */
export const toAdminTask = (task: TaskRecord): Admin.AdminTask => ({
  ...toTask(task),
  account_id: task.accountId,
  key_id: task.keyId,
  environment: task.environment,
  claims: task.fence,
  polls: task.polls,
  upstream_job_id: task.upstreamJobId,
  channel_id: task.channelId ?? null,
  lease: task.leaseOwner === null || task.leaseExpiresAt === null
    ? null
    : { owner: task.leaseOwner, expires_at: iso(task.leaseExpiresAt) },
  next_run_at: task.nextRunAt === null ? null : iso(task.nextRunAt),
  deadline_at: iso(task.deadlineAt),
  charged: Money.fromMicros(task.chargedMicros),
  refunded: Money.fromMicros(task.refundedMicros),
  upstream_seconds: task.upstreamSeconds ?? null,
  upstream_cost: task.upstreamCostMicros == null ? null : Money.fromMicros(task.upstreamCostMicros)
})

/**
 * A registered node as the status shows it, judged at `now`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toNodeStatus = (node: NodeRow, now: number): Admin.NodeStatus => ({
  id: node.id,
  host: node.host,
  pid: node.pid,
  started_at: iso(node.startedAt),
  last_seen_at: iso(node.lastSeenAt),
  concurrency: node.concurrency,
  leases: node.leases,
  stale: now - node.lastSeenAt > staleBeats * node.heartbeatMs,
  files_unshared_with: node.apartFrom ?? []
})

/**
 * Builds the engine's `AdminTasks`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<
  Services.AdminTasks["Type"],
  never,
  TaskReads | NodeRegistry | StorageClock | ResultLinks
> = Effect.gen(function*() {
  const reads = yield* TaskReads
  const registry = yield* NodeRegistry
  const clock = yield* StorageClock
  const links = yield* ResultLinks

  const list: Services.AdminTasks["Type"]["list"] = (query) =>
    listPage(query.account_id, query, (task) => ({
      ...toSummary(task),
      account_id: task.accountId,
      environment: task.environment
    })).pipe(
      Effect.provideService(TaskReads, reads),
      Effect.catchTag("PersistenceError", unavailable),
      Tracing.span("AdminTasks.list")
    )

  const get: Services.AdminTasks["Type"]["get"] = (id) =>
    Effect.gen(function*() {
      const found = yield* reads.getById(id)
      if (Option.isNone(found)) return yield* new Errors.TaskNotFound({ message: `task ${id} not found` })
      const read = toAdminTask(found.value)
      return read.result === undefined ? read : { ...read, result: yield* links.refresh(read.result) }
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("AdminTasks.get"))

  const status: Services.AdminTasks["Type"]["status"] = Effect.gen(function*() {
    const now = yield* clock.now
    const [overview, nodes] = yield* Effect.all([reads.overview, registry.nodes(now - nodeDropAfterMs)], {
      concurrency: 2
    })
    const { byStatus } = overview
    return {
      tasks: {
        by_status: byStatus,
        queue_depth: byStatus.pending,
        in_flight_upstream: byStatus.queued + byStatus.running,
        due: overview.due
      },
      nodes: nodes.map((node) => toNodeStatus(node, now)),
      checkedAt: now
    }
  }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("AdminTasks.status"))

  return { list, get, status }
})

/**
 * The engine's `AdminTasks` as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  Services.AdminTasks,
  never,
  TaskReads | NodeRegistry | StorageClock | ResultLinks
> = Layer.effect(
  Services.AdminTasks,
  make
)
