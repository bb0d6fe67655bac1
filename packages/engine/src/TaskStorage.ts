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

export type { ChannelUsage } from "./ChannelSlots.js"
export type { NodeBeat, NodeRow } from "./NodeRegistry.js"
export {
  type AcceptResult,
  type CancelResult,
  type ExtraCharge,
  extraCharges,
  type FinishOptions,
  type IdempotencyClaim,
  type StepUpdate
} from "./TaskLifecycle.js"
export type { OutboxEntry, OutboxPage } from "./TaskOutbox.js"
export { type ListPage, type ListQuery, type Overview, ownedBy } from "./TaskReads.js"
export { type ResultScan, resultSize } from "./TaskRetention.js"

/**
 * Every port of the task storage in one service: what {@link makeMemory} and `SqlTaskStorage.make` build, and what
 * their layers provide each port from ({@link layerPorts}).
 */
export type Service =
  & TaskLifecycle["Type"]
  & TaskReads["Type"]
  & TaskOutbox["Type"]
  & NodeRegistry["Type"]
  & ChannelSlots["Type"]
  & TaskRetention["Type"]
  & StorageClock["Type"]

/** The task storage as one service (its implementations' layers also provide each port: {@link layerPorts}). */
export class TaskStorage extends Context.Tag("@mediagate/engine/TaskStorage")<TaskStorage, Service>() {}

/** Every port of the task storage. */
export type Ports = TaskLifecycle | TaskReads | TaskOutbox | NodeRegistry | ChannelSlots | TaskRetention | StorageClock

/** Each port of a task storage service, as a context. */
export const portsOf = (storage: Service): Context.Context<Ports> =>
  Context.make(TaskLifecycle, storage).pipe(
    Context.add(TaskReads, storage),
    Context.add(TaskOutbox, storage),
    Context.add(NodeRegistry, storage),
    Context.add(ChannelSlots, storage),
    Context.add(TaskRetention, storage),
    Context.add(StorageClock, storage)
  )

/** Each port from the {@link TaskStorage} in context. */
export const layerPorts: Layer.Layer<Ports, never, TaskStorage> = Layer.effectContext(Effect.map(TaskStorage, portsOf))

/**
 * Storage in memory: one process, nothing survives a restart. Operations run one at a time (a semaphore plays
 * the transaction), so it is as atomic as the SQL implementations. Its clock is Effect's `Clock`. One module per
 * port under `internal/memory/`, on one shared state (`internal/memory/state.ts`).
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

/** The memory storage as a layer. */
export const layerMemory = (): Layer.Layer<TaskStorage | Ports, never, Billing> =>
  Layer.provideMerge(layerPorts, Layer.effect(TaskStorage, makeMemory()))
