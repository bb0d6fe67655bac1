/**
 * Where a node's tasks must run: the node's id in the node registry, and the live nodes it is apart from.
 *
 * Two nodes are apart when what the workers of one write cannot be read by the other (for result files: their local
 * file stores are different directories; `@mediagate/node` finds that out). A task accepted by a node records the
 * node ({@link TaskRecord} `nodeId`), and a worker claims no task accepted by a node it is apart from: the node a
 * client talked to runs its task, so the result files are where that node serves them. Tasks accepted by no
 * registered node (a node without workers, or one that is gone) are claimed by any node.
 *
 * Without a `Placement` (the S3 file store, the memory storage, tests) workers claim every task and tasks record no
 * node. The worker asks {@link Placement} `check` at start (its first heartbeat, before its first claim and before the
 * node serves), on every heartbeat, and when a claim brings a task of a node it does not {@link Placement} `knows`
 * (it hands such a task back, unrun, when it turns out to be apart from its node); it reports the answer in its
 * registry row (`NodeBeat.apartFrom`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * This node's place among the nodes (see the module's header).
 *
 * @since 0.1.0
 * @category services
 */
export class Placement extends Context.Tag("@mediagate/engine/Placement")<Placement, {
  /** This node's id in the node registry: the workers' name in leases, recorded on the tasks accepted here. */
  readonly nodeId: string
  /** Looks again and answers the live nodes this node is apart from (empty: none). Never fails. */
  readonly check: Effect.Effect<ReadonlyArray<string>>
  /** The last answer of {@link check} (empty before the first). */
  readonly apart: () => ReadonlyArray<string>
  /**
   * Whether a node was in the registry at the last {@link check} (this node always is): a claimed task of a node not
   * known makes the worker look again before it runs it, since that node may have started after the last look.
   */
  readonly knows: (nodeId: string) => boolean
}>() {}
