/**
 * `TaskLifecycle` on SQL (SQLite, PostgreSQL): claims, batched steps and finishes, cancels, due times and
 * wake-ups; the accept is {@link Accept}.
 */
import type { Fragment } from "@effect/sql/Statement"
import * as GroupCommit from "@mediagate/persistence/GroupCommit"
import * as Ids from "@mediagate/persistence/Ids"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import type * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type CancelResult, extraCharges, type StepUpdate } from "../../TaskLifecycle.js"
import { TaskLifecycle } from "../../TaskLifecycle.js"
import { statusOfOutcome, type TaskRecord, toEvent, toUntimedEvent, usageColumns } from "../../TaskRecord.js"
import { markedAt, markerPattern } from "../../Upstream.js"
import * as Accept from "./accept.js"
import type { SqlContext } from "./context.js"
import {
  expiredError,
  finishBatchers,
  type Finishing,
  finishSpan,
  hasNul,
  json,
  maxBatch,
  ms,
  persistence,
  type Stepping,
  stepSpan
} from "./rows.js"

/** Builds the port on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const {
      ACTIVE,
      NOW,
      REAL,
      billing,
      currentTime,
      notifying,
      nowSql,
      outboxLock,
      outboxLockCte,
      outboxLocked,
      outboxNotifying,
      outboxWake,
      pg,
      refund,
      remote,
      rows,
      settle,
      signals,
      sql,
      sqliteBatches,
      t,
      wake,
      withClock
    } = context
    const claim: TaskLifecycle["Type"]["claim"] = (owner, limit, leaseMs, exclude = []) =>
      Effect.suspend(() => {
        const n = Math.max(0, Math.floor(limit))
        if (n === 0) return Effect.succeed([])
        // tasks accepted by the nodes the caller is apart from are left to them (Placement)
        const apart = exclude.length === 0
          ? sql.literal("")
          : sql` AND (node_id IS NULL OR node_id NOT IN ${sql.in(exclude)})`
        return withClock.pipe(
          Effect.flatMap((clock) =>
            sql`${clock}
          UPDATE ${t.tasks} SET
            fence = fence + 1,
            lease_owner = ${owner},
            lease_expires_at = ${NOW} + ${ms(leaseMs)},
            status = CASE WHEN status = 'pending' THEN 'queued' ELSE status END,
            changed_at = CASE WHEN status = 'pending' THEN ${NOW} ELSE changed_at END,
            started_at = COALESCE(started_at, ${NOW}),
            submit_fence = CASE WHEN upstream_job_id IS NULL THEN COALESCE(submit_fence, fence + 1) ELSE submit_fence END
          WHERE id IN (
            SELECT id FROM ${t.tasks}
            WHERE ${ACTIVE}
              AND next_run_at <= ${NOW}
              AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})${apart}
            ORDER BY next_run_at, id
            LIMIT ${n}${sql.literal(pg ? " FOR UPDATE SKIP LOCKED" : "")}
          )
          RETURNING *`
          ),
          Effect.flatMap(rows.task.all),
          Effect.map((tasks) => tasks.sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0) || (a.id < b.id ? -1 : 1)))
        )
      }).pipe(persistence("claim"))

    /** A step's report as the batch carries it: NULL keeps the recorded one, '' clears it, else its JSON. */
    const reportText = (update: StepUpdate): string | null =>
      update.report === undefined ? null : update.report === null ? "" : json(update.report)

    /**
     * Applies a batch of steps (none with extra charges) in one statement: a fenced `UPDATE ... FROM` the batch's
     * values; a task an upstream's change made due during the step's claim (`woken_fence`) stays due. Answers the ids
     * written.
     */
    const stepAll = (batch: ReadonlyArray<Stepping>) =>
      Effect.flatMap(withClock, (clock) => {
        const values = batch.map(({ fence, id, update }) =>
          sql`(${id}, CAST(${fence} AS BIGINT), ${update.status ?? null}, CAST(${
            update.progress ?? null
          } AS ${REAL}), ${update.upstreamJobId ?? null}, ${update.channelId ?? null}, CAST(${
            update.resubmit === true ? 1 : 0
          } AS INTEGER), CAST(${update.polled === true ? 1 : 0} AS INTEGER), CAST(${
            ms(update.nextRunAt)
          } AS BIGINT), CAST(${reportText(update)} AS TEXT))`
        )
        return sql`${clock}, stepped (s_id, s_fence, s_status, s_progress, s_job, s_channel, s_resubmit, s_polled,
          s_next, s_report) AS (VALUES ${sql.csv(values)})
        UPDATE ${t.tasks} SET status = COALESCE(stepped.s_status, status),
          changed_at = CASE WHEN stepped.s_status <> status OR stepped.s_progress <> progress
            OR stepped.s_report IS NOT NULL THEN ${NOW} ELSE changed_at END,
          progress = COALESCE(stepped.s_progress, progress),
          upstream_report = CASE WHEN stepped.s_report IS NULL THEN upstream_report
            WHEN stepped.s_report = '' THEN NULL ELSE stepped.s_report END,
          upstream_job_id = CASE WHEN stepped.s_resubmit = 1 THEN NULL
            WHEN stepped.s_job LIKE ${markerPattern} AND upstream_job_id NOT LIKE ${markerPattern} THEN upstream_job_id
            ELSE COALESCE(stepped.s_job, upstream_job_id) END,
          channel_id = CASE WHEN stepped.s_resubmit = 1 THEN NULL ELSE COALESCE(stepped.s_channel, channel_id) END,
          submit_fence = CASE WHEN stepped.s_resubmit = 1 THEN NULL ELSE submit_fence END,
          polls = polls + stepped.s_polled,
          next_run_at = CASE WHEN woken_fence = stepped.s_fence AND next_run_at < stepped.s_next THEN next_run_at
            WHEN deadline_at < stepped.s_next THEN deadline_at ELSE stepped.s_next END,
          lease_owner = NULL,
          lease_expires_at = NULL
        FROM stepped
        WHERE ${t.tasks}.id = stepped.s_id AND ${t.tasks}.fence = stepped.s_fence AND lease_owner IS NOT NULL
          AND ${ACTIVE}
          AND (stepped.s_status IS NULL OR stepped.s_status <> 'queued' OR status IN ('pending', 'queued'))
        RETURNING ${t.tasks}.id`
      }).pipe(
        Effect.map((written) => new Set(written.map((row) => String(row["id"])))),
        persistence("step")
      )

    /**
     * Steps without extra charges, batched: the steps made while a write is under way are applied together (a
     * task twice in one batch: the later steps on their own); if that fails, each is applied on its own.
     */
    const stepping = yield* GroupCommit.make(maxBatch, (batch: ReadonlyArray<Stepping>) =>
      Effect.gen(function*() {
        const seen = new Set<string>()
        const together: Array<Stepping> = []
        for (const item of batch) {
          if (seen.has(item.id)) continue
          seen.add(item.id)
          together.push(item)
        }
        const all = yield* Effect.exit(stepAll(together))
        const joined = new Set(together)
        const alone = (item: Stepping) => Effect.exit(Effect.map(stepAll([item]), (written) => written.has(item.id)))
        return yield* Effect.forEach(batch, (item) => {
          if (!joined.has(item)) return alone(item)
          if (Exit.isSuccess(all)) return Effect.succeed(Exit.succeed(all.value.has(item.id)))
          return together.length === 1 ? Effect.succeed(Exit.failCause(all.cause)) : alone(item)
        })
      }))

    const step: TaskLifecycle["Type"]["step"] = (id, fence, update) =>
      Effect.suspend(() => {
        if (!Number.isSafeInteger(fence)) return Effect.succeed(false)
        const extra = extraCharges(update)
        if (extra.length === 0) return stepping({ id, fence, update }).pipe(stepSpan)
        // extra charges: charged with the step, in one transaction (a refusal rolls the step back)
        const nextRunAt = ms(update.nextRunAt)
        const set: Array<Fragment> = []
        if (update.status !== undefined) set.push(sql`status = ${update.status}`)
        if (update.progress !== undefined) set.push(sql`progress = ${update.progress}`)
        if (update.report !== undefined) {
          set.push(sql`upstream_report = ${update.report === null ? null : json(update.report)}`)
        }
        if (update.upstreamJobId !== undefined) set.push(sql`upstream_job_id = ${update.upstreamJobId}`)
        if (update.channelId !== undefined) set.push(sql`channel_id = ${update.channelId}`)
        if (update.resubmit === true) {
          set.push(sql`upstream_job_id = NULL`, sql`channel_id = NULL`, sql`submit_fence = NULL`)
        }
        if (update.polled === true) {
          set.push(sql`polls = polls + 1`)
        }
        // running never goes back to queued
        const guard = update.status === "queued" ? sql.literal(`status IN ('pending', 'queued')`) : ACTIVE
        return sql.withTransaction(Effect.gen(function*() {
          const now = yield* nowSql
          const columns = [
            ...set,
            // woken during this claim (markDue): stays due
            sql`next_run_at = CASE WHEN woken_fence = ${fence} AND next_run_at < ${nextRunAt} THEN next_run_at
              WHEN deadline_at < ${nextRunAt} THEN deadline_at ELSE ${nextRunAt} END`,
            sql`lease_owner = NULL`,
            sql`lease_expires_at = NULL`,
            sql`changed_at = ${now}`
          ]
          const written = yield* sql`UPDATE ${t.tasks} SET ${sql.csv(columns)}
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND ${guard}
            RETURNING account_id, key_id, environment`.pipe(Effect.flatMap(rows.owner.first))
          if (Option.isNone(written)) return false
          const owner = written.value
          if (owner.environment !== "live") return true
          for (const charge of extra) {
            yield* billing.charge({ accountId: owner.accountId, keyId: owner.keyId, taskId: id, ...charge })
          }
          const total = extra.reduce((sum, charge) => sum + charge.amountMicros, 0)
          yield* sql`UPDATE ${t.tasks} SET charged_micros = charged_micros + ${total} WHERE id = ${id}`
          return true
        })).pipe(persistence("step"))
      })

    /**
     * Whether a finish can be one statement with its event (PostgreSQL): it comes with its claim's record (the event
     * is built from it) and owes no refund (succeeded).
     */
    const isDirect = (item: Finishing) => pg && item.task !== undefined && item.outcome._tag === "Succeeded"

    /**
     * The fenced `UPDATE ... FROM` the values of a batch of finishes that ends their tasks (the clock read once, in
     * it; on PostgreSQL the outbox lock taken by it), answering the ended rows. With `events` (PostgreSQL, finishes
     * with their claim's record: {@link isDirect}) the same statement also inserts each ended task's event, built
     * before it and timed by the row ({@link toUntimedEvent}): the whole finish is then this one statement.
     */
    const endTasks = (batch: ReadonlyArray<Finishing>, events: boolean) =>
      Effect.gen(function*() {
        const eventAt = events ? yield* Clock.currentTimeMillis : 0
        const values = batch.map(({ channelId, fence, id, outcome, task, upstreamJobId }) => {
          const status = statusOfOutcome(outcome)
          const result = outcome._tag === "Succeeded" ? outcome.result : null
          const event = events && task !== undefined
            ? sql`, ${json(toUntimedEvent({ ...task, status, result: result ?? task.result }, Ids.eventId(eventAt)))}`
            : sql.literal("")
          const usage = outcome._tag === "Expired" ? {} : usageColumns(outcome.usage)
          return sql`(${id}, CAST(${fence} AS BIGINT), ${status}, ${result === null ? null : json(result)}, ${
            outcome._tag === "Failed" ? json(outcome.error) : outcome._tag === "Expired" ? expiredError : null
          }, ${upstreamJobId ?? null}, ${channelId ?? null}, ${sql`CAST(${
            usage.upstreamSeconds ?? null
          } AS DOUBLE PRECISION), CAST(${usage.upstreamCostMicros ?? null} AS BIGINT)`}${event})`
        })
        const update =
          sql`UPDATE ${t.tasks} SET status = finished.f_status, lease_owner = NULL, lease_expires_at = NULL,
            next_run_at = NULL, completed_at = ${NOW}, changed_at = ${NOW},
            result = COALESCE(finished.f_result, result),
            error = COALESCE(finished.f_error, error),
            progress = CASE WHEN finished.f_status = 'succeeded' THEN 100 ELSE progress END,
            upstream_job_id = COALESCE(finished.f_job, upstream_job_id),
            channel_id = COALESCE(finished.f_channel, channel_id),
            upstream_seconds = COALESCE(finished.f_seconds, upstream_seconds),
            upstream_cost_micros = COALESCE(finished.f_cost, upstream_cost_micros)
          FROM finished
          WHERE ${t.tasks}.id = finished.f_id AND ${t.tasks}.fence = finished.f_fence AND lease_owner IS NOT NULL
            AND ${ACTIVE}${outboxLocked}
          RETURNING ${pg ? sql`${t.tasks}.*` : sql.literal("*")}`
        const head = sql`${yield* withClock}, ${outboxLockCte}finished (${
          sql.literal("f_id, f_fence, f_status, f_result, f_error, f_job, f_channel, f_seconds, f_cost")
        }${sql.literal(events ? ", f_event" : "")}) AS (VALUES ${sql.csv(values)})`
        const statement = events
          ? sql`${head}, ended AS (${update}),
            events AS (INSERT INTO ${t.outbox} (account_id, task_id, webhook_url, event, created_at)
              SELECT ended.account_id, ended.id, ended.webhook_url, finished.f_event, ended.completed_at
              FROM ended JOIN finished ON finished.f_id = ended.id ORDER BY ended.id${outboxNotifying})
            SELECT * FROM ended`
          : sql`${head} ${update}`
        return yield* Effect.flatMap(statement, rows.task.all)
      })

    /**
     * Ends the tasks of a batch of finishes ({@link endTasks}). On PostgreSQL, finishes with their claim's record that
     * owe no refund ({@link isDirect}) are one statement (no transaction around it); the others are one transaction:
     * the update, the refunds, and one `INSERT` of every event built from the ended rows. Answers the ended tasks by
     * id.
     */
    const finishAll = (batch: ReadonlyArray<Finishing>) =>
      (batch.every(isDirect)
        ? Effect.map(endTasks(batch, true), (ended) => new Map(ended.map((task) => [task.id, task])))
        : sql.withTransaction(Effect.gen(function*() {
          const ended = yield* endTasks(batch, false)
          const settled = new Map<string, TaskRecord>()
          for (const task of ended) settled.set(task.id, yield* refund(task))
          const events = batch.flatMap(({ id }) => {
            const task = settled.get(id)
            if (task === undefined) return []
            const now = task.completedAt ?? 0
            return [{
              account_id: task.accountId,
              task_id: task.id,
              webhook_url: task.webhookUrl,
              event: json(toEvent(task, Ids.eventId(now), now)),
              created_at: now
            }]
          })
          if (events.length > 0) yield* sql`INSERT INTO ${t.outbox} ${sql.insert(events)}${outboxNotifying}`
          return settled
        }))).pipe(
          persistence("finish"),
          Effect.tap((settled) => settled.size > 0 ? outboxWake : Effect.void)
        )

    /**
     * Runs a batch of finishes: together, each once — on PostgreSQL in two writes at most, one statement for the
     * finishes that can be one ({@link isDirect}) and one transaction for the others. If a write fails (a storage
     * failure), each of its finishes runs again on its own, so that one failure fails only its own call. Finishes
     * that may owe a refund (failed, expired) run on their own unless billing is unmetered: a billing outside the
     * storage's transaction (not on its SQL client) is never asked twice for a refund because another finish failed.
     */
    const finishBatch = (batch: ReadonlyArray<Finishing>) =>
      Effect.gen(function*() {
        // a task twice in one batch (two writers with the same fence): the later ones run on their own
        const seen = new Set<string>()
        const direct: Array<Finishing> = []
        const together: Array<Finishing> = []
        for (const item of batch) {
          if (!Number.isSafeInteger(item.fence) || seen.has(item.id)) continue
          if (item.outcome._tag !== "Succeeded" && billing.unmetered !== true) continue
          seen.add(item.id)
          ;(isDirect(item) ? direct : together).push(item)
        }
        // each group that has finishes is one write; a finish's answer is its group's
        const groupOf = new Map<Finishing, {
          readonly group: ReadonlyArray<Finishing>
          readonly exit: Exit.Exit<Map<string, TaskRecord>, PersistenceError>
        }>()
        for (const group of [direct, together]) {
          if (group.length === 0) continue
          const written = { group, exit: yield* Effect.exit(finishAll(group)) }
          for (const item of group) groupOf.set(item, written)
        }
        const alone = (item: Finishing) =>
          Effect.exit(Effect.map(finishAll([item]), (settled) => Option.fromNullable(settled.get(item.id))))
        return yield* Effect.forEach(batch, (item) => {
          if (!Number.isSafeInteger(item.fence)) return Effect.succeed(Exit.succeed(Option.none<TaskRecord>()))
          const joined = groupOf.get(item)
          if (joined === undefined) return alone(item)
          const { exit, group } = joined
          if (Exit.isSuccess(exit)) return Effect.succeed(Exit.succeed(Option.fromNullable(exit.value.get(item.id))))
          return group.length === 1 ? Effect.succeed(Exit.failCause(exit.cause)) : alone(item)
        })
      })

    const finishing = yield* GroupCommit.make(maxBatch, finishBatch, pg ? { fibers: finishBatchers } : sqliteBatches)

    const finish: TaskLifecycle["Type"]["finish"] = (id, fence, outcome, options) =>
      finishing({
        id,
        fence,
        outcome,
        upstreamJobId: options?.upstreamJobId,
        channelId: options?.channelId,
        task: options?.task
      })
        .pipe(finishSpan)

    /** The condition of a task of `environment`, or of either when undefined. */
    const ofEnvironment = (environment: TaskRecord["environment"] | undefined) =>
      environment === undefined ? sql.literal("1 = 1") : sql`environment = ${environment}`

    const cancel: TaskLifecycle["Type"]["cancel"] = (accountId, id, environment) =>
      Effect.suspend((): Effect.Effect<CancelResult, SqlStore.StorageFailure | PersistenceError> => {
        if (hasNul(accountId, id)) return Effect.succeed({ _tag: "NotFound" })
        return sql.withTransaction(Effect.gen(function*() {
          yield* outboxLock
          const now = yield* currentTime
          const cancelled =
            yield* sql`UPDATE ${t.tasks} SET status = 'cancelled', fence = fence + 1, lease_owner = NULL,
              lease_expires_at = NULL, next_run_at = NULL, completed_at = ${now}, changed_at = ${now}
            WHERE id = ${id} AND account_id = ${accountId} AND ${ofEnvironment(environment)}
              AND status IN ('pending', 'queued')
            RETURNING *`.pipe(Effect.flatMap(rows.task.first))
          if (Option.isSome(cancelled)) return { _tag: "Cancelled", task: yield* settle(cancelled.value, now) } as const
          const current = yield* sql`SELECT status FROM ${t.tasks}
            WHERE id = ${id} AND account_id = ${accountId} AND ${ofEnvironment(environment)}`.pipe(
            Effect.flatMap(rows.status.first)
          )
          return Option.match(current, {
            onNone: () => ({ _tag: "NotFound" }) as const,
            onSome: ({ status }) => ({ _tag: "NotCancellable", status }) as const
          })
        }))
      }).pipe(persistence("cancel"), Effect.tap((result) => result._tag === "Cancelled" ? outboxWake : Effect.void))

    const markDue: TaskLifecycle["Type"]["markDue"] = (ids) =>
      Effect.suspend(() => {
        const valid = ids.filter((id) => !hasNul(id))
        // due in creation order (`created_at`, or now if that is later): a task whose job is done goes before the
        // tasks accepted after it, so that finishing keeps up while new tasks pour in; one statement, the wakeup of
        // other processes on it (PostgreSQL: sent only when a task was made due). A leased task records the claim it
        // was woken in (`woken_fence`): that claim's step, written after, keeps it due rather than at its own next run
        const due = sql.literal(
          `CASE WHEN created_at < (SELECT now FROM clock) THEN created_at ELSE (SELECT now FROM clock) END`
        )
        return valid.length === 0 ? Effect.void : Effect.flatMap(withClock, (clock) =>
          sql`${clock} UPDATE ${t.tasks}
            SET next_run_at = CASE WHEN next_run_at IS NULL OR next_run_at > ${due} THEN ${due} ELSE next_run_at END,
              woken_fence = CASE WHEN lease_owner IS NULL THEN woken_fence ELSE fence END
            WHERE ${sql.in("id", valid)} AND ${ACTIVE}${notifying}`)
      }).pipe(persistence("markDue"), Effect.zipRight(wake), Effect.asVoid)

    // the earliest due time: unleased tasks by `next_run_at` (due index), leased ones (lease index) once their
    // lease runs out
    const nextDueAt: TaskLifecycle["Type"]["nextDueAt"] = Effect.flatMap(withClock, (clock) =>
      sql`${clock} SELECT
        (SELECT next_run_at FROM ${t.tasks}
          WHERE ${ACTIVE} AND next_run_at IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})
          ORDER BY next_run_at LIMIT 1) AS unleased,
        (SELECT MIN(CASE WHEN next_run_at > lease_expires_at THEN next_run_at ELSE lease_expires_at END) FROM ${t.tasks}
          WHERE lease_owner IS NOT NULL AND ${ACTIVE} AND next_run_at IS NOT NULL AND lease_expires_at > ${NOW}
        ) AS leased`).pipe(
        Effect.flatMap(rows.due.single),
        Effect.map(({ leased, unleased }) => {
          const candidates = [unleased, leased].filter((n) => n !== null)
          return candidates.length === 0 ? Option.none<number>() : Option.some(Math.min(...candidates))
        }),
        persistence("nextDueAt")
      )

    type Noting = { readonly id: string; readonly channelId: string; readonly jobOf: (model: string) => string }
    /**
     * The notes of a batch of callbacks: one read of their tasks; a task whose job is already recorded (nearly every
     * callback's) is left as it is, the others get the job each callback names.
     */
    const noteBatch = (batch: ReadonlyArray<Noting>) =>
      Effect.gen(function*() {
        const known = new Map(
          (yield* sql`SELECT id, model, upstream_job_id FROM ${t.tasks} WHERE ${
            sql.in("id", [...new Set(batch.map((note) => note.id))])
          } AND ${ACTIVE}`.pipe(Effect.flatMap(rows.noted.all))).map((row) => [row.id, row])
        )
        const noted: Array<Exit.Exit<boolean, PersistenceError>> = []
        for (const { channelId, id, jobOf } of batch) {
          const task = known.get(id)
          if (task === undefined || (task.upstreamJobId !== null && markedAt(task.upstreamJobId) === undefined)) {
            noted.push(Exit.succeed(false))
            continue
          }
          // written only over what was read: a job recorded meanwhile (the submit's own step) is kept
          const same = task.upstreamJobId === null
            ? sql`upstream_job_id IS NULL`
            : sql`upstream_job_id = ${task.upstreamJobId}`
          const written = yield* sql`UPDATE ${t.tasks} SET upstream_job_id = ${
            jobOf(task.model)
          }, channel_id = ${channelId}
            WHERE id = ${id} AND ${ACTIVE} AND ${same} RETURNING id`
          noted.push(Exit.succeed(written.length > 0))
        }
        return noted
      }).pipe(
        persistence("noteJob"),
        Effect.catchAll((error) => Effect.succeed(batch.map(() => Exit.fail(error))))
      )
    const noting = yield* GroupCommit.make(maxBatch, noteBatch, sqliteBatches)
    const noteJob: TaskLifecycle["Type"]["noteJob"] = (id, channelId, jobOf) =>
      hasNul(id, channelId) ? Effect.succeed(false) : noting({ id, channelId, jobOf })

    return TaskLifecycle.of({
      accept: yield* Accept.make(context),
      claim,
      step,
      finish,
      cancel,
      markDue,
      nextDueAt,
      wakeups: Stream.merge(Stream.fromPubSub(signals), remote),
      noteJob
    })
  })
