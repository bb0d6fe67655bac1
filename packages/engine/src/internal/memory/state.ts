/**
 * What the ports of the memory task storage share: the tasks, the idempotency records, the outbox, the node registry,
 * one lock (a semaphore that plays the transaction) and the wake-ups. Built once per storage by {@link make}.
 */
import type { Task } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import { Billing } from "../../Billing.js"
import { type NodeRow } from "../../NodeRegistry.js"
import { type OutboxEntry } from "../../TaskOutbox.js"
import { activeStatuses, isTerminal, refundFor, type TaskRecord, toEvent } from "../../TaskRecord.js"

/** Builds the shared state. */
export const make = Effect.gen(function*() {
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
    const event = toEvent(task, Ids.eventId(now), now)
    outbox.push({
      seq: nextSeq++,
      accountId: task.accountId,
      taskId: task.id,
      environment: task.environment,
      webhookUrl: task.webhookUrl,
      eventId: event.id,
      eventType: event.type,
      event: Effect.succeed(event)
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
        completedAt: now,
        changedAt: now
      }
      tasks.set(ended.id, ended)
      appendEvent(ended, now)
      yield* outboxWake
      return ended
    })
  return {
    billing,
    tasks,
    byAccount,
    idempotency,
    outbox,
    nodes,
    outboxWritten,
    lock,
    signals,
    transaction,
    wake,
    outboxSignals,
    outboxWake,
    holds,
    waitingAt,
    leasedBy,
    appendEvent,
    terminate
  }
})

/** The state of a memory storage. */
export type MemoryState = Effect.Effect.Success<typeof make>
