/**
 * `ChannelSlots` on SQL (SQLite, PostgreSQL): a channel's concurrency slots, its active tasks and its usage.
 */
import * as Effect from "effect/Effect"
import { ChannelSlots } from "../../ChannelSlots.js"
import type { SqlContext } from "./context.js"
import { hasNul, ms, persistence } from "./rows.js"
import { terminalList } from "./schema.js"

/** Builds the port on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { ACTIVE, pg, prefix, rows, sql, t } = context
    /**
     * A channel slot: the fenced write of the channel, only while fewer than `limit` other active tasks are on it.
     * SQLite runs one write statement at a time, so the count and the write are atomic; PostgreSQL serializes the
     * reservations of one channel with a transaction-scoped advisory lock taken before the statement (whose
     * snapshot then sees every reservation committed before it).
     */
    const reserveChannel: ChannelSlots["Type"]["reserveChannel"] = (id, fence, channelId, limit) =>
      Effect.suspend(() => {
        if (!Number.isSafeInteger(fence) || hasNul(id, channelId)) return Effect.succeed(false)
        const capped = limit > 0
          ? sql`AND (SELECT COUNT(*) FROM ${t.tasks} WHERE channel_id = ${channelId} AND ${ACTIVE} AND id <> ${id}) < ${
            Math.floor(limit)
          }`
          : sql.literal("")
        const write = sql`UPDATE ${t.tasks} SET channel_id = ${channelId}
          WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND ${ACTIVE} ${capped}
          RETURNING id`.pipe(Effect.map((written) => written.length > 0))
        return pg && limit > 0
          ? sql.withTransaction(
            Effect.zipRight(sql`SELECT pg_advisory_xact_lock(hashtext(${`${prefix}channel:${channelId}`}))`, write)
          )
          : write
      }).pipe(persistence("reserveChannel"))

    const channelUsage: ChannelSlots["Type"]["channelUsage"] = (since) =>
      sql`SELECT channel_id, model, COUNT(*) AS tasks,
          SUM(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END) AS succeeded,
          SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
          SUM(charged_micros - refunded_micros) AS charged_micros,
          COALESCE(SUM(upstream_seconds), 0) AS upstream_seconds,
          COALESCE(SUM(upstream_cost_micros), 0) AS upstream_cost_micros,
          COUNT(upstream_cost_micros) AS reported
        FROM ${t.tasks}
        WHERE channel_id IS NOT NULL AND environment = 'live' AND status IN ${sql.literal(terminalList)}
          AND created_at >= ${ms(since)}
        GROUP BY channel_id, model ORDER BY channel_id, model`.pipe(
        Effect.flatMap(rows.channelUsage.all),
        persistence("channelUsage")
      )

    const channelLoad: ChannelSlots["Type"]["channelLoad"] = sql`SELECT channel_id, COUNT(*) AS n FROM ${t.tasks}
      WHERE channel_id IS NOT NULL AND ${ACTIVE} GROUP BY channel_id`.pipe(
      Effect.flatMap(rows.channelLoad.all),
      Effect.map((loads) => new Map(loads.map(({ channelId, n }) => [channelId, n]))),
      persistence("channelLoad")
    )

    return ChannelSlots.of({
      reserveChannel,
      channelLoad,
      channelUsage
    })
  })
