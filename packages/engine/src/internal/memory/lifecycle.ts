/**
 * `TaskLifecycle` in memory (one process; nothing survives a restart), on the storage's shared state.
 */
import { Errors, Task } from "@mediagate/contract"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { TaskLifecycle } from "../../TaskLifecycle.js"
import { extraCharges } from "../../TaskLifecycle.js"
import { ownedBy } from "../../TaskReads.js"
import {
  activeStatuses,
  fromNew,
  isTerminal,
  statusOfOutcome,
  type TaskRecord,
  usageColumns
} from "../../TaskRecord.js"
import { markedAt } from "../../Upstream.js"
import type { MemoryState } from "./state.js"

/** The port on the storage's state. */
export const make = (state: MemoryState): TaskLifecycle["Type"] => {
  const { billing, byAccount, holds, idempotency, signals, tasks, terminate, transaction, waitingAt, wake } = state
  /** The claim (fence) during which an upstream's change made a leased task due: that claim's step keeps it due. */
  const wokenFence = new Map<string, number>()
  return {
    accept: ({ charge, idempotency: claim, task }) =>
      transaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (claim !== undefined) {
          const previous = idempotency.get(`${task.accountId}\u0000${claim.key}`)
          const verdict = IdempotencyWindow.judge(previous, claim)
          if (verdict === "Reused") {
            return yield* new Errors.IdempotencyKeyReused({ message: IdempotencyWindow.reusedMessage })
          }
          const original = verdict === "Replay" && previous !== undefined ? tasks.get(previous.taskId) : undefined
          if (original !== undefined) return { _tag: "Replayed", task: original } as const
        }
        if (charge !== undefined && charge.amountMicros > 0) yield* billing.charge(charge)
        const stored = fromNew(task)
        tasks.set(stored.id, stored)
        const ids = byAccount.get(task.accountId) ?? []
        ids.push(task.id)
        byAccount.set(task.accountId, ids)
        if (claim !== undefined) {
          idempotency.set(`${task.accountId}\u0000${claim.key}`, {
            fingerprint: claim.fingerprint,
            taskId: task.id,
            createdAt: now
          })
        }
        yield* wake
        return { _tag: "Created", task: stored } as const
      })),
    claim: (owner, limit, leaseMs, exclude = []) =>
      transaction(Effect.map(Clock.currentTimeMillis, (now) => {
        const due = [...tasks.values()].filter((task) =>
          waitingAt(now)(task) && (task.nodeId == null || !exclude.includes(task.nodeId))
        )
        due.sort((a, b) => a.nextRunAt! - b.nextRunAt! || (a.id < b.id ? -1 : 1))
        return due.slice(0, limit).map((task) => {
          const claimed: TaskRecord = {
            ...task,
            status: task.status === "pending" ? "queued" : task.status,
            changedAt: task.status === "pending" ? now : task.changedAt,
            fence: task.fence + 1,
            leaseOwner: owner,
            leaseExpiresAt: now + leaseMs,
            startedAt: task.startedAt ?? now,
            // the claim that begins submitting a task without a job (see TaskRecord)
            submitFence: task.upstreamJobId === null ? task.submitFence ?? task.fence + 1 : task.submitFence ?? null
          }
          tasks.set(claimed.id, claimed)
          return claimed
        })
      })),
    step: (id, fence, update) =>
      transaction(Effect.gen(function*() {
        const task = tasks.get(id)
        if (!holds(task, fence)) return false
        if (update.status === "queued" && task.status === "running") return false
        const extra = task.environment === "live" ? extraCharges(update) : []
        for (const charge of extra) {
          yield* billing.charge({ accountId: task.accountId, keyId: task.keyId, taskId: task.id, ...charge })
        }
        // what a read shows changed: its status, progress or upstream report, or a charge
        const changed = (update.status !== undefined && update.status !== task.status) ||
          (update.progress !== undefined && update.progress !== task.progress) || update.report !== undefined ||
          extra.length > 0
        const now = yield* Clock.currentTimeMillis
        const woken = wokenFence.get(id) === fence
        wokenFence.delete(id)
        tasks.set(task.id, {
          ...task,
          ...MemoryStore.given(update, ["status", "progress", "upstreamJobId", "channelId"]),
          ...(update.report === undefined ? {} : { upstreamReport: update.report }),
          ...(update.resubmit === true ? { upstreamJobId: null, channelId: null, submitFence: null } : {}),
          // a marker never replaces a job recorded meanwhile (a callback named it: noteJob)
          ...(markedAt(update.upstreamJobId) !== undefined && task.upstreamJobId !== null &&
              markedAt(task.upstreamJobId) === undefined
            ? { upstreamJobId: task.upstreamJobId }
            : {}),
          polls: update.polled === true ? task.polls + 1 : task.polls,
          chargedMicros: task.chargedMicros + extra.reduce((sum, charge) => sum + charge.amountMicros, 0),
          nextRunAt: Math.min(update.nextRunAt, task.deadlineAt, woken ? task.nextRunAt ?? now : Infinity),
          leaseOwner: null,
          leaseExpiresAt: null,
          changedAt: changed ? now : task.changedAt
        })
        return true
      })),
    finish: (id, fence, outcome, options = {}) =>
      transaction(Effect.gen(function*() {
        const task = tasks.get(id)
        if (!holds(task, fence)) return Option.none()
        wokenFence.delete(id)
        const now = yield* Clock.currentTimeMillis
        const patch: Partial<TaskRecord> = outcome._tag === "Succeeded"
          ? { result: outcome.result, progress: 100, ...usageColumns(outcome.usage) }
          : outcome._tag === "Failed"
          ? { error: outcome.error, ...usageColumns(outcome.usage) }
          : { error: { code: "TASK_EXPIRED", message: "task did not finish before its deadline" } }
        const job = MemoryStore.given(options, ["upstreamJobId", "channelId"])
        return Option.some(yield* terminate(task, statusOfOutcome(outcome), { ...patch, ...job }, now))
      })),
    cancel: (accountId, id, environment) =>
      transaction(Effect.gen(function*() {
        const task = tasks.get(id)
        if (task === undefined || !ownedBy(task, accountId, environment)) return { _tag: "NotFound" } as const
        if (!Task.cancellableStatuses.includes(task.status)) {
          return { _tag: "NotCancellable", status: task.status } as const
        }
        wokenFence.delete(id)
        const cancelled = yield* terminate(
          task,
          "cancelled",
          { fence: task.fence + 1 },
          yield* Clock.currentTimeMillis
        )
        return { _tag: "Cancelled", task: cancelled } as const
      })),
    markDue: (ids) =>
      transaction(Effect.map(Clock.currentTimeMillis, (now) => {
        for (const id of ids) {
          const task = tasks.get(id)
          if (task === undefined || isTerminal(task.status)) continue
          // due in creation order: before the tasks accepted after it; a leased task's claim is recorded
          if (task.leaseOwner !== null) wokenFence.set(id, task.fence)
          tasks.set(task.id, { ...task, nextRunAt: Math.min(task.nextRunAt ?? now, task.createdAt, now) })
        }
      })).pipe(Effect.zipRight(wake)),
    nextDueAt: Effect.map(Clock.currentTimeMillis, (now) => {
      let earliest: number | undefined
      for (const task of tasks.values()) {
        if (!activeStatuses.includes(task.status) || task.nextRunAt === null) continue
        const due = task.leaseExpiresAt !== null && task.leaseExpiresAt > now
          ? Math.max(task.nextRunAt, task.leaseExpiresAt)
          : task.nextRunAt
        if (earliest === undefined || due < earliest) earliest = due
      }
      return Option.fromNullable(earliest)
    }),
    wakeups: Stream.fromPubSub(signals),
    noteJob: (id, channelId, jobOf) =>
      transaction(Effect.sync(() => {
        const task = tasks.get(id)
        if (task === undefined || !activeStatuses.includes(task.status)) return false
        if (task.upstreamJobId !== null && markedAt(task.upstreamJobId) === undefined) return false
        tasks.set(id, { ...task, upstreamJobId: jobOf(task.model), channelId })
        return true
      }))
  }
}
