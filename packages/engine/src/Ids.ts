/**
 * Identifiers: `task_` / `evt_` + ULID (decisions.md §3). Time-sortable, so task ids double as the keyset of the
 * newest-first task list.
 *
 * @since 0.1.0
 */
import { monotonicFactory } from "ulid"

const next = monotonicFactory()

/** A new ULID (monotonic within one process). */
export const ulid = (now?: number): string => next(now)

/** A new task id. */
export const taskId = (now?: number): string => `task_${ulid(now)}`

/** A new event id. */
export const eventId = (now?: number): string => `evt_${ulid(now)}`
