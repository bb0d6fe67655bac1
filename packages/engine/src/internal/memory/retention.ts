/**
 * `TaskRetention` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import * as Effect from "effect/Effect"
import type { TaskRetention } from "../../TaskRetention.js"
import { resultSize } from "../../TaskRetention.js"
import type { MemoryState } from "./state.js"

/** The port on the storage's state. */
export const make = (state: MemoryState): TaskRetention["Type"] => {
  const { byAccount, idempotency, tasks, transaction } = state
  return {
    pruneIdempotency: (before) =>
      transaction(Effect.sync(() => MemoryStore.deleteWhere(idempotency, (record) => record.createdAt < before))),
    scanResults: (environment, afterId, beforeId, limit) =>
      Effect.sync(() =>
        [...tasks.values()]
          .filter((task) =>
            task.environment === environment && (afterId === undefined || task.id > afterId) && task.id < beforeId
          )
          .sort((a, b) => (a.id < b.id ? -1 : 1))
          .slice(0, Math.max(0, limit))
          .map(({ accountId, id, result, status }) => ({ id, accountId, status, result }))
      ),
    resultBytes: (accountId, environment, sinceId) =>
      Effect.sync(() =>
        (byAccount.get(accountId) ?? []).reduce((total, id) => {
          const task = tasks.get(id)
          return task !== undefined && id >= sinceId && task.environment === environment &&
              task.status === "succeeded"
            ? total + resultSize(task.result)
            : total
        }, 0)
      )
  }
}
