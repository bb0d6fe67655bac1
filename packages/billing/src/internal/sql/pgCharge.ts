/**
 * PostgreSQL's charges: calls of billing's charge function (`<prefix>billing_charge`), a batch of charges in one
 * statement (`chargeBatch`) or one charge in the caller's transaction with its auto top-up, and the refusals read
 * from the function's rows.
 */
import type * as Statement from "@effect/sql/Statement"
import type { Charge } from "@mediagate/engine/Billing"
import type * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { creditLimitExceeded, insufficientBalance, monthOf, requireAmount } from "../../Ledger.js"
import { chargeFunction } from "./chargeFunction.js"
import type { BillingContext } from "./context.js"
import type { Refusal } from "./rows.js"

/** Builds PostgreSQL's charges on billing's context. */
export const make = (context: BillingContext) =>
  Effect.gen(function*() {
    const { autoTopUp, defaultCreditLimit, limitExceeded, prefix, rows, sql } = context

    const fn = sql(chargeFunction(prefix))

    /**
     * PostgreSQL: the call of billing's charge function ({@link createChargeFunction}) on `charges` at `now`, its rows
     * in the charges' order with their 1-based position (`ordinality`).
     */
    const chargeCall = (charges: ReadonlyArray<Charge>, now: number, deferTopUps: boolean) =>
      sql`SELECT * FROM ${fn}(${
        JSON.stringify(charges.map(({ accountId, amountMicros, description, keyId, taskId }) => ({
          account_id: accountId,
          key_id: keyId,
          task_id: taskId,
          amount: amountMicros,
          description
        })))
      }::jsonb, ${now}, ${monthOf(now)}, ${deferTopUps}, ${defaultCreditLimit}) WITH ORDINALITY AS c`

    /** Whether a row of the charge function has the flag `name` set. */
    const flagged = (answer: unknown, name: "made" | "deferred" | "present", value = true) =>
      Predicate.hasProperty(answer, name) && answer[name] === value

    /** A refused charge's refusal, read from its row of the charge function by the same rules as SQLite's. */
    const refusalOf = (amount: number, answer: unknown): Effect.Effect<Refusal, SqlRows.RowError> =>
      flagged(answer, "present", false)
        ? Effect.succeed(insufficientBalance(amount, undefined))
        : Effect.flatMap(rows.pgCharged.single([answer]), (read): Effect.Effect<Refusal> => {
          if (!read.funded) {
            return Effect.succeed(
              read.billingMode === "postpaid"
                ? creditLimitExceeded(amount, read.balanceMicros, read.creditLimitMicros ?? defaultCreditLimit)
                : insufficientBalance(amount, read.balanceMicros)
            )
          }
          // the function refused on what it read: a limit
          return Option.match(limitExceeded(amount, read, read), {
            onNone: () => Effect.dieMessage("billing: a charge refused by no limit"),
            onSome: Effect.succeed
          })
        })

    /**
     * PostgreSQL's `chargeBatch`: the charge function's call and `alongside` in one statement, deferring the charges
     * an auto top-up may follow. Once the statement has answered, it has committed (when no transaction is open), so
     * nothing after it may fail: a refusal whose row cannot be read (or that no rule explains) is answered
     * `"deferred"` (made on its own, in a transaction, where the failure is reported and rolled back).
     */
    const pgChargeBatch = (
      charges: ReadonlyArray<Charge>,
      alongside?: (made: Statement.Fragment) => Statement.Fragment
    ) =>
      Effect.gen(function*() {
        for (const charge of charges) yield* requireAmount("a charge", charge.amountMicros)
        if (charges.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        const call = chargeCall(charges, now, true)
        const answered = yield* (alongside === undefined
          ? sql`${call} ORDER BY ordinality`
          : sql`WITH charged AS MATERIALIZED (${call}), alongside AS (${
            alongside(sql`SELECT ordinality - 1 FROM charged WHERE made`)
          }) SELECT * FROM charged ORDER BY ordinality`)
        // rows for every charge up to the first deferred one, which ends them
        const ends = answered.length === charges.length || flagged(answered[answered.length - 1], "deferred")
        if (answered.length === 0 || answered.length > charges.length || !ends) {
          return yield* Effect.dieMessage(
            `billing: the charge function answered ${answered.length} of ${charges.length} charges`
          )
        }
        const outcomes: Array<Either.Either<"charged" | "deferred", Refusal>> = []
        for (let i = 0; i < charges.length; i++) {
          const answer = answered[i]
          if (answer === undefined || flagged(answer, "deferred")) outcomes.push(Either.right("deferred"))
          else if (flagged(answer, "made")) outcomes.push(Either.right("charged"))
          else {
            // a row that cannot be read, or a refusal by no rule (a defect), is made alone, where it is reported
            const refusal = yield* Effect.exit(refusalOf(charges[i]!.amountMicros, answer))
            outcomes.push(Exit.isSuccess(refusal) ? Either.left(refusal.value) : Either.right("deferred"))
          }
        }
        return outcomes
      })

    /**
     * PostgreSQL: a charge in the caller's transaction: the charge function's call on it alone, then its auto top-up
     * (when due, asked of the payment provider in the transaction). A refusal fails.
     */
    const pgCharge = (charge: Charge, now: number) =>
      Effect.gen(function*() {
        const amount = charge.amountMicros
        const [answer] = yield* chargeCall([charge], now, false)
        if (!flagged(answer, "made")) return yield* Effect.flatMap(refusalOf(amount, answer), Effect.fail)
        const read = yield* rows.pgCharged.single([answer])
        yield* autoTopUp(charge.accountId, read, read.balanceMicros - amount, now)
      })

    return { pgCharge, pgChargeBatch }
  })
