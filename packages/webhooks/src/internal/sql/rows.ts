/**
 * The rows of the SQL webhook storage: their decoders (the records' Schemas of `WebhookStore`, named after their
 * tables), the storage's failures as `PersistenceError`, and its options.
 */
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Schema from "effect/Schema"
import { AttemptRow, DeliveryRow, WebhookRow } from "../store/records.js"
import { storeName, tables } from "./schema.js"

const { column } = SqlRows

/** The decoders of the webhook rows (their Schemas are the records of `WebhookStore`), named after their tables. */
export const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    webhook: SqlRows.decoder(names.webhooks, WebhookRow),
    delivery: SqlRows.decoder(names.deliveries, DeliveryRow),
    // a claimed delivery with its configured webhook (the claim's `RETURNING` reads it)
    claimed: SqlRows.decoder(
      names.deliveries,
      Schema.Struct({
        ...DeliveryRow.fields,
        webhookSecret: column("webhook_secret", Schema.NullOr(Schema.String)),
        webhookEnabled: column("webhook_enabled", Schema.NullOr(SqlRows.Flag)),
        webhookDeletedAt: column("webhook_deleted_at", Schema.NullOr(SqlRows.Number))
      })
    ),
    attempt: SqlRows.decoder(names.attempts, AttemptRow),
    idempotency: SqlRows.decoder(
      names.idempotency,
      Schema.Struct({
        fingerprint: Schema.String,
        webhookId: column("webhook_id", Schema.String),
        createdAt: column("created_at", SqlRows.Number)
      })
    ),
    cursor: SqlRows.decoder(names.cursor, Schema.Struct({ position: Schema.String })),
    fanned: SqlRows.decoder(names.deliveries, Schema.Struct({ moved: SqlRows.Number, created: SqlRows.Number })),
    count: SqlRows.decoder(names.deliveries, Schema.Struct({ n: SqlRows.Number })),
    due: SqlRows.decoder(names.deliveries, Schema.Struct({ due: Schema.NullOr(SqlRows.Number) })),
    backlog: SqlRows.decoder(
      names.deliveries,
      Schema.Struct({
        pending: SqlRows.Number,
        due: SqlRows.Number,
        failed: SqlRows.Number
      })
    )
  }
}

/** Storage failures become `PersistenceError`. */
export const persistence = SqlStore.persistence(storeName)

/** Options of the SQL storage: the table prefix and where "now" comes from (default: the database clock). */
export interface SqlOptions extends SqlStore.PrefixOptions, SqlStore.TimeOptions {}
