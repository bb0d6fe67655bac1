/**
 * The task storage port and its in-memory implementation.
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
import { Errors, Task, type Webhook } from "@mediagate/contract"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { Billing, type Charge } from "./Billing.js"
import { markedAt } from "./Upstream.js"
import {
  activeStatuses,
  fromNew,
  isTerminal,
  type NewTask,
  type Outcome,
  refundFor,
  statusOfOutcome,
  type TaskRecord,
  toEvent,
  usageColumns
} from "./TaskRecord.js"

/** Filters and keyset position of a list (newest first). */
export interface ListQuery {
  readonly status?: Task.TaskStatus | undefined
  readonly provider?: string | undefined
  readonly model?: string | undefined
  /** Epoch ms, inclusive. */
  readonly createdAfter?: number | undefined
  /** Epoch ms, exclusive. */
  readonly createdBefore?: number | undefined
  /** Task id prefix. */
  readonly idPrefix?: string | undefined
  /** Only the tasks of this environment (a key's view); undefined: both (operators). */
  readonly environment?: TaskRecord["environment"] | undefined
  /** Only tasks with an id below this one (the keyset of the next page). */
  readonly beforeId?: string | undefined
  readonly limit: number
}

/** Whether a task is the account's, and of `environment` when given (both storages). */
export const ownedBy = (task: TaskRecord, accountId: string, environment?: TaskRecord["environment"]): boolean =>
  task.accountId === accountId && (environment === undefined || task.environment === environment)

/** A page of tasks. */
export interface ListPage {
  readonly items: ReadonlyArray<TaskRecord>
  readonly hasMore: boolean
  /** Tasks matching the filters (all pages). */
  readonly total: number
}

/** An `Idempotency-Key` claim of a task, judged by the shared rule (`IdempotencyWindow`). */
export type IdempotencyClaim = IdempotencyWindow.Claim

/** The answer of {@link TaskStorage} `accept`. */
export type AcceptResult =
  | { readonly _tag: "Created"; readonly task: TaskRecord }
  | { readonly _tag: "Replayed"; readonly task: TaskRecord }

/** The answer of a cancel. */
export type CancelResult =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NotCancellable"; readonly status: Task.TaskStatus }
  | { readonly _tag: "Cancelled"; readonly task: TaskRecord }

/** A fenced, non-terminal update by the worker holding the lease. */
export interface StepUpdate {
  readonly status?: "queued" | "running"
  readonly progress?: number
  readonly upstreamJobId?: string
  /** The channel the job was submitted to (recorded with `upstreamJobId`). */
  readonly channelId?: string
  /**
   * Forget the upstream job and the channel (both back to null): the job's channel failed and the next step submits
   * the task again, on another channel; or a submit failed on every channel and the reservation is let go.
   */
  readonly resubmit?: boolean
  /** When the task is next due; the lease is released with it. */
  readonly nextRunAt: number
  /** Count this step as an upstream poll. */
  readonly polled?: boolean
  /**
   * Charges on top of the price, known only once the task runs (e.g. measured input seconds). Charged through
   * {@link Billing} in the same transaction as the step (never for `test` tasks); a refusal fails the step and
   * records nothing.
   */
  readonly charges?: ReadonlyArray<ExtraCharge>
}

/** What a finish records besides the outcome. */
export interface FinishOptions {
  /** The upstream job of the task, when the worker has not recorded it yet. */
  readonly upstreamJobId?: string | undefined
  /** The channel of that job. */
  readonly channelId?: string | undefined
  /**
   * The task as the finishing worker claimed it (the record of the claim whose fence is given). A storage may
   * build the event from it before the write (the fields an event carries do not change while a claim holds), and
   * so end the task and write its event in one statement; without it, the event is built from the written row.
   */
  readonly task?: TaskRecord | undefined
}

/** A charge on top of a task's price. */
export interface ExtraCharge {
  readonly amountMicros: number
  readonly description: string
}

/** An event in the outbox. */
export interface OutboxEntry {
  readonly seq: number
  readonly accountId: string
  readonly taskId: string
  /** The environment of the task: its events go to the webhooks of that environment only. */
  readonly environment: TaskRecord["environment"]
  readonly webhookUrl: string | null
  readonly event: Webhook.WebhookEvent
}

