/**
 * The account's ledger as `GET /api/v1/balance/ledger` shows it (docs/billing.md "Reading the ledger"): charges,
 * refunds, top-ups and adjustments, newest first, keyset-paged like the task list. Read-only: entries are written
 * by billing only.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { oneOf, optional, pageCursor, pageLimit } from "./Fields.js"
import { Timestamp } from "./Timestamp.js"

/**
 * Kinds of ledger entries.
 *
 * @since 0.1.0
 * @category constants
 */
export const ledgerKinds = ["charge", "refund", "top_up", "adjustment"] as const
/**
 * A kind of ledger entry.
 *
 * @since 0.1.0
 * @category schemas
 */
export type LedgerKind = typeof ledgerKinds[number]
/**
 * A kind of ledger entry.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LedgerKind = Schema.Literal(...ledgerKinds).annotations({ identifier: "LedgerKind" })

/**
 * One entry of the ledger.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LedgerEntry = Schema.Struct({
  id: Schema.String.annotations({ description: "Increasing in the order entries were written" }),
  kind: LedgerKind,
  amount: Schema.Number.annotations({
    description: "Signed USD: charges are negative, refunds and top-ups positive, adjustments either"
  }),
  task_id: Schema.NullOr(Schema.String).annotations({ description: "The task a charge or refund is about" }),
  key_id: Schema.NullOr(Schema.String).annotations({ description: "The key that created the task" }),
  description: Schema.String,
  month: Schema.String.annotations({ description: "The calendar month (UTC, YYYY-MM) the entry counts in" }),
  created_at: Timestamp
}).annotations({ identifier: "LedgerEntry" })
/**
 * One entry of the ledger.
 *
 * @since 0.1.0
 * @category schemas
 */
export type LedgerEntry = typeof LedgerEntry.Type

/**
 * Query of `GET /api/v1/balance/ledger`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LedgerListQuery = Schema.Struct({
  kind: optional(oneOf(...ledgerKinds).annotations({ description: "Only entries of this kind" })),
  limit: pageLimit,
  cursor: pageCursor
}).annotations({ identifier: "LedgerListQuery" })
/**
 * Query of `GET /api/v1/balance/ledger`, decoded.
 *
 * @since 0.1.0
 * @category schemas
 */
export type LedgerListQuery = typeof LedgerListQuery.Type
