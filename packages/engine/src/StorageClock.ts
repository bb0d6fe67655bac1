/**
 * The storage clock: the database's for SQL storage, Effect's `Clock` in memory. Leases and deadlines are judged
 * by it.
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
 * The storage clock.
 *
 * @since 0.1.0
 * @category services
 */
export class StorageClock extends Context.Tag("@mediagate/engine/StorageClock")<StorageClock, {
  /** The storage clock (the database's, for SQL), in epoch ms: leases and deadlines are judged by it. */
  readonly now: Effect.Effect<number, PersistenceError>
}>() {}
