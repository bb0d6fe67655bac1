/**
 * `TaskReads` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import { Task } from "@mediagate/contract"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { TaskReads } from "../../TaskReads.js"
import { listFilter, ownedBy } from "../../TaskReads.js"
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
        const passes = listFilter(query)
        for (let i = ids.length - 1; i >= 0; i--) {
          const task = tasks.get(ids[i]!)!
          if (passes(task)) matches.push(task)
        }
        return MemoryStore.page(matches, query.beforeId, query.limit)
      }),
    changes: (accountId, query) =>
      Effect.sync(() => {
        const passes = listFilter(query)
        const after = query.after
        const changed: Array<TaskRecord> = []
        for (const id of byAccount.get(accountId) ?? []) {
          const task = tasks.get(id)
          const at = task?.changedAt
          if (task === undefined || at == null || at < query.since) continue
          if (after !== undefined && (at < after.changedAt || (at === after.changedAt && task.id <= after.id))) continue
          changed.push(task)
        }
        changed.sort((a, b) => a.changedAt! - b.changedAt! || (a.id < b.id ? -1 : 1))
        const rows = changed.slice(0, Math.max(0, Math.floor(query.limit)))
        const last = rows.length === query.limit ? rows.at(-1) : undefined
        const known = query.known
        return {
          items: rows.filter((task) => passes(task) && known?.({ changedAt: task.changedAt!, id: task.id }) !== true),
          keys: rows.map((task) => ({ changedAt: task.changedAt!, id: task.id })),
          next: last === undefined ? undefined : { changedAt: last.changedAt!, id: last.id }
        }
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
