/**
 * The fan-out of the SQL webhook storage: the dispatcher's outbox cursor, and the deliveries of a page of outbox
 * entries created in one step with the cursor's compare-and-set (the first of them leased to the caller when asked).
 */
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import type { OutboxEntry } from "@mediagate/engine/TaskOutbox"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WebhookStore } from "../../WebhookStore.js"
import type { DeliveryRow, FannedOut, FanOutLease, WebhookRow } from "../store/records.js"
import { fannedRows } from "../store/rows.js"
import type { SqlContext } from "./context.js"
import { persistence } from "./rows.js"

const cursorName = "outbox"

/** The most deliveries one fan-out statement inserts on PostgreSQL (7 parameters each); more go in a transaction. */
const maxFanOutStatement = 4000

/** Builds the fan-out's operations on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { insertDeliveries, pg, rows, sql, t } = context

    /** The compare-and-set, then the deliveries read and inserted, in one transaction (SQLite; large fan-outs). */
    const fanOutInTransaction = <F extends { readonly rows: ReadonlyArray<DeliveryRow> }, E>(
      compareAndSet: Effect.Effect<ReadonlyArray<unknown>, SqlError>,
      deliveries: Effect.Effect<F, E>
    ) =>
      sql.withTransaction(Effect.gen(function*() {
        const moved = yield* compareAndSet
        if (moved.length === 0) return Option.none<F>()
        const created = yield* deliveries
        for (let i = 0; i < created.rows.length; i += 200) yield* insertDeliveries(created.rows.slice(i, i + 200))
        return Option.some(created)
      }))

    /**
     * PostgreSQL: the compare-and-set and the inserts in one statement (data-modifying CTEs): the deliveries are
     * inserted only when the cursor moved.
     */
    const fanOutStatement = (compareAndSet: Statement.Statement<unknown>, created: ReadonlyArray<DeliveryRow>) => {
      if (created.length === 0) {
        return Effect.map(compareAndSet, (moved) => moved.length === 0 ? Option.none<number>() : Option.some(0))
      }
      const time = created[0]!.createdAt
      // a leased delivery (`fanOutLeased`) carries its owner, expiry and fence 1; the others none and 0
      const values = created.map((d) =>
        sql`(${d.id}, ${d.webhookId}, ${d.accountId}, ${d.eventId}, ${d.eventType}, ${d.url}, ${d.payload}, ${d.leaseOwner}, ${
          d.leaseExpiresAt === null ? null : String(d.leaseExpiresAt)
        })`
      )
      return sql`WITH moved AS (${compareAndSet}),
        created AS (
          INSERT INTO ${t.deliveries} (id, webhook_id, account_id, event_id, event_type, url, payload, status, attempts,
            last_status_code, last_error, next_attempt_at, lease_owner, lease_expires_at, fence, created_at)
          SELECT v.id, v.webhook_id, v.account_id, v.event_id, v.event_type, v.url, v.payload, 'pending', 0,
            NULL, NULL, CAST(${time} AS BIGINT), v.lease_owner, CAST(v.lease_expires_at AS BIGINT),
            CASE WHEN v.lease_owner IS NULL THEN 0 ELSE 1 END, CAST(${time} AS BIGINT)
          FROM (VALUES ${sql.csv(values)})
            AS v (id, webhook_id, account_id, event_id, event_type, url, payload, lease_owner, lease_expires_at)
          WHERE EXISTS (SELECT 1 FROM moved)
          RETURNING id)
        SELECT (SELECT COUNT(*) FROM moved) AS moved, (SELECT COUNT(*) FROM created) AS created`.pipe(
        Effect.flatMap(rows.fanned.single),
        Effect.map(({ created, moved }) => moved === 0 ? Option.none<number>() : Option.some(created))
      )
    }

    /**
     * The fan-out (`fanOut`, `fanOutLeased`): the accounts' live webhooks read, the deliveries built (the first
     * `lease.limit` leased), the cursor's compare-and-set and the inserts.
     */
    const fanOutLeased = (
      expected: string | undefined,
      next: string,
      entries: ReadonlyArray<OutboxEntry>,
      at: number,
      lease?: FanOutLease
    ) =>
      Effect.suspend(() => {
        const accounts = [...new Set(entries.map((entry) => entry.accountId))]
        const liveWebhooks = accounts.length === 0
          ? Effect.succeed([])
          : sql`SELECT * FROM ${t.webhooks}
            WHERE ${sql.in("account_id", accounts)} AND deleted_at IS NULL AND enabled = 1`.pipe(
            Effect.flatMap(rows.webhook.all)
          )
        const build = (webhooks: ReadonlyArray<WebhookRow>) => fannedRows(entries, webhooks, Math.floor(at), lease)
        const answer = (fanned: Effect.Effect.Success<ReturnType<typeof build>>): FannedOut => ({
          created: fanned.rows.length,
          leased: fanned.leased
        })
        // the compare-and-set: on PostgreSQL it locks the cursor row, so a concurrent dispatcher waits and then
        // finds the cursor moved
        const compareAndSet = expected === undefined
          ? sql`INSERT INTO ${t.cursor} (name, position) VALUES (${cursorName}, ${next})
              ON CONFLICT (name) DO NOTHING RETURNING name`
          : sql`UPDATE ${t.cursor} SET position = ${next}
              WHERE name = ${cursorName} AND position = ${expected} RETURNING name`
        if (pg) {
          // PostgreSQL: the webhooks are read first, then one statement moves the cursor and inserts the
          // deliveries only if it moved (atomic by itself: two round trips, no transaction). A webhook changed
          // between the two is as if the fan-out had run a moment earlier (as with a claim, the attempt uses the
          // webhook as read here).
          return Effect.flatMap(Effect.flatMap(liveWebhooks, build), (fanned) =>
            fanned.rows.length > maxFanOutStatement
              ? Effect.map(fanOutInTransaction(compareAndSet, Effect.succeed(fanned)), Option.map(answer))
              : Effect.map(fanOutStatement(compareAndSet, fanned.rows), Option.as(answer(fanned))))
        }
        return Effect.map(fanOutInTransaction(compareAndSet, Effect.flatMap(liveWebhooks, build)), Option.map(answer))
      }).pipe(persistence("fanOut"))

    const service: Pick<WebhookStore["Type"], "readCursor" | "fanOut" | "fanOutLeased"> = {
      readCursor: sql`SELECT position FROM ${t.cursor} WHERE name = ${cursorName}`.pipe(
        Effect.flatMap(rows.cursor.first),
        Effect.map(Option.match({ onNone: () => undefined, onSome: (row) => row.position })),
        persistence("readCursor")
      ),
      fanOut: (expected, next, entries, at) =>
        Effect.map(fanOutLeased(expected, next, entries, at), Option.map((fanned) => fanned.created)),
      fanOutLeased
    }
    return service
  })
