/**
 * `TaskReads` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import { Task } from "@mediagate/contract"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { TaskReads } from "../../TaskReads.js"
import { ownedBy, promptMatcher } from "../../TaskReads.js"
import { isTerminal, type TaskRecord } from "../../TaskRecord.js"
import type { MemoryState } from "./state.js"

/** The port on the storage's state. */
export const make = (state: MemoryState): TaskReads["Type"] => {
  const { byAccount, tasks, waitingAt } = state
  return {
    get: (accountId, id, environment) =>
      Effect.sync(() => Option.filter(Option.fromNullable(tasks.get(id)), (t) => ownedBy(t, accountId, environment))),
    getById: (id) => Effect.sync(() => Option.fromNullable(tasks.get(id))),
    list: (accountId, query) =>
      Effect.sync(() => {
        const ids = accountId === undefined
          ? [...tasks.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
          : byAccount.get(accountId) ?? []
        const matches: Array<TaskRecord> = []
        const hasWords = query.words === undefined ? undefined : promptMatcher(query.words)
        for (let i = ids.length - 1; i >= 0; i--) {
          const task = tasks.get(ids[i]!)!
          if (query.environment !== undefined && task.environment !== query.environment) continue
          if (query.status !== undefined && task.status !== query.status) continue
          if (query.provider !== undefined && task.provider !== query.provider) continue
          if (query.model !== undefined && task.model !== query.model) continue
          if (query.createdAfter !== undefined && task.createdAt < query.createdAfter) continue
          if (query.createdBefore !== undefined && task.createdAt >= query.createdBefore) continue
          if (query.idPrefix !== undefined && !task.id.startsWith(query.idPrefix)) continue
          if (hasWords !== undefined && !hasWords(task)) continue
          matches.push(task)
        }
        return MemoryStore.page(matches, query.beforeId, query.limit)
      }),
    activeCounts: (accountId, keyId) =>
      Effect.sync(() => {
        let account = 0
        let key = 0
        for (const id of byAccount.get(accountId) ?? []) {
          const task = tasks.get(id)
          if (task === undefined || isTerminal(task.status)) continue
          account++
          if (task.keyId === keyId) key++
        }
        return { account, key }
      }),
    pendingPosition: (task) =>
      Effect.sync(() => {
        let position = 0
        for (const id of byAccount.get(task.accountId) ?? []) {
          const other = tasks.get(id)
          if (other?.status === "pending" && other.environment === task.environment && other.id <= task.id) position++
        }
        return Math.max(1, position)
      }),
    overview: Effect.map(Clock.currentTimeMillis, (now) => {
      const byStatus = Object.fromEntries(Task.taskStatuses.map((status) => [status, 0])) as Record<
        Task.TaskStatus,
        number
      >
      for (const task of tasks.values()) byStatus[task.status]++
      return { byStatus, due: [...tasks.values()].filter(waitingAt(now)).length }
    })
  }
}
