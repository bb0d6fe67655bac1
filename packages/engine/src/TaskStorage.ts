/**
 * The task storage as one service (every port's members), the layer of its ports, and its in-memory implementation.
 *
 * Every worker write is a compare-and-set on the task's status **and** fencing token (`fence`, incremented by each
 * claim), so a worker that lost its lease can never overwrite a newer state. Terminal transitions write the refund
 * (through {@link Billing}) and the outbox event in the same step as the state.
 *
 * Implementations: {@link layerMemory} here, `SqlTaskStorage` (SQLite, PostgreSQL). One conformance suite
 * (`test/TaskStorageSuite.ts`) runs against all of them.
 *
 * @since 0.1.0
 */
import { Errors, Task } from "@mediagate/contract"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { Billing } from "./Billing.js"
import { ChannelSlots, type ChannelUsage } from "./ChannelSlots.js"
import { NodeRegistry, type NodeRow } from "./NodeRegistry.js"
import { StorageClock } from "./StorageClock.js"
import { extraCharges, TaskLifecycle } from "./TaskLifecycle.js"
import { type OutboxEntry, TaskOutbox } from "./TaskOutbox.js"
import { ownedBy, TaskReads } from "./TaskReads.js"
import {
  activeStatuses,
  fromNew,
  isTerminal,
  refundFor,
  statusOfOutcome,
  type TaskRecord,
  toEvent,
  usageColumns
} from "./TaskRecord.js"
import { resultSize, TaskRetention } from "./TaskRetention.js"
import { markedAt } from "./Upstream.js"

export type { ChannelUsage } from "./ChannelSlots.js"
export type { NodeBeat, NodeRow } from "./NodeRegistry.js"
export {
  type AcceptResult,
  type CancelResult,
  type ExtraCharge,
  extraCharges,
  type FinishOptions,
  type IdempotencyClaim,
  type StepUpdate
} from "./TaskLifecycle.js"
export type { OutboxEntry, OutboxPage } from "./TaskOutbox.js"
export { type ListPage, type ListQuery, type Overview, ownedBy } from "./TaskReads.js"
export { type ResultScan, resultSize } from "./TaskRetention.js"

/**
 * Every port of the task storage in one service: what {@link makeMemory} and `SqlTaskStorage.make` build, and what
 * their layers provide each port from ({@link layerPorts}).
 */
export type Service =
  & TaskLifecycle["Type"]
  & TaskReads["Type"]
  & TaskOutbox["Type"]
  & NodeRegistry["Type"]
  & ChannelSlots["Type"]
  & TaskRetention["Type"]
  & StorageClock["Type"]

/** The task storage as one service (its implementations' layers also provide each port: {@link layerPorts}). */
export class TaskStorage extends Context.Tag("@mediagate/engine/TaskStorage")<TaskStorage, Service>() {}

/** Every port of the task storage. */
export type Ports = TaskLifecycle | TaskReads | TaskOutbox | NodeRegistry | ChannelSlots | TaskRetention | StorageClock

/** Each port of a task storage service, as a context. */
export const portsOf = (storage: Service): Context.Context<Ports> =>
  Context.make(TaskLifecycle, storage).pipe(
    Context.add(TaskReads, storage),
    Context.add(TaskOutbox, storage),
    Context.add(NodeRegistry, storage),
    Context.add(ChannelSlots, storage),
    Context.add(TaskRetention, storage),
    Context.add(StorageClock, storage)
  )

/** Each port from the {@link TaskStorage} in context. */
export const layerPorts: Layer.Layer<Ports, never, TaskStorage> = Layer.effectContext(Effect.map(TaskStorage, portsOf))

/**
 * Storage in memory: one process, nothing survives a restart. Operations run one at a time (a semaphore plays
 * the transaction), so it is as atomic as the SQL implementations. Its clock is Effect's `Clock`.
 */
