/**
 * What the ports of the SQL task storage share: the client and its dialect, the tables, the clock, the wake-ups and
 * the terminal transitions' refund and event. Built once per storage by {@link make}.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import * as GroupCommit from "@mediagate/persistence/GroupCommit"
import * as Ids from "@mediagate/persistence/Ids"
import * as Listen from "@mediagate/persistence/Listen"
import type * as ReadConnection from "@mediagate/persistence/ReadConnection"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as PubSub from "effect/PubSub"
import { Billing } from "../../Billing.js"
import { refundFor, type TaskRecord, toEvent } from "../../TaskRecord.js"
import { decoders, json, maxBatch, ms, outboxLockKeys, readBatchers, rememberedTasks, type SqlOptions } from "./rows.js"
import { activeList, migrations, migrationsTable, outboxChannel, storeName, tables, wakeupChannel } from "./schema.js"

/** The file of a SQLite client (`@effect/sql-sqlite-node`'s config), or "" when it does not say. */
const sqliteFile = (client: SqlClient.SqlClient): string => {
  const config: unknown = (client as { readonly config?: unknown }).config
  const filename = typeof config === "object" && config !== null ? (config as { filename?: unknown }).filename : ""
  return typeof filename === "string" ? filename : ""
}

/**
 * Reads of a row by id on PostgreSQL's pool, batched: an id asked for while {@link readBatchers} reads are under way
 * waits for the next, which reads every id waiting in one statement (`many`, `$1` the distinct ids); an id alone is
 * read with `one`. Answers the id's rows (none or one). A read still starts after its caller asked, so it sees every
 * commit that came before.
 */
const readTogether = (reader: ReadConnection.Reader, one: string, many: string) =>
  GroupCommit.make(maxBatch, (ids: ReadonlyArray<string>) => {
    const distinct = [...new Set(ids)]
    return Effect.match(distinct.length === 1 ? reader.all(one, distinct) : reader.all(many, [distinct]), {
      onFailure: (error) => ids.map(() => Exit.fail(error)),
      onSuccess: (rows) => {
        const byId = new Map<unknown, unknown>()
        for (const row of rows) byId.set((row as { readonly id?: unknown }).id, row)
        return ids.map((id) => {
          const row = byId.get(id)
          return Exit.succeed(row === undefined ? [] : [row])
        })
      }
    })
  }, { fibers: readBatchers })

