/**
 * The engine's `Billing` on SQL: charges (PostgreSQL's or SQLite's, in a transaction of their own or the caller's,
 * PostgreSQL's in batches, SQLite's as statements of a write connection) and refunds.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Billing } from "@mediagate/engine/Billing"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { entry, isAmount, refundParts, requireAmount, topUpDue } from "../../Ledger.js"
import type { BillingContext } from "./context.js"
import * as PgCharge from "./pgCharge.js"
import { minus, persistence } from "./rows.js"
import * as SqliteCharge from "./sqliteCharge.js"

/** Builds the engine's `Billing` on billing's context. */
export const make = (context: BillingContext) =>
  Effect.gen(function*() {
    const { addBalance, appendEntry, autoTopUp, chain, lockAccount, pg, rows, sql, t } = context
    const { pgCharge, pgChargeBatch } = yield* PgCharge.make(context)
    const { sqliteCharge, sqliteCharging } = yield* SqliteCharge.make(context)

    /**
     * A charge in `transaction` (or the caller's), then its auto top-up. The account row is locked first
     * (PostgreSQL: the row lock; SQLite: the database's write lock); then the balance (prepaid), the spend limit of
     * the key and of every ancestor (the key tree: each spend row counts what its key and its descendants spent) and
     * the month's are checked, and the debit, the ledger entry, the spend of the key and its ancestors and the
     * month's spend are written:
     * - PostgreSQL: a charge is a batch of one ({@link pgChargeBatch}): one call of the charge function, which locks
     *   the account, reads and writes everything, and writes nothing when it refuses ({@link createChargeFunction});
     *   several charges in one transaction lock their accounts together, once, in the same call.
     * - SQLite (one writer): the debit takes the lock and also answers the first limit of the chain the charge would
     *   pass, the key's ancestors and the month's spend; the checks run here (a refusal after the debit: the caller's
     *   transaction rolls back), then three writes (one `UPDATE` of the chain's spend rows by primary key). Four
     *   statements in all.
     * A derived key adds no statement: one more spend row read and written (by primary key) per ancestor.
     */
    const chargeWith = (
      transaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
    ): Billing["Type"]["charge"] =>
    (charge) =>
      Effect.gen(function*() {
        yield* requireAmount("a charge", charge.amountMicros)
        if (charge.amountMicros === 0) return
        const now = yield* Clock.currentTimeMillis
        if (pg) return yield* transaction(pgCharge(charge, now))
        yield* transaction(Effect.flatMap(
          sqliteCharge(charge, charge.amountMicros, now),
          (row) => autoTopUp(charge.accountId, row, row.balanceMicros, now)
        ))
      }).pipe(persistence("charge"))

    const billing: Billing["Type"] = {
      charge: chargeWith(sql.withTransaction),
      chargeInTransaction: chargeWith((self) => self),
      ...(pg ?
        {
          chargeBatch: (charges, alongside) => pgChargeBatch(charges, alongside).pipe(persistence("charge"))
        } :
        {
          // the same statements as `chargeInTransaction` on SQLite; an auto top-up due after the charge is left to it
          *chargeStatements(charge, now) {
            const amount = charge.amountMicros
            if (amount === 0) return Either.right("charged")
            if (!isAmount(amount)) return Either.right("deferred")
            const charged = yield* sqliteCharging(charge, amount, now)
            return Either.map(charged, (row) => topUpDue(row, row.balanceMicros) === undefined ? "charged" : "deferred")
          }
        }),

      refund: (refund) =>
        Effect.gen(function*() {
          yield* requireAmount("a refund", refund.amountMicros)
          if (refund.amountMicros === 0) return
          const now = yield* Clock.currentTimeMillis
          yield* sql.withTransaction(Effect.gen(function*() {
            const row = yield* lockAccount(refund.accountId)
            if (row === undefined) return
            // what is left to refund of the task's charges, by the month they were made in
            const open = yield* sql`SELECT month, SUM(amount_micros) AS net FROM ${t.ledger}
            WHERE task_id = ${refund.taskId} AND account_id = ${refund.accountId} AND kind IN ('charge', 'refund')
            GROUP BY month`.pipe(
              Effect.flatMap(rows.openMonths.all),
              Effect.map((months) => months.map(({ month, net }) => ({ month, remaining: -net })))
            )
            let total = 0
            for (const { amountMicros: part, month } of refundParts(refund.amountMicros, open)) {
              yield* appendEntry(entry("refund", refund, part, refund.reason, now, month))
              yield* sql`UPDATE ${t.monthSpend} SET spent_micros = ${sql.literal(minus("spent_micros", part))}
              WHERE account_id = ${refund.accountId} AND month = ${month}`
              total += part
            }
            if (total === 0) return
            yield* addBalance(refund.accountId, total, now)
            // the key's spend and every ancestor's (see `charging`)
            yield* sql`UPDATE ${t.keySpend} SET spent_micros = ${sql.literal(minus("spent_micros", total))}
            WHERE key_id IN (${chain(refund.keyId)})`
          }))
        }).pipe(persistence("refund"))
    }

    return billing
  })
