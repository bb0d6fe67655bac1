/**
 * `NodeRegistry` on SQL (SQLite, PostgreSQL): lease heartbeats and release, the registry of nodes.
 */
import * as Effect from "effect/Effect"
import { NodeRegistry } from "../../NodeRegistry.js"
import type { SqlContext } from "./context.js"
import { ms, persistence } from "./rows.js"

/** Builds the port on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { ACTIVE, NOW, notify, nowSql, rows, sql, t, wake, withClock } = context
    const heartbeat: NodeRegistry["Type"]["heartbeat"] = (owner, leaseMs) =>
      Effect.flatMap(withClock, (clock) =>
        sql`${clock} UPDATE ${t.tasks} SET lease_expires_at = ${NOW} + ${ms(leaseMs)}
          WHERE lease_owner = ${owner} AND ${ACTIVE} RETURNING id`).pipe(
          Effect.map((updated) => updated.length),
          persistence("heartbeat")
        )

    const releaseAll: NodeRegistry["Type"]["releaseAll"] = (owner) =>
      sql.withTransaction(Effect.gen(function*() {
        const released =
          yield* sql`${yield* withClock} UPDATE ${t.tasks} SET lease_owner = NULL, lease_expires_at = NULL,
            next_run_at = CASE WHEN next_run_at IS NULL OR next_run_at > ${NOW} THEN ${NOW} ELSE next_run_at END
          WHERE lease_owner = ${owner} AND ${ACTIVE} RETURNING id`
        if (released.length > 0) yield* notify
        return released.length
      })).pipe(persistence("releaseAll"), Effect.tap(() => wake))

    /** The node registry: one upsert per heartbeat, `last_seen_at` (and `started_at` on the first) the storage clock. */
    const beatNode: NodeRegistry["Type"]["beatNode"] = (beat) =>
      Effect.flatMap(nowSql, (now) =>
        sql`INSERT INTO ${t.nodes} (id, host, pid, concurrency, heartbeat_ms, leases, started_at, last_seen_at,
            apart_from)
          VALUES (${beat.id}, ${beat.host}, ${Math.floor(beat.pid)}, ${Math.floor(beat.concurrency)},
            ${ms(beat.heartbeatMs)}, ${Math.floor(beat.leases)}, ${now}, ${now}, ${beat.apartFrom?.join(" ") || null})
          ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, concurrency = excluded.concurrency,
            heartbeat_ms = excluded.heartbeat_ms, leases = excluded.leases, last_seen_at = excluded.last_seen_at,
            apart_from = excluded.apart_from`).pipe(
          Effect.asVoid,
          persistence("beatNode")
        )

    const removeNode: NodeRegistry["Type"]["removeNode"] = (id) =>
      sql`DELETE FROM ${t.nodes} WHERE id = ${id}`.pipe(Effect.asVoid, persistence("removeNode"))

    const nodes: NodeRegistry["Type"]["nodes"] = (dropBefore) =>
      sql`DELETE FROM ${t.nodes} WHERE last_seen_at < ${ms(dropBefore)}`.pipe(
        Effect.zipRight(sql`SELECT * FROM ${t.nodes} ORDER BY started_at, id`),
        Effect.flatMap(rows.node.all),
        persistence("nodes")
      )

    return NodeRegistry.of({
      heartbeat,
      releaseAll,
      beatNode,
      removeNode,
      nodes
    })
  })