/** A task as retention sees it ({@link TaskStorage} `scanResults`). */
export interface ResultScan {
  readonly id: string
  readonly accountId: string
  readonly status: TaskRecord["status"]
  readonly result: TaskRecord["result"]
}

/** The bytes of a result's files. */
export const resultSize = (result: TaskRecord["result"]): number =>
  (result ?? []).reduce((total, item) => total + (Number.isFinite(item.size_bytes) ? item.size_bytes : 0), 0)

/** A page of the outbox and the cursor after it. */
export interface OutboxPage {
  readonly entries: ReadonlyArray<OutboxEntry>
  /** Opaque: pass it to the next `readOutbox` to continue after this page. */
  readonly cursor: string
  /**
   * Entries after the page exist that are held back for now (PostgreSQL: committed by a transaction not older than
   * every running one, see `SqlTaskStorage`); they become readable as soon as those transactions end: read again
   * shortly. Absent or false otherwise.
   */
  readonly heldBack?: boolean
}

/** Every account's tasks per state, and the active tasks due now and not leased ({@link TaskStorage} `overview`). */
export interface Overview {
  readonly byStatus: Readonly<Record<Task.TaskStatus, number>>
  readonly due: number
}

/** A heartbeat of a process running workers (the node registry). */
export interface NodeBeat {
  /** The worker's base name in leases (`<host>:<pid>:<ulid>`). */
  readonly id: string
  readonly host: string
  readonly pid: number
  /** Steps the node runs at once. */
  readonly concurrency: number
  /** Its heartbeat period in ms (a node is stale after a few missed ones). */
  readonly heartbeatMs: number
  /** Leases it holds (its heartbeat extended them). */
  readonly leases: number
  /** The live nodes it is apart from (`Placement`: their result files are not in one store); empty: none. */
  readonly apartFrom?: ReadonlyArray<string> | undefined
}

/** A registered node: its last heartbeat, when it registered and when it was last seen (storage clock, epoch ms). */
export interface NodeRow extends NodeBeat {
  readonly startedAt: number
  readonly lastSeenAt: number
}

