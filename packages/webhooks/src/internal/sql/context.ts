/**
 * What the operations of the SQL webhook storage share: the client and its dialect, the tables, the row decoders,
 * the storage clock, and the reads and writes several of them make. Built once per storage by {@link make}.
 */
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import type { DeliveryRow } from "../store/records.js"
import { decoders, persistence, type SqlOptions } from "./rows.js"
import { migrations, migrationsTable, storeName, tables } from "./schema.js"

/** Builds the context (runs the migrations). */
export const make = (options: SqlOptions) =>
  Effect.gen(function*() {
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const rows = decoders(prefix)

    const now = SqlStore.storageNow(sql, pg, options.time).pipe(persistence("now"))

    const selectWebhooks = (accountId: string) =>
      sql`SELECT * FROM ${t.webhooks} WHERE account_id = ${accountId} AND deleted_at IS NULL ORDER BY id`.pipe(
        Effect.flatMap(rows.webhook.all)
      )
    const selectWebhook = (id: string) =>
      sql`SELECT * FROM ${t.webhooks} WHERE id = ${id}`.pipe(Effect.flatMap(rows.webhook.first))
    const insertDeliveries = (deliveries: ReadonlyArray<DeliveryRow>) =>
      Effect.flatMap(
        Effect.forEach(deliveries, rows.delivery.encode),
        (encoded) => sql`INSERT INTO ${t.deliveries} ${sql.insert(encoded)}`
      )
    return { insertDeliveries, now, pg, prefix, rows, selectWebhook, selectWebhooks, sql, t }
  })

/** The context of the SQL webhook storage. */
export type SqlContext = Effect.Effect.Success<ReturnType<typeof make>>
