/**
 * Retention of the SQL webhook storage: settled deliveries (with their attempt logs) and registration idempotency
 * records deleted by age.
 */
import * as Effect from "effect/Effect"
import type { WebhookStore } from "../../WebhookStore.js"
import type { SqlContext } from "./context.js"
import { persistence } from "./rows.js"

/** Builds the retention's operations on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { sql, t } = context
    const service: Pick<WebhookStore["Type"], "pruneDeliveries" | "pruneIdempotency"> = {
      pruneDeliveries: (before) =>
        Effect.suspend(() => {
          const settledBefore = sql`status <> 'pending' AND created_at < ${Math.floor(before)}`
          return sql.withTransaction(
            sql`DELETE FROM ${t.attempts} WHERE delivery_id IN (SELECT id FROM ${t.deliveries} WHERE ${settledBefore})`
              .pipe(
                Effect.zipRight(sql`DELETE FROM ${t.deliveries} WHERE ${settledBefore} RETURNING id`)
              )
          )
        }).pipe(Effect.map((pruned) => pruned.length), persistence("pruneDeliveries")),
      pruneIdempotency: (before) =>
        sql`DELETE FROM ${t.idempotency} WHERE created_at < ${Math.floor(before)} RETURNING webhook_id`.pipe(
          Effect.map((pruned) => pruned.length),
          persistence("pruneIdempotency")
        )
    }
    return service
  })
