/**
 * `TaskLifecycle.accept` on SQL (SQLite, PostgreSQL): new tasks inserted in batches, charged accepts in batches of
 * one transaction (PostgreSQL: one statement), an `Idempotency-Key` judged in the accept's own transaction.
 */
import type { Fragment } from "@effect/sql/Statement"
import { Errors } from "@mediagate/contract"
import * as GroupCommit from "@mediagate/persistence/GroupCommit"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as SqlProgram from "@mediagate/persistence/SqlProgram"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { type Charge, type ChargeOutcome, isCharged } from "../../Billing.js"
import type { TaskLifecycle } from "../../TaskLifecycle.js"
import { fromNew, type TaskRecord } from "../../TaskRecord.js"
import type { SqlContext } from "./context.js"
import {
  acceptSpan,
  accountPartition,
  type Charged,
  chargedBatchers,
  IdempotencyRace,
  isRefusedOrDone,
  maxBatch,
  ms,
  persistence,
  taskColumns,
  type TaskRow,
  taskRowOf
} from "./rows.js"
import { tables } from "./schema.js"

/** Builds the accept on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { billing, notifying, nowSql, options, pg, prefix, rows, selectTask, sql, sqliteBatches, t, wake } = context
    const persistAccept = persistence("accept")

    /** A new task's row (see {@link taskRowOf}). */
    const encodeTask = (record: TaskRecord) =>
      Either.mapLeft(taskRowOf(record), (error) => SqlRows.rowError(tables(prefix).tasks, error))

    /** Inserts new tasks in one statement (with the wakeup of other processes, at the commit). */
    const insertRows = (records: ReadonlyArray<TaskRecord>) =>
      Effect.forEach(records, encodeTask).pipe(
        Effect.flatMap((encoded) => sql`INSERT INTO ${t.tasks} ${sql.insert(encoded)}${notifying}`),
        persistAccept
      )
    /** {@link insertRows} on its own, then this process's workers woken. */
    const insertAll = (records: ReadonlyArray<TaskRecord>) => Effect.zipRight(insertRows(records), wake)

    /**
     * Accepts without a charge or an idempotency key, batched: the tasks accepted while an insert is under way are
     * inserted together; if that fails (a duplicate id), each is inserted on its own.
     */
    const inserting = yield* GroupCommit.make(maxBatch, (records: ReadonlyArray<TaskRecord>) =>
      Effect.flatMap(Effect.exit(insertAll(records)), (together) =>
        Exit.isSuccess(together) || records.length === 1
          ? Effect.succeed(records.map(() =>
            together
          ))
          : Effect.forEach(records, (record) => Effect.exit(insertAll([record])))), sqliteBatches)

    const taskColumnList = sql.literal(taskColumns.join(", "))
    /**
     * PostgreSQL: the insert of the tasks of `rows` whose 0-based positions `made` answers (the charges made, in
     * billing's statement: see `acceptingCharged`), from one JSON parameter (with the wakeup of other processes).
     */
    const insertMade = (rows: ReadonlyArray<TaskRow>, made: Fragment) =>
      sql`INSERT INTO ${t.tasks} (${taskColumnList}) SELECT ${taskColumnList}
        FROM json_populate_recordset(NULL::${t.tasks}, ${JSON.stringify(rows)}) WITH ORDINALITY AS r
        WHERE r.ordinality - 1 IN (${made})${notifying}`

    /** A task's insert (with the wakeup of other processes). */
    const insertOne = (record: TaskRecord) =>
      Effect.flatMap(encodeTask(record), (row) =>
        sql`INSERT INTO ${t.tasks} ${sql.insert(row)}${notifying}`)

    /**
     * The task first, the charge last, in the caller's transaction (which a refusal rolls back): the account row the
     * charge locks is held the shortest time, and taken after the task rows' locks as every terminal transition
     * takes them (status update, then refund).
     */
    const insertCharged = (record: TaskRecord, charge: Charge) =>
      Effect.zipRight(insertOne(record), (billing.chargeInTransaction ?? billing.charge)(charge))

    /** How a charged accept of a batch ends. */
    type AcceptExit = Exit.Exit<void, Effect.Effect.Error<ReturnType<typeof insertCharged>>>

    const writer = options.writer
    const chargeBatch = billing.chargeBatch
    // the write connection's insert (SQLite), its text written once
    const insertTaskQuery = `INSERT INTO "${tables(prefix).tasks}" (${taskColumns.join(", ")}) VALUES (${
      taskColumns.map(() => "?").join(", ")
    })`
    const chargeStatements = billing.chargeStatements
    /**
     * A batch of charged accepts as one synchronous transaction on the write connection (SQLite): each accept in a
     * savepoint (the task's insert, then the charge's statements), rolled back to on a refusal, and on a charge
     * billing defers (an auto top-up due), which then runs on its own through the client. Answers each accept's
     * outcome, by position in the batch.
     */
    const writeCharged = writer === undefined || chargeStatements === undefined
      ? undefined
      : (batch: ReadonlyArray<Charged>, order: ReadonlyArray<number>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          writer.transaction((transaction) => {
            const outcomes = new Array<ChargeOutcome>(batch.length)
            for (const i of order) {
              const { charge, record } = batch[i]!
              outcomes[i] = transaction.attempt((): ChargeOutcome => {
                const row = encodeTask(record)
                if (Either.isLeft(row)) return Either.left(row.left)
                const values = row.right
                transaction.execute(insertTaskQuery, taskColumns.map((name) => values[name]))
                return SqlProgram.runSync(chargeStatements(charge, now), transaction)
              }, isCharged)
            }
            return outcomes
          }))

    /**
     * Charged accepts without an idempotency key, batched: one transaction (on PostgreSQL one statement) for the
     * batch, which takes the accounts' rows in account order, so that two batches (of this or another process) never
     * wait on each other in a cycle.
     * - PostgreSQL (billing's `chargeBatch`): one statement, without a transaction around it (one round trip for a
     *   batch of any size): billing's charge function on the charges (it locks the accounts and writes nothing for
     *   a refused charge), and the insert of the tasks of the charges made ({@link insertMade}). The new tasks' rows
     *   are locked after the accounts', which no other transaction can wait on (they exist from the commit on). A
     *   charge billing defers (an auto top-up may follow it) runs on its own, with every charge after it.
     * - SQLite with a write connection: see {@link writeCharged}.
     * - Otherwise: each accept in a savepoint of its own (its task, then its charge; a refused charge rolls back
     *   only its task).
     * If the transaction (statement) fails as a whole, nothing of it is written and each accept runs again in a
     * transaction of its own.
     */
    const acceptingCharged = yield* GroupCommit.make(maxBatch, (batch: ReadonlyArray<Charged>) => {
      const account = (i: number) => batch[i]!.record.accountId
      // a stable sort: an account's accepts keep their order
      const order = batch.map((_, i) => i).sort((a, b) =>
        account(a) < account(b) ? -1 : account(a) > account(b) ? 1 : 0
      )
      const alone = (item: Charged) => Effect.exit(sql.withTransaction(insertCharged(item.record, item.charge)))
      if (writeCharged !== undefined) {
        return writeCharged(batch, order).pipe(
          Effect.exit,
          Effect.flatMap((written) =>
            Exit.isSuccess(written)
              ? Effect.forEach(written.value, (outcome, i) =>
                Either.isLeft(outcome)
                  ? Effect.succeed(Exit.fail(outcome.left))
                  : outcome.right === "charged"
                  ? Effect.succeed(Exit.void)
                  : alone(batch[i]!))
              // the transaction failed as a whole: nothing of it is written; each accept runs on its own
              : Effect.forEach(batch, alone)
          ),
          Effect.tap(wake)
        )
      }
      if (chargeBatch !== undefined) {
        const ordered = order.map((i) => batch[i]!)
        return Effect.forEach(ordered, (item) => encodeTask(item.record)).pipe(
          Effect.flatMap((encoded) =>
            chargeBatch(ordered.map((item) => item.charge), (made) => insertMade(encoded, made))
          ),
          Effect.exit,
          Effect.flatMap((together) => {
            // the statement failed: nothing of it is written; each accept runs on its own
            if (Exit.isFailure(together)) return Effect.forEach(batch, alone)
            const exits = new Array<Effect.Effect<AcceptExit>>(batch.length)
            together.value.forEach((outcome, j) => {
              const i = order[j]!
              exits[i] = Either.isLeft(outcome)
                ? Effect.succeed(Exit.fail(outcome.left))
                : outcome.right === "charged"
                ? Effect.succeed(Exit.void)
                // an auto top-up may follow the charge: the accept on its own, in a transaction
                : alone(batch[i]!)
            })
            return Effect.all(exits)
          }),
          Effect.tap(wake)
        )
      }
      if (batch.length === 1) return Effect.forEach(batch, alone).pipe(Effect.tap(wake))
      return Effect.forEach(order, (i) => Effect.map(alone(batch[i]!), (exit) => [i, exit] as const)).pipe(
        sql.withTransaction,
        Effect.map((answers) => {
          const exits = new Array<AcceptExit>(batch.length)
          for (const [i, exit] of answers) exits[i] = exit
          return exits
        }),
        Effect.exit,
        Effect.flatMap((together) =>
          Exit.isSuccess(together)
            // an accept that failed on something else than a refusal (e.g. a deadlock with another process's
            // batch) runs again on its own
            ? Effect.forEach(
              together.value,
              (exit, i) => isRefusedOrDone(exit) ? Effect.succeed(exit) : alone(batch[i]!)
            )
            : Effect.forEach(batch, alone)
        ),
        Effect.tap(wake)
      )
    }, pg ? { fibers: chargedBatchers, partition: (item) => accountPartition(item.record.accountId) } : sqliteBatches)

    const accept: TaskLifecycle["Type"]["accept"] = ({ charge, idempotency: claim, task }) => {
      const record = fromNew(task, ms(task.createdAt), ms(task.deadlineAt))
      const charged = charge !== undefined && charge.amountMicros > 0 && billing.unmetered !== true
      if (claim === undefined) {
        const created = { _tag: "Created", task: record } as const
        // nothing else to write: the task joins the next multi-row insert (one statement, no transaction); with a
        // charge, the next batch of charged accepts (one transaction)
        return charged
          ? Effect.as(acceptingCharged({ record, charge }), created).pipe(persistAccept)
          : Effect.as(inserting(record), created).pipe(acceptSpan)
      }
      // the key taken by a write first: the transaction holds the write lock before it reads (SQLite: another
      // process's commit between a read and the first write of a deferred transaction fails it, SQLITE_BUSY, where a
      // first write waits for the other writer as the driver's busy timeout allows)
      const attempt = sql.withTransaction(Effect.gen(function*() {
        const createdAt = yield* nowSql
        const inserted = yield* sql`INSERT INTO ${t.idempotency} (account_id, "key", fingerprint, task_id, created_at)
          VALUES (${task.accountId}, ${claim.key}, ${claim.fingerprint}, ${task.id}, ${createdAt})
          ON CONFLICT (account_id, "key") DO NOTHING
          RETURNING task_id`
        if (inserted.length === 0) {
          const previous = yield* sql`SELECT fingerprint, task_id, created_at FROM ${t.idempotency}
            WHERE account_id = ${task.accountId} AND "key" = ${claim.key}`.pipe(
            Effect.flatMap(rows.idempotency.first),
            Effect.map(Option.getOrUndefined)
          )
          // gone meanwhile (pruned): the whole accept runs again
          if (previous === undefined) return yield* new IdempotencyRace()
          const verdict = IdempotencyWindow.judge(previous, claim)
          if (verdict === "Reused") {
            return yield* new Errors.IdempotencyKeyReused({ message: IdempotencyWindow.reusedMessage })
          }
          if (verdict === "Replay") {
            const original = yield* selectTask(previous.taskId)
            if (Option.isSome(original)) return { _tag: "Replayed", task: original.value } as const
          }
          // expired, or its task gone: take the key over, replacing exactly the row read above; a concurrent
          // accept that took it first leaves nothing to return, and the whole accept runs again
          const taken = yield* sql`UPDATE ${t.idempotency} SET fingerprint = ${claim.fingerprint}, task_id = ${task.id},
              created_at = ${createdAt}
            WHERE account_id = ${task.accountId} AND "key" = ${claim.key} AND task_id = ${previous.taskId}
            RETURNING task_id`
          if (taken.length === 0) return yield* new IdempotencyRace()
        }
        yield* (charged ? insertCharged(record, charge) : insertOne(record))
        return { _tag: "Created", task: record } as const
      }))
      return attempt.pipe(
        Effect.retry({ times: 3, while: (e) => e instanceof IdempotencyRace }),
        persistAccept,
        Effect.tap((result) => result._tag === "Created" ? wake : Effect.void)
      )
    }

    return accept
  })
