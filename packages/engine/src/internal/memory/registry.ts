/**
 * `NodeRegistry` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { NodeRegistry } from "../../NodeRegistry.js"
import type { MemoryState } from "./state.js"

/** The port on the storage's state. */
export const make = (state: MemoryState): NodeRegistry["Type"] => {
  const { leasedBy, nodes, tasks, transaction, wake } = state
  return {
    heartbeat: (owner, leaseMs) =>
      transaction(
        Effect.map(
          Clock.currentTimeMillis,
          (now) =>
            MemoryStore.updateWhere(tasks, leasedBy(owner), (task) => ({ ...task, leaseExpiresAt: now + leaseMs }))
        )
      ),
    releaseAll: (owner) =>
      transaction(
        Effect.map(Clock.currentTimeMillis, (now) =>
          MemoryStore.updateWhere(tasks, leasedBy(owner), (task) => ({
            ...task,
            leaseOwner: null,
            leaseExpiresAt: null,
            nextRunAt: Math.min(task.nextRunAt ?? now, now)
          })))
      ).pipe(Effect.tap(() => wake)),
    beatNode: (beat) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        nodes.set(beat.id, { ...beat, startedAt: nodes.get(beat.id)?.startedAt ?? now, lastSeenAt: now })
      }),
    removeNode: (id) => Effect.sync(() => void nodes.delete(id)),
    nodes: (dropBefore) =>
      Effect.sync(() => {
        MemoryStore.deleteWhere(nodes, (node) => node.lastSeenAt < dropBefore)
        return [...nodes.values()].sort((a, b) => a.startedAt - b.startedAt || (a.id < b.id ? -1 : 1))
      })
  }
}
