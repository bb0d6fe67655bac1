/**
 * The outbox of task events (written with each terminal transition), read in order by the webhook dispatcher.
 *
 * One of the task storage's ports (docs/engine.md "Storage"): the memory implementation is `TaskStorage.layerMemory`,
 * the SQL one (SQLite, PostgreSQL) `SqlTaskStorage.layer`; each provides every port.
 *
 * @since 0.1.0
 */
import type { Webhook } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { TaskRecord } from "./TaskRecord.js"
/**
 * An event in the outbox.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutboxEntry {
  readonly seq: number
  readonly accountId: string
  readonly taskId: string
  /** The environment of the task: its events go to the webhooks of that environment only. */
  readonly environment: TaskRecord["environment"]
  readonly webhookUrl: string | null
  /** The event's id. */
  readonly eventId: string
  /** The event's type: what a webhook subscribes to. */
  readonly eventType: Webhook.EventType
  /**
   * The event. The SQL storage decodes it when this runs (a corrupt row fails it with a `PersistenceError`): a
   * fan-out runs it only for an entry with a receiver, and most have none.
   */
  readonly event: Effect.Effect<Webhook.WebhookEvent, PersistenceError>
}

/**
 * A page of the outbox and the cursor after it.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutboxPage {
  readonly entries: ReadonlyArray<OutboxEntry>
  /** Opaque: pass it to the next `readOutbox` to continue after this page. */
  readonly cursor: string
  /**
   * Entries after the page exist that are held back for now (PostgreSQL: committed by a transaction not older than
   * every running one, see `SqlTaskStorage`); they become readable as soon as those transactions end: read again
   * shortly. Absent or false otherwise.
   */
  readonly heldBack?: boolean
}

/**
 * The outbox of task events (written with each terminal transition), read in order by the webhook dispatcher.
 *
 * @since 0.1.0
 * @category services
 */
export class TaskOutbox extends Context.Tag("@mediagate/engine/TaskOutbox")<TaskOutbox, {
  /**
   * Outbox entries after `cursor` (from the start without one). Gap-free: an entry that a reader has passed never
   * appears later behind its cursor, even when transactions commit out of order (PostgreSQL returns only entries
   * of transactions older than every running one).
   */
  readonly readOutbox: (cursor: string | undefined, limit: number) => Effect.Effect<OutboxPage, PersistenceError>
  /**
   * Signals that the outbox may have new entries (a terminal transition committed: finish or cancel), here or, on
   * PostgreSQL, in another process (`NOTIFY` sent by the write itself). The webhook dispatcher waits on it; its
   * poll is the backstop for a lost signal.
   */
  readonly outboxWakeups: Stream.Stream<void>
  /**
   * Retention: deletes the outbox entries that a reader at `cursor` (a {@link readOutbox} cursor, the webhook
   * dispatcher's) has passed and that were written before `before` (epoch ms). Nothing without a cursor: an entry
   * not yet read is never deleted. Answers how many.
   */
  readonly pruneOutbox: (cursor: string | undefined, before: number) => Effect.Effect<number, PersistenceError>
}>() {}
