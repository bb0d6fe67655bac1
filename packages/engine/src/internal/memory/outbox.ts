/**
 * `TaskOutbox` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { TaskOutbox } from "../../TaskOutbox.js"
import type { MemoryState } from "./state.js"

/** The port on the storage's state. */
export const make = (state: MemoryState): TaskOutbox["Type"] => {
  const { outbox, outboxSignals, outboxWritten, transaction } = state
  return {
    readOutbox: (cursor, limit) =>
      Effect.sync(() => {
        const after = cursor === undefined ? 0 : Number(cursor) || 0
        const start = outbox.findIndex((entry) => entry.seq > after)
        const entries = start < 0 ? [] : outbox.slice(start, start + Math.max(0, limit))
        return { entries, cursor: String(entries.at(-1)?.seq ?? after) }
      }),
    outboxWakeups: Stream.fromPubSub(outboxSignals),
    pruneOutbox: (cursor, before) =>
      transaction(Effect.sync(() => {
        if (cursor === undefined) return 0
        const passed = Number(cursor) || 0
        let pruned = 0
        while (outbox.length > 0 && outbox[0]!.seq <= passed && (outboxWritten.get(outbox[0]!.seq) ?? 0) < before) {
          outboxWritten.delete(outbox.shift()!.seq)
          pruned++
        }
        return pruned
      }))
  }
}
