/**
 * Identifiers: a prefix + ULID (`task_…`, `evt_…`; other packages add theirs, e.g. `wh_`). Time-sortable, so task
 * ids double as the keyset of the newest-first task list.
 *
 * @since 0.1.0
 */
import { monotonicFactory } from "ulid"

const next = monotonicFactory()

/** A new ULID (monotonic within one process), for the time `now` (epoch ms; default the current time). */
export const ulid = (now?: number): string => next(now)

/** A new task id. */
export const taskId = (now?: number): string => `task_${ulid(now)}`

/** A new event id. */
export const eventId = (now?: number): string => `evt_${ulid(now)}`
