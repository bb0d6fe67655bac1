/**
 * The node registry and the leases of a worker: heartbeats, graceful release, the registered nodes.
 *
 * One of the task storage's ports (docs/engine.md "Storage"): the memory implementation is `TaskStorage.layerMemory`,
 * the SQL one (SQLite, PostgreSQL) `SqlTaskStorage.layer`; each provides every port.
 *
 * @since 0.1.0
 */
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
/**
 * A heartbeat of a process running workers (the node registry).
 *
 * @since 0.1.0
 * @category models
 */
export interface NodeBeat {
  /** The worker's base name in leases (`<host>:<pid>:<ulid>`). */
  readonly id: string
  readonly host: string
  readonly pid: number
  /** Steps the node runs at once. */
  readonly concurrency: number
  /** Its heartbeat period in ms (a node is stale after a few missed ones). */
  readonly heartbeatMs: number
  /** Leases it holds (its heartbeat extended them). */
  readonly leases: number
  /** The live nodes it is apart from (`Placement`: their result files are not in one store); empty: none. */
  readonly apartFrom?: ReadonlyArray<string> | undefined
}

/**
 * A registered node: its last heartbeat, when it registered and when it was last seen (storage clock, epoch ms).
 *
 * @since 0.1.0
 * @category models
 */
export interface NodeRow extends NodeBeat {
  readonly startedAt: number
  readonly lastSeenAt: number
}

/**
 * The node registry and the leases of a worker.
 *
 * @since 0.1.0
 * @category services
 */
export class NodeRegistry extends Context.Tag("@mediagate/engine/NodeRegistry")<NodeRegistry, {
  /** Extends every lease `owner` holds; answers how many. */
  readonly heartbeat: (owner: string, leaseMs: number) => Effect.Effect<number, PersistenceError>
  /** Releases every lease `owner` holds, due at once (graceful shutdown); answers how many. */
  readonly releaseAll: (owner: string) => Effect.Effect<number, PersistenceError>
  /**
   * The node registry: records a heartbeat of a process running workers (one upsert: the row is created on the
   * first beat, `lastSeenAt` is the storage clock).
   */
  readonly beatNode: (beat: NodeBeat) => Effect.Effect<void, PersistenceError>
  /** Removes a node from the registry (its graceful shutdown). */
  readonly removeNode: (id: string) => Effect.Effect<void, PersistenceError>
  /** The registered nodes, oldest first, after dropping those not seen since `dropBefore` (epoch ms). */
  readonly nodes: (dropBefore: number) => Effect.Effect<ReadonlyArray<NodeRow>, PersistenceError>
}>() {}