/** Builds the context (runs the migrations). */
export const make = (options: SqlOptions) =>
  Effect.gen(function*() {
    const client = yield* SqlClient.SqlClient
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const billing = yield* Billing
    const time = options.time ?? "database"
    const rows = decoders(prefix)
    const channel = wakeupChannel(prefix)
    // SQLite cannot LISTEN: with other threads of this process on the file (`threads`: a server's worker thread),
    // wakeups go to them on BroadcastChannels named after the database file
    const threads = pg || options.threads !== true ? undefined : `${sqliteFile(client)}\u0000`
    const threadWake = threads === undefined ? Effect.void : yield* Listen.threadPoster(threads + channel)
    const signals = yield* PubSub.sliding<void>(1)
    const wake = Effect.zipRight(PubSub.publish(signals, undefined), threadWake)
    const notify = pg ? sql`SELECT pg_notify(${channel}, ${"wake"})`.pipe(Effect.asVoid) : threadWake
    /** The wakeup of other processes as part of a write (PostgreSQL: `RETURNING (SELECT pg_notify(...))`, sent on commit). */
    const notifying = pg ? sql` RETURNING (SELECT pg_notify(${channel}, ${"wake"})) AS woke` : sql.literal("")
    const outboxName = outboxChannel(prefix)
    const outboxSignals = yield* PubSub.sliding<void>(1)
    const threadOutboxWake = threads === undefined ? Effect.void : yield* Listen.threadPoster(threads + outboxName)
    /** Wakes this process's outbox readers (after the commit). */
    const outboxWake = Effect.zipRight(PubSub.publish(outboxSignals, undefined), threadOutboxWake)
    /** The wakeup of other processes' outbox readers as part of the outbox insert (PostgreSQL; sent on commit). */
    const outboxNotifying = pg ? sql` RETURNING (SELECT pg_notify(${outboxName}, ${"wake"})) AS woke` : sql.literal("")
    /** The first statement of a transaction that writes the outbox (PostgreSQL; see {@link outboxLockKeys}). */
    const [outboxKey1, outboxKey2] = outboxLockKeys(prefix)
    const outboxLock = pg
      ? Effect.asVoid(sql`SELECT pg_advisory_xact_lock_shared(${outboxKey1}, ${outboxKey2})`)
      : Effect.void
    /**
     * The same lock taken by the first statement that writes instead of a statement of its own (one round trip
     * less): a CTE of that statement, and {@link outboxLocked} in its `WHERE`. The condition refers to nothing of the
     * row, so PostgreSQL evaluates it once (an init plan) before the statement yields its first row to write: the
     * lock is held before the transaction gets its id, as the outbox readers' horizon needs.
     */
    const outboxLockCte = pg
      ? sql`outbox_lock AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(${outboxKey1}, ${outboxKey2})), `
      : sql.literal("")
    const outboxLocked = pg ? sql.literal(" AND EXISTS (SELECT 1 FROM outbox_lock)") : sql.literal("")

    /** "now" as an SQL expression: the database clock, or the reading of Effect's `Clock` as a parameter. */
    const nowSql: Effect.Effect<Fragment> = time === "database"
      ? Effect.succeed(sql.literal(SqlStore.nowExpression(pg)))
      : Effect.map(Clock.currentTimeMillis, (now) => sql`CAST(${ms(now)} AS BIGINT)`)
    /** "now" computed once per statement: `WITH clock AS (SELECT <now> AS now) ...`, read as {@link NOW}. */
    const withClock = Effect.map(nowSql, (now) =>
      sql`WITH clock AS ${sql.literal(pg ? "MATERIALIZED " : "")}(SELECT ${now} AS now)`)
    const NOW = sql.literal("(SELECT now FROM clock)")
    const ACTIVE = sql.literal(`status IN ${activeList}`)
    const REAL = sql.literal(SqlStore.columns(sql).real)

    /** The storage clock as a value (inside a transaction: one reading for the whole transition). */
    const currentTime = SqlStore.storageNow(sql, pg, time)

    const taskById = (id: string) =>
      sql`SELECT * FROM ${t.tasks} WHERE id = ${id}`
    const selectTask = (id: string) => Effect.flatMap(taskById(id), rows.task.first)
    // a task read on its own (not in a transaction): through the read connection when there is one
    const reader = options.reader
    const readTaskQuery = `SELECT * FROM "${tables(prefix).tasks}" WHERE id = ${pg ? "$1" : "?"}`
    // a task polled while it waits is read again and again unchanged: its row is decoded once per change
    const readRows = SqlRows.remembering(rows.task, "id", rememberedTasks)
    const readTask = reader === undefined
      ? (id: string) => Effect.flatMap(taskById(id), readRows.first)
      : pg
      ? yield* readTogether(reader, readTaskQuery, `SELECT * FROM "${tables(prefix).tasks}" WHERE id = ANY($1::text[])`)
        .pipe(Effect.map((read) => (id: string) => Effect.flatMap(read(id), readRows.first)))
      : (id: string) => Effect.flatMap(reader.all(readTaskQuery, [id]), readRows.first)

    /** The refund a task that just became terminal is owed (failed, expired, cancelled), recorded; the task after it. */
    const refund = (task: TaskRecord) =>
      Effect.gen(function*() {
        const owed = refundFor(task, task.status)
        if (owed === undefined) return task
        if (billing.unmetered !== true) yield* billing.refund(owed)
        yield* sql`UPDATE ${t.tasks} SET refunded_micros = refunded_micros + ${owed.amountMicros} WHERE id = ${task.id}`
        return { ...task, refundedMicros: task.refundedMicros + owed.amountMicros }
      })

    /** Refund (failed, expired, cancelled) and outbox event of a task that just became terminal. */
    const settle = (task: TaskRecord, now: number) =>
      Effect.gen(function*() {
        const ended = yield* refund(task)
        yield* sql`INSERT INTO ${t.outbox} ${
          sql.insert({
            account_id: ended.accountId,
            task_id: ended.id,
            webhook_url: ended.webhookUrl,
            event: json(toEvent(ended, Ids.eventId(now), now)),
            created_at: now
          })
        }${outboxNotifying}`
        return ended
      })

    // SQLite's statements are synchronous: its batches gather the calls of requests that arrived together
    const sqliteBatches = { gather: !pg }
    // PostgreSQL: a lost LISTEN connection (restart, killed backend) is found by a probe and opened again; wakeups
    // never fail. SQLite: the other threads of this process only, if any (another process's tasks are found by
    // polling)
    const remote = threads === undefined
      ? Listen.notifications(client, channel)
      : Listen.threadNotifications(threads + channel)
    const remoteOutbox = threads === undefined
      ? Listen.notifications(client, outboxName)
      : Listen.threadNotifications(threads + outboxName)
    return {
      options,
      client,
      billing,
      time,
      rows,
      channel,
      signals,
      wake,
      notify,
      notifying,
      outboxName,
      outboxSignals,
      outboxWake,
      outboxNotifying,
      outboxLock,
      outboxLockCte,
      outboxLocked,
      nowSql,
      withClock,
      NOW,
      ACTIVE,
      REAL,
      currentTime,
      taskById,
      selectTask,
      reader,
      readTaskQuery,
      readRows,
      readTask,
      refund,
      settle,
      pg,
      prefix,
      sql,
      t,
      sqliteBatches,
      remote,
      remoteOutbox
    }
  })

/** The context of a storage. */
export type SqlContext = Effect.Effect.Success<ReturnType<typeof make>>
