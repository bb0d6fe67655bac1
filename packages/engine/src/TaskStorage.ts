/**
 * The task storage as one service (every port's members), the layer of its ports, and its in-memory implementation.
 *
 * Every worker write is a compare-and-set on the task's status **and** fencing token (`fence`, incremented by each
 * claim), so a worker that lost its lease can never overwrite a newer state. Terminal transitions write the refund
 * (through {@link Billing}) and the outbox event in the same step as the state.
 *
 * Implementations: {@link layerMemory} here, `SqlTaskStorage` (SQLite, PostgreSQL). Each port's conformance suite
 * (`test/*Suite.ts`, registered together by `test/TaskStorageSuite.ts`) runs against all of them.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Billing } from "./Billing.js"
import { ChannelSlots } from "./ChannelSlots.js"
import * as MemoryLifecycle from "./internal/memory/lifecycle.js"
import * as MemoryOutbox from "./internal/memory/outbox.js"
import * as MemoryReads from "./internal/memory/reads.js"
import * as MemoryRegistry from "./internal/memory/registry.js"
import * as MemoryRetention from "./internal/memory/retention.js"
import * as MemorySlots from "./internal/memory/slots.js"
import * as MemoryState from "./internal/memory/state.js"
import { NodeRegistry } from "./NodeRegistry.js"
import { StorageClock } from "./StorageClock.js"
import { TaskLifecycle } from "./TaskLifecycle.js"
import { TaskOutbox } from "./TaskOutbox.js"
import { TaskReads } from "./TaskReads.js"
import { TaskRetention } from "./TaskRetention.js"

export type {
  /**
   * One channel and model's tasks: charged against the upstream's reports (see `ChannelSlots.channelUsage`).
   *
   * @since 0.1.0
   * @category models
   */
  ChannelUsage
} from "./ChannelSlots.js"
export type {
  /**
   * A heartbeat of a process running workers (the node registry).
   *
   * @since 0.1.0
   * @category models
   */
  NodeBeat,
  /**
   * A registered node: its last heartbeat, when it registered and when it was last seen (storage clock, epoch ms).
   *
   * @since 0.1.0
   * @category models
   */
  NodeRow
} from "./NodeRegistry.js"
export {
  /**
   * The answer of {@link TaskLifecycle} `accept`.
   *
   * @since 0.1.0
   * @category models
   */
  type AcceptResult,
  /**
   * The answer of a cancel.
   *
   * @since 0.1.0
   * @category models
   */
  type CancelResult,
  /**
   * A charge on top of a task's price.
   *
   * @since 0.1.0
   * @category models
   */
  type ExtraCharge,
  /**
   * The positive extra charges of a step.
   *
   * @since 0.1.0
   * @category utils
   */
  extraCharges,
  /**
   * What a finish records besides the outcome.
   *
   * @since 0.1.0
   * @category models
   */
  type FinishOptions,
  /**
   * An `Idempotency-Key` claim of a task, judged by the shared rule (`IdempotencyWindow`).
   *
   * @since 0.1.0
   * @category models
   */
  type IdempotencyClaim,
  /**
   * A fenced, non-terminal update by the worker holding the lease.
   *
   * @since 0.1.0
   * @category models
   */
  type StepUpdate
} from "./TaskLifecycle.js"
export type {
  /**
   * An event in the outbox.
   *
   * @since 0.1.0
   * @category models
   */
  OutboxEntry,
  /**
   * A page of the outbox and the cursor after it.
   *
   * @since 0.1.0
   * @category models
   */
  OutboxPage
} from "./TaskOutbox.js"
export {
  /**
   * A page of tasks.
   *
   * @since 0.1.0
   * @category models
   */
  type ListPage,
  /**
   * Filters and keyset position of a list (newest first).
   *
   * @since 0.1.0
   * @category models
   */
  type ListQuery,
  /**
   * Every account's tasks per state, and the active tasks due now and not leased ({@link TaskReads} `overview`).
   *
   * @since 0.1.0
   * @category models
   */
  type Overview,
  /**
   * Whether a task is the account's, and of `environment` when given (both storages).
   *
   * @since 0.1.0
   * @category utils
   */
  ownedBy
} from "./TaskReads.js"
export {
  /**
   * A task as retention sees it ({@link TaskRetention} `scanResults`).
   *
   * @since 0.1.0
   * @category models
   */
  type ResultScan,
  /**
   * The bytes of a result's files.
   *
   * @since 0.1.0
   * @category utils
   */
  resultSize
} from "./TaskRetention.js"

/**
 * Every port of the task storage in one service: what {@link makeMemory} and `SqlTaskStorage.make` build, and what
 * their layers provide each port from ({@link layerPorts}).
 *
 * @since 0.1.0
 * @category models
 */
export type Service =
  & TaskLifecycle["Type"]
  & TaskReads["Type"]
  & TaskOutbox["Type"]
  & NodeRegistry["Type"]
  & ChannelSlots["Type"]
  & TaskRetention["Type"]
  & StorageClock["Type"]

/**
 * The task storage as one service (its implementations' layers also provide each port: {@link layerPorts}).
 *
 * @since 0.1.0
 * @category services
 */
export class TaskStorage extends Context.Tag("@mediagate/engine/TaskStorage")<TaskStorage, Service>() {}

/**
 * Every port of the task storage.
 *
 * @since 0.1.0
 * @category models
 */
export type Ports = TaskLifecycle | TaskReads | TaskOutbox | NodeRegistry | ChannelSlots | TaskRetention | StorageClock

/**
 * Each port of a task storage service, as a context.
 *
 * @since 0.1.0
 * @category utils
 */
export const portsOf = (storage: Service): Context.Context<Ports> =>
  Context.make(TaskLifecycle, storage).pipe(
    Context.add(TaskReads, storage),
    Context.add(TaskOutbox, storage),
    Context.add(NodeRegistry, storage),
    Context.add(ChannelSlots, storage),
    Context.add(TaskRetention, storage),
    Context.add(StorageClock, storage)
  )

/**
 * Each port from the {@link TaskStorage} in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPorts: Layer.Layer<Ports, never, TaskStorage> = Layer.effectContext(Effect.map(TaskStorage, portsOf))

/**
 * Storage in memory: one process, nothing survives a restart. Operations run one at a time (a semaphore plays
 * the transaction), so it is as atomic as the SQL implementations. Its clock is Effect's `Clock`. One module per
 * port under `internal/memory/`, on one shared state (`internal/memory/state.ts`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): Effect.Effect<Service, never, Billing> =>
  Effect.map(MemoryState.make, (state) => ({
    now: Clock.currentTimeMillis,
    ...MemoryLifecycle.make(state),
    ...MemoryReads.make(state),
    ...MemoryOutbox.make(state),
    ...MemoryRegistry.make(state),
    ...MemorySlots.make(state),
    ...MemoryRetention.make(state)
  }))

/**
 * The memory storage as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (): Layer.Layer<TaskStorage | Ports, never, Billing> =>
  Layer.provideMerge(layerPorts, Layer.effect(TaskStorage, makeMemory()))
