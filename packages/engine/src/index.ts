/**
 * `@mediagate/engine`: the task engine — state machine, storage (memory, SQLite, PostgreSQL), the `TaskService`
 * implementation and workers.
 *
 * @since 0.1.0
 */

/** New tasks wait while this node's workers are behind. */
export * as Admission from "./Admission.js"
/**
 * The billing port the engine charges and refunds through.
 *
 * @since 0.1.0
 */
export * as Billing from "./Billing.js"
/**
 * Where a node's tasks run: its id in the node registry, the nodes it is apart from (unshared file stores).
 *
 * @since 0.1.0
 */
export * as Placement from "./Placement.js"
/**
 * The planning port: price, estimate, deadline.
 *
 * @since 0.1.0
 */
export * as Planner from "./Planner.js"
/**
 * Fresh result links at read time.
 *
 * @since 0.1.0
 */
export * as ResultLinks from "./ResultLinks.js"
/**
 * The operators' view of tasks and of the engine (the contract's `AdminTasks`).
 *
 * @since 0.1.0
 */
export * as TaskAdmin from "./TaskAdmin.js"
/**
 * SQL storage (SQLite, PostgreSQL).
 *
 * @since 0.1.0
 */
export * as SqlTaskStorage from "./SqlTaskStorage.js"
/**
 * The stored task and its state machine.
 *
 * @since 0.1.0
 */
export * as TaskRecord from "./TaskRecord.js"
/**
 * The `TaskService` implementation.
 *
 * @since 0.1.0
 */
export * as TaskService from "./TaskService.js"
/**
 * The task storage as one service, its ports' layer and the memory storage.
 *
 * @since 0.1.0
 */
export * as TaskStorage from "./TaskStorage.js"
/**
 * Storage port: accepting, claiming, stepping, finishing and cancelling tasks.
 *
 * @since 0.1.0
 */
export * as TaskLifecycle from "./TaskLifecycle.js"
/**
 * Storage port: reads and lists of tasks.
 *
 * @since 0.1.0
 */
export * as TaskReads from "./TaskReads.js"
/**
 * Storage port: the outbox of task events.
 *
 * @since 0.1.0
 */
export * as TaskOutbox from "./TaskOutbox.js"
/**
 * Storage port: the node registry and leases.
 *
 * @since 0.1.0
 */
export * as NodeRegistry from "./NodeRegistry.js"
/**
 * Storage port: channel slots and usage.
 *
 * @since 0.1.0
 */
export * as ChannelSlots from "./ChannelSlots.js"
/**
 * Storage port: what retention reads and deletes.
 *
 * @since 0.1.0
 */
export * as TaskRetention from "./TaskRetention.js"
/**
 * Storage port: the storage clock.
 *
 * @since 0.1.0
 */
export * as StorageClock from "./StorageClock.js"
/**
 * The upstream port.
 *
 * @since 0.1.0
 */
export * as Upstream from "./Upstream.js"
/**
 * Workers.
 *
 * @since 0.1.0
 */
export * as Worker from "./Worker.js"
