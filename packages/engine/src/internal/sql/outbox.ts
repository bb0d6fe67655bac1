/**
 * `TaskOutbox` on SQL (SQLite, PostgreSQL): the outbox read gap-free in commit order, its wake-ups, its pruning.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import { TaskOutbox } from "../../TaskOutbox.js"
import type { SqlContext } from "./context.js"
import { outboxHorizon, persistence } from "./rows.js"
import { tables } from "./schema.js"

/** Builds the port on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { outboxSignals, pg, prefix, remoteOutbox, rows, sql, t } = context
    const outboxTable = tables(prefix).outbox
    // an entry's columns and its task's environment (tasks are never deleted; `live` should one be missing)
    const outboxColumns = sql.literal(
      "o.seq, o.account_id, o.task_id, o.webhook_url, o.event, o.created_at, COALESCE(t.environment, 'live') AS environment"
    )
    const readOutbox: TaskOutbox["Type"]["readOutbox"] = (cursor, limit) =>
      Effect.gen(function*() {
        const size = Math.max(0, Math.floor(limit))
        if (!pg) {
          // one writer at a time: sequence order is commit order
          const after = Math.max(0, Math.floor(Number(cursor ?? "0") || 0))
          const read = yield* sql`SELECT ${outboxColumns} FROM ${t.outbox} o LEFT JOIN ${t.tasks} t ON t.id = o.task_id
            WHERE o.seq > ${after} ORDER BY o.seq LIMIT ${size}`.pipe(Effect.flatMap(rows.outbox.all))
          const entries = yield* Either.all(read.map(rows.outboxEntry))
          return { entries, cursor: String(read.at(-1)?.seq ?? after) }
        }
        // PostgreSQL: concurrent transactions commit out of sequence order, so a reader walks (txid, seq) and only
        // up to the oldest transaction still running: nothing can appear behind such a cursor later. The cursor is
        // compared as a row, which the (txid, seq) index seeks to (an OR of its parts scans the index from its start)
        const [lastTxid = 0, lastSeq = 0] = (cursor ?? "0:0").split(":").map((part) =>
          Math.max(0, Math.floor(Number(part) || 0))
        )
        // the horizon, and whether committed entries are held back by it (the reader then looks again shortly): the
        // first entry at or past it, read in the (txid, seq) index's order (an EXISTS may be planned as a scan of the
        // whole table while its statistics lag behind a burst)
        const { heldBack, horizon } = yield* sql.unsafe(`WITH hz AS (${outboxHorizon(prefix)})
          SELECT hz.horizon, (SELECT txid FROM ${outboxTable} WHERE txid >= hz.horizon ORDER BY txid LIMIT 1)
            IS NOT NULL AS held FROM hz`).pipe(Effect.flatMap(rows.horizon.single))
        const read =
          yield* sql`SELECT o.txid, ${outboxColumns} FROM ${t.outbox} o LEFT JOIN ${t.tasks} t ON t.id = o.task_id
          WHERE (o.txid, o.seq) > (${lastTxid}, ${lastSeq}) AND o.txid < ${horizon}
          ORDER BY o.txid, o.seq LIMIT ${size}`.pipe(Effect.flatMap(rows.outbox.all))
        const last = read.at(-1)
        return {
          entries: yield* Either.all(read.map(rows.outboxEntry)),
          cursor: last === undefined ? `${lastTxid}:${lastSeq}` : `${last.txid ?? lastTxid}:${last.seq}`,
          heldBack
        }
      }).pipe(persistence("readOutbox"))

    const pruneOutbox: TaskOutbox["Type"]["pruneOutbox"] = (cursor, before) =>
      Effect.suspend(() => {
        if (cursor === undefined) return Effect.succeed([])
        const written = Math.floor(before)
        if (!pg) {
          const passed = Math.max(0, Math.floor(Number(cursor) || 0))
          return sql`DELETE FROM ${t.outbox} WHERE seq <= ${passed} AND created_at < ${written} RETURNING seq`
        }
        // the cursor walks (txid, seq): everything at or before it has been read
        const [txid = 0, seq = 0] = cursor.split(":").map((part) => Math.max(0, Math.floor(Number(part) || 0)))
        return sql`DELETE FROM ${t.outbox} WHERE (txid, seq) <= (${txid}, ${seq})
          AND created_at < ${written} RETURNING seq`
      }).pipe(Effect.map((pruned) => pruned.length), persistence("pruneOutbox"))

    return TaskOutbox.of({
      readOutbox,
      outboxWakeups: Stream.merge(Stream.fromPubSub(outboxSignals), remoteOutbox),
      pruneOutbox
    })
  })