export const makeMemory = (): Effect.Effect<TaskStorage["Type"], never, Billing> =>
  Effect.gen(function*() {
    const billing = yield* Billing
    const tasks = new Map<string, TaskRecord>()
    /** Task ids per account in creation order (ids are time-sortable). */
    const byAccount = new Map<string, Array<string>>()
    const idempotency = new Map<string, { fingerprint: string; taskId: string; createdAt: number }>()
    const outbox: Array<OutboxEntry> = []
    /** The node registry. */
    const nodes = new Map<string, NodeRow>()
    /** When each outbox entry (by `seq`) was written; entries are pruned from the front. */
    const outboxWritten = new Map<number, number>()
    let nextSeq = 1
    const lock = yield* Effect.makeSemaphore(1)
    const signals = yield* PubSub.sliding<void>(1)
    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(effect)
    const wake = PubSub.publish(signals, undefined)
    const outboxSignals = yield* PubSub.sliding<void>(1)
    /** Wakes outbox readers (after the entry is in: readers see it at once). */
    const outboxWake = PubSub.publish(outboxSignals, undefined)

    /** Whether a worker write with `fence` is allowed: its claim is the latest and still leased, the task active. */
    const holds = (task: TaskRecord | undefined, fence: number): task is TaskRecord =>
      task !== undefined && task.fence === fence && task.leaseOwner !== null && !isTerminal(task.status)

    /** Whether a task is active, due at `now` and not leased (work waiting for a worker). */
    const waitingAt = (now: number) => (task: TaskRecord) =>
      activeStatuses.includes(task.status) && task.nextRunAt !== null && task.nextRunAt <= now &&
      (task.leaseExpiresAt === null || task.leaseExpiresAt <= now)

    /** Whether a task is active and leased by `owner`. */
    const leasedBy = (owner: string) => (task: TaskRecord) => task.leaseOwner === owner && !isTerminal(task.status)

    const appendEvent = (task: TaskRecord, now: number) => {
      outboxWritten.set(nextSeq, now)
      outbox.push({
        seq: nextSeq++,
        accountId: task.accountId,
        taskId: task.id,
        environment: task.environment,
        webhookUrl: task.webhookUrl,
        event: toEvent(task, Ids.eventId(now), now)
      })
    }

    /** Terminal transition with refund and event; the caller holds the lock. */
    const terminate = (task: TaskRecord, status: Task.TaskStatus, patch: Partial<TaskRecord>, now: number) =>
      Effect.gen(function*() {
        const refund = refundFor(task, status)
        if (refund !== undefined) yield* billing.refund(refund)
        const ended: TaskRecord = {
          ...task,
          ...patch,
          status,
          refundedMicros: task.refundedMicros + (refund?.amountMicros ?? 0),
          leaseOwner: null,
          leaseExpiresAt: null,
          nextRunAt: null,
          completedAt: now
        }
        tasks.set(ended.id, ended)
        appendEvent(ended, now)
        yield* outboxWake
        return ended
      })

    const service: TaskStorage["Type"] = {
      now: Clock.currentTimeMillis,
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
      get: (accountId, id, environment) =>
        Effect.sync(() => Option.filter(Option.fromNullable(tasks.get(id)), (t) => ownedBy(t, accountId, environment))),
      getById: (id) => Effect.sync(() => Option.fromNullable(tasks.get(id))),
      list: (accountId, query) =>
        Effect.sync(() => {
          const ids = accountId === undefined
            ? [...tasks.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
            : byAccount.get(accountId) ?? []
          const matches: Array<TaskRecord> = []
          for (let i = ids.length - 1; i >= 0; i--) {
            const task = tasks.get(ids[i]!)!
            if (query.environment !== undefined && task.environment !== query.environment) continue
            if (query.status !== undefined && task.status !== query.status) continue
            if (query.provider !== undefined && task.provider !== query.provider) continue
            if (query.model !== undefined && task.model !== query.model) continue
            if (query.createdAfter !== undefined && task.createdAt < query.createdAfter) continue
            if (query.createdBefore !== undefined && task.createdAt >= query.createdBefore) continue
            if (query.idPrefix !== undefined && !task.id.startsWith(query.idPrefix)) continue
            matches.push(task)
          }
          return MemoryStore.page(matches, query.beforeId, query.limit)
        }),
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
          tasks.set(task.id, {
            ...task,
            ...MemoryStore.given(update, ["status", "progress", "upstreamJobId", "channelId"]),
            ...(update.resubmit === true ? { upstreamJobId: null, channelId: null, submitFence: null } : {}),
            // a marker never replaces a job recorded meanwhile (a callback named it: noteJob)
            ...(markedAt(update.upstreamJobId) !== undefined && task.upstreamJobId !== null &&
                markedAt(task.upstreamJobId) === undefined
              ? { upstreamJobId: task.upstreamJobId }
              : {}),
            polls: update.polled === true ? task.polls + 1 : task.polls,
            chargedMicros: task.chargedMicros + extra.reduce((sum, charge) => sum + charge.amountMicros, 0),
            nextRunAt: Math.min(update.nextRunAt, task.deadlineAt),
            leaseOwner: null,
            leaseExpiresAt: null
          })
          return true
        })),
      finish: (id, fence, outcome, options = {}) =>
        transaction(Effect.gen(function*() {
          const task = tasks.get(id)
          if (!holds(task, fence)) return Option.none()
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
          const cancelled = yield* terminate(
            task,
            "cancelled",
            { fence: task.fence + 1 },
            yield* Clock.currentTimeMillis
          )
          return { _tag: "Cancelled", task: cancelled } as const
        })),
      heartbeat: (owner, leaseMs) =>
        transaction(
          Effect.map(
            Clock.currentTimeMillis,
            (now) =>
              MemoryStore.updateWhere(tasks, leasedBy(owner), (task) => ({ ...task, leaseExpiresAt: now + leaseMs }))
          )
        ),
      releaseAll: (owner) =>
        transaction(Effect.map(Clock.currentTimeMillis, (now) =>
          MemoryStore.updateWhere(tasks, leasedBy(owner), (task) => ({
            ...task,
            leaseOwner: null,
            leaseExpiresAt: null,
            nextRunAt: Math.min(task.nextRunAt ?? now, now)
          })))).pipe(Effect.tap(() =>
            wake
          )),
      markDue: (ids) =>
        transaction(Effect.map(Clock.currentTimeMillis, (now) => {
          for (const id of ids) {
            const task = tasks.get(id)
            if (task === undefined || isTerminal(task.status)) continue
            // due in creation order: before the tasks accepted after it
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
      readOutbox: (cursor, limit) =>
        Effect.sync(() => {
          const after = cursor === undefined ? 0 : Number(cursor) || 0
          const start = outbox.findIndex((entry) => entry.seq > after)
          const entries = start < 0 ? [] : outbox.slice(start, start + Math.max(0, limit))
          return { entries, cursor: String(entries.at(-1)?.seq ?? after) }
        }),
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
        })),
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
        ),
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
      pruneIdempotency: (before) =>
        transaction(Effect.sync(() => MemoryStore.deleteWhere(idempotency, (record) => record.createdAt < before))),
      wakeups: Stream.fromPubSub(signals),
      overview: Effect.map(Clock.currentTimeMillis, (now) => {
        const byStatus = Object.fromEntries(Task.taskStatuses.map((status) => [status, 0])) as Record<
          Task.TaskStatus,
          number
        >
        for (const task of tasks.values()) byStatus[task.status]++
        return { byStatus, due: [...tasks.values()].filter(waitingAt(now)).length }
      }),
      beatNode: (beat) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          nodes.set(beat.id, { ...beat, startedAt: nodes.get(beat.id)?.startedAt ?? now, lastSeenAt: now })
        }),
      removeNode: (id) => Effect.sync(() => void nodes.delete(id)),
      nodes: (dropBefore) =>
        Effect.sync(() => {
          MemoryStore.deleteWhere(nodes, (node) => node.lastSeenAt < dropBefore)
          return [...nodes.values()].sort((a, b) => a.startedAt - b.startedAt || (a.id < b.id ? -1 : 1))
        }),
      outboxWakeups: Stream.fromPubSub(outboxSignals),
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
      noteJob: (id, channelId, jobOf) =>
        transaction(Effect.sync(() => {
          const task = tasks.get(id)
          if (task === undefined || !activeStatuses.includes(task.status)) return false
          if (task.upstreamJobId !== null && markedAt(task.upstreamJobId) === undefined) return false
          tasks.set(id, { ...task, upstreamJobId: jobOf(task.model), channelId })
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
    return service
  })

/** The memory storage as a layer. */
export const layerMemory = (): Layer.Layer<TaskStorage | Ports, never, Billing> =>
  Layer.provideMerge(layerPorts, Layer.effect(TaskStorage, makeMemory()))
