/**
 * `BillingLedger` on SQL: an account's ledger entries and auto top-up requests, and the ledger's pages.
 */
import * as Effect from "effect/Effect"
import type { BillingLedger } from "../../Ledger.js"
import type { BillingContext } from "./context.js"
import { persistence } from "./rows.js"

/** Builds `BillingLedger` on billing's context. */
export const make = (context: BillingContext) =>
  Effect.gen(function*() {
    const { rows, sql, t } = context
    const ledger: BillingLedger["Type"] = {
      entries: (accountId) =>
        sql`SELECT * FROM ${t.ledger} WHERE account_id = ${accountId} ORDER BY id`.pipe(
          Effect.flatMap(rows.ledger.all),
          persistence("ledger")
        ),
      topUpRequests: (accountId) =>
        sql`SELECT * FROM ${t.topUps} WHERE account_id = ${accountId} ORDER BY id`.pipe(
          Effect.flatMap(rows.topUp.all),
          persistence("topUpRequests")
        ),
      // both on the (account_id, id) index: a range scan of the page, a count of the account's entries
      page: (accountId, { before, kind, limit }) => {
        const ofKind = kind === undefined ? sql.literal("") : sql`AND kind = ${kind}`
        const below = before === undefined ? sql.literal("") : sql`AND id < ${before}`
        return Effect.all({
          entries: sql`SELECT * FROM ${t.ledger} WHERE account_id = ${accountId} ${ofKind} ${below}
          ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.flatMap(rows.ledger.all)),
          total: sql<{ readonly total: number | string | bigint }>`SELECT count(*) AS total FROM ${t.ledger}
          WHERE account_id = ${accountId} ${ofKind}`.pipe(Effect.map((found) => Number(found[0]?.total ?? 0)))
        }).pipe(persistence("ledgerPage"))
      }
    }

    return ledger
  })
