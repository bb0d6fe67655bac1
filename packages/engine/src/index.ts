/**
 * `@mediagate/engine`: the task engine — state machine, storage (memory, SQLite, PostgreSQL), the `TaskService`
 * implementation and workers.
 *
 * @since 0.1.0
 */

/** New tasks wait while this node's workers are behind. */
export * as Admission from "./Admission.js"
/** The billing port the engine charges and refunds through. */
export * as Billing from "./Billing.js"
/** Where a node's tasks run: its id in the node registry, the nodes it is apart from (unshared file stores). */
export * as Placement from "./Placement.js"
/** The planning port: price, estimate, deadline. */
export * as Planner from "./Planner.js"
/** Fresh result links at read time. */
export * as ResultLinks from "./ResultLinks.js"
/** The operators' view of tasks and of the engine (the contract's `AdminTasks`). */
export * as TaskAdmin from "./TaskAdmin.js"
/** SQL storage (SQLite, PostgreSQL). */
export * as SqlTaskStorage from "./SqlTaskStorage.js"
/** The stored task and its state machine. */
export * as TaskRecord from "./TaskRecord.js"
/** The `TaskService` implementation. */
export * as TaskService from "./TaskService.js"
/** The task storage as one service, its ports' layer and the memory storage. */
export * as TaskStorage from "./TaskStorage.js"
/** Storage port: accepting, claiming, stepping, finishing and cancelling tasks. */
export * as TaskLifecycle from "./TaskLifecycle.js"
/** Storage port: reads and lists of tasks. */
export * as TaskReads from "./TaskReads.js"
/** Storage port: the outbox of task events. */
export * as TaskOutbox from "./TaskOutbox.js"
/** Storage port: the node registry and leases. */
export * as NodeRegistry from "./NodeRegistry.js"
/** Storage port: channel slots and usage. */
export * as ChannelSlots from "./ChannelSlots.js"
/** Storage port: what retention reads and deletes. */
export * as TaskRetention from "./TaskRetention.js"
/** Storage port: the storage clock. */
export * as StorageClock from "./StorageClock.js"
/** The upstream port. */
export * as Upstream from "./Upstream.js"
/** Workers. */
export * as Worker from "./Worker.js"