/** The task storage port. */
export class TaskStorage extends Context.Tag("@mediagate/engine/TaskStorage")<TaskStorage, {
  /** The storage clock (the database's, for SQL), in epoch ms: leases and deadlines are judged by it. */
  readonly now: Effect.Effect<number, PersistenceError>
  /**
   * Stores a new `pending` task with its charge and idempotency record in one transaction. With an idempotency
   * key already used for the same fingerprint (within its window), answers the original task instead.
   */
  readonly accept: (input: {
    readonly task: NewTask
    readonly charge: Charge | undefined
    readonly idempotency: IdempotencyClaim | undefined
  }) => Effect.Effect<
    AcceptResult,
    Errors.IdempotencyKeyReused | Errors.InsufficientBalance | Errors.SpendLimitExceeded | PersistenceError
  >
  /** A task of an account (and of `environment` when given: a key sees only the tasks of its environment). */
  readonly get: (
    accountId: string,
    id: string,
    environment?: TaskRecord["environment"]
  ) => Effect.Effect<Option.Option<TaskRecord>, PersistenceError>
  /** A task by id alone (workers, operators, tests). */
  readonly getById: (id: string) => Effect.Effect<Option.Option<TaskRecord>, PersistenceError>
  /** A page of an account's tasks (of every account's when `accountId` is undefined: operators), newest first. */
  readonly list: (accountId: string | undefined, query: ListQuery) => Effect.Effect<ListPage, PersistenceError>
  /**
   * Leases up to `limit` due tasks (active, `nextRunAt` reached, no live lease): increments each fence, moves
   * `pending` to `queued`, sets `startedAt` on first claim. `exclude`: skip the tasks accepted by these nodes
   * (`TaskRecord.nodeId`; the nodes the caller is apart from, see `Placement`).
   */
  readonly claim: (
    owner: string,
    limit: number,
    leaseMs: number,
    exclude?: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<TaskRecord>, PersistenceError>
  /**
   * Applies a step's update and releases the lease, if `fence` still holds — the caller's claim is the latest and
   * its lease not yet released — and the task is still active.
   */
  readonly step: (
    id: string,
    fence: number,
    update: StepUpdate
  ) => Effect.Effect<boolean, PersistenceError | Errors.InsufficientBalance | Errors.SpendLimitExceeded>
  /**
   * Ends a task (succeeded, failed, expired) if `fence` still holds (as for `step`): terminal state, refund of failed and expired
   * tasks, and the outbox event, in one transaction. Answers the terminal task, or none when the fence was lost.
   * `options.upstreamJobId` records the upstream job with the outcome (a job submitted and finished under one
   * claim). SQL storage commits concurrent finishes together (one transaction for a burst; see `SqlTaskStorage`).
   */
  readonly finish: (
    id: string,
    fence: number,
    outcome: Outcome,
    options?: FinishOptions
  ) => Effect.Effect<Option.Option<TaskRecord>, PersistenceError>
  /**
   * Cancels a `pending` or `queued` task of an account (and of `environment` when given; a task of the other one is
   * `NotFound`): state, refund and outbox event in one transaction.
   */
  readonly cancel: (
    accountId: string,
    id: string,
    environment?: TaskRecord["environment"]
  ) => Effect.Effect<CancelResult, PersistenceError>
  /** Extends every lease `owner` holds; answers how many. */
  readonly heartbeat: (owner: string, leaseMs: number) => Effect.Effect<number, PersistenceError>
  /** Releases every lease `owner` holds, due at once (graceful shutdown); answers how many. */
  readonly releaseAll: (owner: string) => Effect.Effect<number, PersistenceError>
  /**
   * Makes active tasks due now (their upstream reported a change), in creation order: `nextRunAt` becomes the
   * task's `createdAt` (now, if that is later), so that claims take them before the tasks accepted after them.
   */
  readonly markDue: (ids: ReadonlyArray<string>) => Effect.Effect<void, PersistenceError>
  /**
   * When an active task is next due: its `nextRunAt`, or, while it is leased, the later of that and its lease
   * expiry. None when no task is active.
   */
  readonly nextDueAt: Effect.Effect<Option.Option<number>, PersistenceError>
  /**
   * Outbox entries after `cursor` (from the start without one). Gap-free: an entry that a reader has passed never
   * appears later behind its cursor, even when transactions commit out of order (PostgreSQL returns only entries
   * of transactions older than every running one).
   */
  readonly readOutbox: (cursor: string | undefined, limit: number) => Effect.Effect<OutboxPage, PersistenceError>
  /**
   * How many tasks are active (`pending`, `queued`, `running`) in an account and, of those, for one key (the
   * in-flight limits). SQL: the account's from the counters, the key's from the account's active tasks.
   */
  readonly activeCounts: (
    accountId: string,
    keyId: string
  ) => Effect.Effect<{ readonly account: number; readonly key: number }, PersistenceError>
  /** Forgets idempotency records created before `before` (epoch ms); answers how many. */
  readonly pruneIdempotency: (before: number) => Effect.Effect<number, PersistenceError>
  /**
   * Retention: deletes the outbox entries that a reader at `cursor` (a {@link readOutbox} cursor, the webhook
   * dispatcher's) has passed and that were written before `before` (epoch ms). Nothing without a cursor: an entry
   * not yet read is never deleted. Answers how many.
   */
  readonly pruneOutbox: (cursor: string | undefined, before: number) => Effect.Effect<number, PersistenceError>
  /**
   * Retention: the tasks of `environment` with `afterId < id < beforeId` (ids are time-sortable: creation order),
   * in id order, at most `limit`, with their status and result (whose files the caller deletes).
   */
  readonly scanResults: (
    environment: TaskRecord["environment"],
    afterId: string | undefined,
    beforeId: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<ResultScan>, PersistenceError>
  /**
   * Retention: the bytes (`size_bytes`) of the results of the account's `succeeded` tasks of `environment` created
   * from `sinceId` on (`id >= sinceId`).
   */
  readonly resultBytes: (
    accountId: string,
    environment: TaskRecord["environment"],
    sinceId: string
  ) => Effect.Effect<number, PersistenceError>
  /**
   * Signals that work may be due (a task accepted, made due or handed back, here or in another process). A step
   * does not signal: the worker that wrote it knows when its task is due again.
   */
  readonly wakeups: Stream.Stream<void>
  /**
   * Operators: every account's tasks per state (SQL: exact, from the counters) and how many active tasks are due
   * now and not leased (work waiting for a worker).
   */
  readonly overview: Effect.Effect<Overview, PersistenceError>
  /**
   * The node registry: records a heartbeat of a process running workers (one upsert: the row is created on the
   * first beat, `lastSeenAt` is the storage clock).
   */
  readonly beatNode: (beat: NodeBeat) => Effect.Effect<void, PersistenceError>
  /** Removes a node from the registry (its graceful shutdown). */
  readonly removeNode: (id: string) => Effect.Effect<void, PersistenceError>
  /** The registered nodes, oldest first, after dropping those not seen since `dropBefore` (epoch ms). */
  readonly nodes: (dropBefore: number) => Effect.Effect<ReadonlyArray<NodeRow>, PersistenceError>
  /**
   * Signals that the outbox may have new entries (a terminal transition committed: finish or cancel), here or, on
   * PostgreSQL, in another process (`NOTIFY` sent by the write itself). The webhook dispatcher waits on it; its
   * poll is the backstop for a lost signal.
   */
  readonly outboxWakeups: Stream.Stream<void>
  /**
   * Reserves a slot of `channelId` for the task whose claim `fence` holds: records the channel on the task if fewer
   * than `limit` other active tasks are on it (every node: the check and the write are one atomic step, serialized
   * per channel). `limit` 0: no limit. Answers whether the task is now on the channel.
   */
  readonly reserveChannel: (
    id: string,
    fence: number,
    channelId: string,
    limit: number
  ) => Effect.Effect<boolean, PersistenceError>
  /**
   * Records the job an upstream's callback on `channelId` named for an active task whose job is not known yet (none
   * recorded: its submit's answer is still on its way, or its worker died; or an uncertain submit's marker), so
   * that whichever worker claims it next polls that job instead of submitting again. `jobOf` gives the job id from
   * the task's model. Answers whether it was recorded (false: a job was recorded already, or the task has ended).
   */
  readonly noteJob: (
    id: string,
    channelId: string,
    jobOf: (model: string) => string
  ) => Effect.Effect<boolean, PersistenceError>
  /** Active tasks per channel (submitted to or reserved on it), every node. */
  readonly channelLoad: Effect.Effect<ReadonlyMap<string, number>, PersistenceError>
  /**
   * What the ended `live` tasks of each channel and model were charged (net of refunds) against what their upstream
   * reported they ran and cost, for tasks created at or after `since` (epoch ms).
   */
  readonly channelUsage: (since: number) => Effect.Effect<ReadonlyArray<ChannelUsage>, PersistenceError>
}>() {}

/** One channel and model's tasks: charged against the upstream's reports (see `TaskStorage.channelUsage`). */
export interface ChannelUsage {
  readonly channelId: string
  readonly model: string
  readonly tasks: number
  readonly succeeded: number
  readonly failed: number
  /** Charged minus refunded, micro-USD. */
  readonly chargedMicros: number
  /** Sum of what the upstream reported the jobs ran, seconds (tasks without a report count 0). */
  readonly upstreamSeconds: number
  /** Sum of what the upstream reported the jobs cost, micro-USD. */
  readonly upstreamCostMicros: number
  /** Tasks with an upstream cost report. */
  readonly reported: number
}

/** The positive extra charges of a step. */
export const extraCharges = (update: StepUpdate): ReadonlyArray<ExtraCharge> =>
  (update.charges ?? []).filter((charge) => charge.amountMicros > 0)

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
          const cancelled = yield* terminate(task, "cancelled", { fence: task.fence + 1 }, yield* Clock.currentTimeMillis)
          return { _tag: "Cancelled", task: cancelled } as const
        })),
      heartbeat: (owner, leaseMs) =>
        transaction(Effect.map(Clock.currentTimeMillis, (now) =>
          MemoryStore.updateWhere(tasks, leasedBy(owner), (task) => ({ ...task, leaseExpiresAt: now + leaseMs })))),
      releaseAll: (owner) =>
        transaction(Effect.map(Clock.currentTimeMillis, (now) =>
          MemoryStore.updateWhere(tasks, leasedBy(owner), (task) => ({
            ...task,
            leaseOwner: null,
            leaseExpiresAt: null,
            nextRunAt: Math.min(task.nextRunAt ?? now, now)
          })))).pipe(Effect.tap(() => wake)),
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
            return task !== undefined && id >= sinceId && task.environment === environment && task.status === "succeeded"
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
        const byStatus = Object.fromEntries(Task.taskStatuses.map((status) => [status, 0])) as Record<Task.TaskStatus, number>
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
export const layerMemory = (): Layer.Layer<TaskStorage, never, Billing> => Layer.effect(TaskStorage, makeMemory())
