/**
 * What retention reads and deletes of the task storage (besides the outbox's own pruning).
 *
 * One of the task storage's ports (docs/engine.md "Storage"): the memory implementation is `TaskStorage.layerMemory`,
 * the SQL one (SQLite, PostgreSQL) `SqlTaskStorage.layer`; each provides every port.
 *
 * @since 0.1.0
 */
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { TaskRecord } from "./TaskRecord.js"
/**
 * A task as retention sees it ({@link TaskRetention} `scanResults`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResultScan {
  readonly id: string
  readonly accountId: string
  readonly status: TaskRecord["status"]
  readonly result: TaskRecord["result"]
}

/**
 * The bytes of a result's files.
 *
 * @since 0.1.0
 * @category utils
 */
export const resultSize = (result: TaskRecord["result"]): number =>
  (result ?? []).reduce((total, item) => total + (Number.isFinite(item.size_bytes) ? item.size_bytes : 0), 0)

/**
 * What retention reads and deletes of the task storage (besides the outbox's own pruning).
 *
 * @since 0.1.0
 * @category services
 */
export class TaskRetention extends Context.Tag("@mediagate/engine/TaskRetention")<TaskRetention, {
  /** Forgets idempotency records created before `before` (epoch ms); answers how many. */
  readonly pruneIdempotency: (before: number) => Effect.Effect<number, PersistenceError>
  /**
   * Retention: the tasks of `environment` with `afterId < id < beforeId` (ids are time-sortable: creation order),
   * in id order, at most `limit`, with their status and result (whose files the caller deletes).
   */
  readonly scanResults: (
    environment: TaskRecord["environment"],
    afterId: string | undefined,
    beforeId: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<ResultScan>, PersistenceError>
  /**
   * Retention: the bytes (`size_bytes`) of the results of the account's `succeeded` tasks of `environment` created
   * from `sinceId` on (`id >= sinceId`).
   */
  readonly resultBytes: (
    accountId: string,
    environment: TaskRecord["environment"],
    sinceId: string
  ) => Effect.Effect<number, PersistenceError>
}>() {}
