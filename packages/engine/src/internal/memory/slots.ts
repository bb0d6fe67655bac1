/**
 * `ChannelSlots` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import * as Effect from "effect/Effect"
import type { ChannelSlots, ChannelUsage } from "../../ChannelSlots.js"
import { activeStatuses, isTerminal } from "../../TaskRecord.js"
import type { MemoryState } from "./state.js"

/** The port on the storage's state. */
export const make = (state: MemoryState): ChannelSlots["Type"] => {
  const { holds, tasks, transaction } = state
  return {
    reserveChannel: (id, fence, channelId, limit) =>
      transaction(Effect.sync(() => {
        const task = tasks.get(id)
        if (!holds(task, fence)) return false
        if (limit > 0) {
          let load = 0
          for (const other of tasks.values()) {
            if (other.id !== id && other.channelId === channelId && activeStatuses.includes(other.status)) load++
          }
          if (load >= limit) return false
        }
        tasks.set(id, { ...task, channelId })
        return true
      })),
    channelLoad: Effect.sync(() => {
      const load = new Map<string, number>()
      for (const task of tasks.values()) {
        if (task.channelId != null && activeStatuses.includes(task.status)) {
          load.set(task.channelId, (load.get(task.channelId) ?? 0) + 1)
        }
      }
      return load
    }),
    channelUsage: (since) =>
      Effect.sync(() => {
        const groups = new Map<string, { -readonly [K in keyof ChannelUsage]: ChannelUsage[K] }>()
        for (const task of tasks.values()) {
          if (task.channelId == null || !isTerminal(task.status) || task.environment !== "live") continue
          if (task.createdAt < since) continue
          const key = `${task.channelId}\u0000${task.model}`
          const group = groups.get(key) ?? {
            channelId: task.channelId,
            model: task.model,
            tasks: 0,
            succeeded: 0,
            failed: 0,
            chargedMicros: 0,
            upstreamSeconds: 0,
            upstreamCostMicros: 0,
            reported: 0
          }
          group.tasks++
          if (task.status === "succeeded") group.succeeded++
          if (task.status === "failed") group.failed++
          group.chargedMicros += task.chargedMicros - task.refundedMicros
          group.upstreamSeconds += task.upstreamSeconds ?? 0
          group.upstreamCostMicros += task.upstreamCostMicros ?? 0
          if (task.upstreamCostMicros != null) group.reported++
          groups.set(key, group)
        }
        return [...groups.values()].sort((a, b) =>
          a.channelId.localeCompare(b.channelId) || a.model.localeCompare(b.model)
        )
      })
  }
}
