/**
 * Upstream channels as the task storage sees them: concurrency slots, the active tasks per channel and their usage.
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
 * One channel and model's tasks: charged against the upstream's reports (see `ChannelSlots.channelUsage`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelUsage {
  readonly channelId: string
  readonly model: string
  readonly tasks: number
  readonly succeeded: number
  readonly failed: number
  /** Charged minus refunded, micro-USD. */
  readonly chargedMicros: number
  /** Sum of what the upstream reported the jobs ran, seconds (tasks without a report count 0). */
  readonly upstreamSeconds: number
  /** Sum of what the upstream reported the jobs cost, micro-USD. */
  readonly upstreamCostMicros: number
  /** Tasks with an upstream cost report. */
  readonly reported: number
}

/**
 * Upstream channels as the task storage sees them.
 *
 * @since 0.1.0
 * @category services
 */
export class ChannelSlots extends Context.Tag("@mediagate/engine/ChannelSlots")<ChannelSlots, {
  /**
   * Reserves a slot of `channelId` for the task whose claim `fence` holds: records the channel on the task if fewer
   * than `limit` other active tasks are on it (every node: the check and the write are one atomic step, serialized
   * per channel). `limit` 0: no limit. Answers whether the task is now on the channel.
   */
  readonly reserveChannel: (
    id: string,
    fence: number,
    channelId: string,
    limit: number
  ) => Effect.Effect<boolean, PersistenceError>
  /** Active tasks per channel (submitted to or reserved on it), every node. */
  readonly channelLoad: Effect.Effect<ReadonlyMap<string, number>, PersistenceError>
  /**
   * What the ended `live` tasks of each channel and model were charged (net of refunds) against what their upstream
   * reported they ran and cost, for tasks created at or after `since` (epoch ms).
   */
  readonly channelUsage: (since: number) => Effect.Effect<ReadonlyArray<ChannelUsage>, PersistenceError>
}>() {}
