/**
 * SQLite's charge: four statements on the one write connection (the debit, which takes the write lock and answers
 * what the checks need, then the ledger entry, the key chain's spend and the month's spend), as a program run
 * through the client or synchronously in a write connection's transaction.
 */
import type { Charge } from "@mediagate/engine/Billing"
import * as SqlProgram from "@mediagate/persistence/SqlProgram"
import type * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { monthOf } from "../../Ledger.js"
import type { BillingContext } from "./context.js"
import type { DebitedRow, Refusal } from "./rows.js"
import { tables } from "./tables.js"

/** Builds SQLite's charge on billing's context. */
export const make = (context: BillingContext) =>
  Effect.gen(function*() {
    const { coveredRow, limitExceeded, prefix, rows, sql, sqliteChain } = context

    /** SQLite: a charge's statements through the client ({@link sqliteCharging}): the debited row, or the refusal. */
    const sqliteCharge = (charge: Charge, amount: number, now: number) =>
      Effect.flatMap(SqlProgram.run(sqliteCharging(charge, amount, now), sql), (charged) => charged)

    /**
     * SQLite: the texts of the charge's statements ({@link sqliteCharging}), written once. The debit also answers the
     * first limit of the key's chain (the key and its ancestors) the charge would pass, the key's ancestors and the
     * month's spend.
     */
    const sqliteText = (() => {
      const names = tables(prefix)
      const over = (column: string) =>
        `(SELECT ${column} FROM "${names.keySpend}" WHERE key_id IN (${sqliteChain})
        AND spend_limit_micros IS NOT NULL AND spent_micros + ? > spend_limit_micros
        ORDER BY spend_limit_micros - spent_micros, key_id LIMIT 1)`
      const keySpend = new Map<number, string>()
      return {
        // params: amount, now, account, then key, key, amount (twice), key, account, month
        debit: `UPDATE "${names.accounts}" SET balance_micros = balance_micros - ?, updated_at = ? WHERE account_id = ?
        RETURNING *, ${over("spend_limit_micros")} AS key_limit, ${over("spent_micros")} AS key_spent,
          (SELECT ancestors FROM "${names.keySpend}" WHERE key_id = ?) AS key_ancestors,
          (SELECT spent_micros FROM "${names.monthSpend}" WHERE account_id = ? AND month = ?) AS month_spent`,
        ledger: `INSERT INTO "${names.ledger}" (account_id, kind, amount_micros, key_id, task_id, description, month,
        created_at) VALUES (?, 'charge', ?, ?, ?, ?, ?, ?)`,
        keySpendNew: `INSERT INTO "${names.keySpend}" (key_id, account_id, spend_limit_micros, spent_micros)
        VALUES (?, ?, NULL, ?) ON CONFLICT (key_id) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros`,
        /** The spend of a chain of `n` keys (the key and its ancestors). */
        keySpend: (n: number) => {
          let text = keySpend.get(n)
          if (text === undefined) {
            text = `UPDATE "${names.keySpend}" SET spent_micros = spent_micros + ? WHERE key_id IN (${
              Array.from({ length: n }, () => "?").join(", ")
            })`
            keySpend.set(n, text)
          }
          return text
        },
        monthSpend: `INSERT INTO "${names.monthSpend}" (account_id, month, spent_micros) VALUES (?, ?, ?)
        ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros`
      }
    })()

    /**
     * SQLite's charge as a program (see {@link chargeWith}): run through the client, or synchronously in a write
     * connection's transaction (`chargeStatements`). Answers the debited row, or the refusal (after the debit: the
     * caller rolls back).
     */
    function* sqliteCharging(
      charge: Charge,
      amount: number,
      now: number
    ): SqlProgram.SqlProgram<Either.Either<typeof DebitedRow.Type, Refusal | SqlRows.RowError>> {
      const month = monthOf(now)
      const { accountId, keyId } = charge
      const debited = Either.flatMap(
        rows.debited.first(
          yield SqlProgram.query(sqliteText.debit, [
            amount,
            now,
            accountId,
            keyId,
            keyId,
            amount,
            keyId,
            keyId,
            amount,
            keyId,
            accountId,
            month
          ])
        ),
        coveredRow(amount)
      )
      if (Either.isLeft(debited)) return debited
      const row = debited.right
      const refused = limitExceeded(amount, row, row)
      if (Option.isSome(refused)) return Either.left(refused.value)
      yield SqlProgram.query(sqliteText.ledger, [
        accountId,
        -amount,
        keyId,
        charge.taskId,
        charge.description,
        month,
        now
      ])
      yield row.keyAncestors === null
        ? SqlProgram.query(sqliteText.keySpendNew, [keyId, accountId, amount])
        : SqlProgram.query(sqliteText.keySpend(row.keyAncestors.length + 1), [amount, keyId, ...row.keyAncestors])
      yield SqlProgram.query(sqliteText.monthSpend, [accountId, month, amount])
      return Either.right(row)
    }

    return { sqliteCharge, sqliteCharging }
  })
