/**
 * The deliveries of the SQL webhook storage: listed and read (with their attempt logs), added (a replay), claimed
 * with a lease and a fence, released, and counted for the operators' backlog.
 */
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WebhookStore } from "../../WebhookStore.js"
import type { ClaimedDelivery } from "../store/records.js"
import { newRow } from "../store/rows.js"
import type { SqlContext } from "./context.js"
import { persistence } from "./rows.js"

const { hasNul } = SqlStore

/** Builds the deliveries' operations on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { insertDeliveries, pg, rows, sql, t } = context

    /** The attempt logs of deliveries, by delivery then attempt (`attempts`, `attemptsOf`). */
    const attemptsOf = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql`SELECT * FROM ${t.attempts} WHERE ${sql.in("delivery_id", ids)} ORDER BY delivery_id, attempt`.pipe(
          Effect.flatMap(rows.attempt.all),
          persistence("attempts")
        )

    const service: Pick<
      WebhookStore["Type"],
      | "listDeliveries"
      | "getDelivery"
      | "deliveriesOfEvent"
      | "addDelivery"
      | "claimDue"
      | "attempts"
      | "attemptsOf"
      | "nextDueAt"
      | "releaseAll"
      | "backlog"
    > = {
      listDeliveries: (accountId, webhookId, query) =>
        Effect.gen(function*() {
          const limit = Math.max(0, Math.floor(query.limit))
          if (hasNul(accountId, webhookId, query.beforeId, query.status)) return { items: [], hasMore: false, total: 0 }
          // operators leave out the webhook or the account: every target, every account
          const filters = [
            ...(accountId === undefined ? [] : [sql`account_id = ${accountId}`]),
            ...(webhookId === undefined ? [] : [sql`webhook_id = ${webhookId}`]),
            ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
          ]
          const scope = sql.and(filters)
          const page = query.beforeId === undefined ? scope : sql`${scope} AND id < ${query.beforeId}`
          const items = yield* sql`SELECT * FROM ${t.deliveries} WHERE ${page} ORDER BY id DESC LIMIT ${limit + 1}`
            .pipe(
              Effect.flatMap(rows.delivery.all)
            )
          const total = yield* sql`SELECT COUNT(*) AS n FROM ${t.deliveries} WHERE ${scope}`.pipe(
            Effect.flatMap(rows.count.single)
          )
          return { items: items.slice(0, limit), hasMore: items.length > limit, total: total.n }
        }).pipe(persistence("listDeliveries")),
      getDelivery: (accountId, webhookId, id) =>
        persistence("getDelivery")(
          hasNul(accountId, webhookId, id)
            ? Effect.succeedNone
            : sql`SELECT * FROM ${t.deliveries}
                WHERE id = ${id} AND account_id = ${accountId} AND webhook_id = ${webhookId}`.pipe(
              Effect.flatMap(rows.delivery.first)
            )
        ),
      deliveriesOfEvent: (eventId) =>
        sql`SELECT * FROM ${t.deliveries} WHERE event_id = ${eventId} ORDER BY id`.pipe(
          Effect.flatMap(rows.delivery.all),
          persistence("deliveriesOfEvent")
        ),
      addDelivery: (delivery, at, addOptions) =>
        sql.withTransaction(Effect.gen(function*() {
          const row = newRow(delivery, Math.floor(at))
          yield* insertDeliveries([row])
          if (addOptions.enableWebhook && delivery.webhookId !== null) {
            yield* sql`UPDATE ${t.webhooks} SET enabled = 1 WHERE id = ${delivery.webhookId} AND deleted_at IS NULL`
          }
          return row
        })).pipe(persistence("addDelivery")),
      claimDue: (owner, limit, leaseMs, at) =>
        Effect.suspend(() => {
          const n = Math.max(0, Math.floor(limit))
          if (n === 0) return Effect.succeed([])
          const time = Math.floor(at)
          return sql`UPDATE ${t.deliveries} SET fence = fence + 1, lease_owner = ${owner},
              lease_expires_at = ${time + Math.floor(leaseMs)}
            WHERE id IN (
              SELECT id FROM ${t.deliveries}
              WHERE status = 'pending' AND next_attempt_at <= ${time}
                AND (lease_expires_at IS NULL OR lease_expires_at <= ${time})
              ORDER BY next_attempt_at, id
              LIMIT ${n}${sql.literal(pg ? " FOR UPDATE SKIP LOCKED" : "")}
            )
            RETURNING *,
              (SELECT w.secret FROM ${t.webhooks} w WHERE w.id = ${t.deliveries}.webhook_id) AS webhook_secret,
              (SELECT w.enabled FROM ${t.webhooks} w WHERE w.id = ${t.deliveries}.webhook_id) AS webhook_enabled,
              (SELECT w.deleted_at FROM ${t.webhooks} w WHERE w.id = ${t.deliveries}.webhook_id) AS webhook_deleted_at`
            .pipe(
              Effect.flatMap(rows.claimed.all),
              Effect.map((claimed) =>
                claimed
                  .map(({ webhookDeletedAt, webhookEnabled, webhookSecret, ...row }): ClaimedDelivery => ({
                    ...row,
                    webhook: webhookSecret === null
                      ? null
                      : { secret: webhookSecret, enabled: webhookEnabled === true, deletedAt: webhookDeletedAt }
                  }))
                  .sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0) || (a.id < b.id ? -1 : 1))
              )
            )
        }).pipe(persistence("claimDue")),
      attempts: (id) => attemptsOf([id]),
      attemptsOf,
      nextDueAt: sql`SELECT MIN(CASE WHEN lease_expires_at IS NOT NULL AND lease_expires_at > next_attempt_at
          THEN lease_expires_at ELSE next_attempt_at END) AS due
        FROM ${t.deliveries} WHERE status = 'pending' AND next_attempt_at IS NOT NULL`.pipe(
        Effect.flatMap(rows.due.first),
        Effect.map(Option.flatMap((row) => Option.fromNullable(row.due))),
        persistence("nextDueAt")
      ),
      releaseAll: (owner) =>
        sql`UPDATE ${t.deliveries} SET lease_owner = NULL, lease_expires_at = NULL
          WHERE lease_owner = ${owner} AND status = 'pending' RETURNING id`.pipe(
          Effect.map((released) => released.length),
          persistence("releaseAll")
        ),
      backlog: (at, failedSince) =>
        sql`SELECT
          (SELECT COUNT(*) FROM ${t.deliveries} WHERE status = 'pending') AS pending,
          (SELECT COUNT(*) FROM ${t.deliveries} WHERE status = 'pending' AND next_attempt_at <= ${
          Math.floor(at)
        }) AS due,
          (SELECT COUNT(*) FROM ${t.deliveries} WHERE status = 'failed' AND id IN (
            SELECT delivery_id FROM ${t.attempts} WHERE at >= ${Math.floor(failedSince)})) AS failed`.pipe(
          Effect.flatMap(rows.backlog.single),
          Effect.map(({ due, failed, pending }) => ({ pending, due, failedSince: failed })),
          persistence("backlog")
        )
    }
    return service
  })
