/**
 * `BillingAccounts` on SQL: accounts opened, read, updated and credited under their row's lock, and the keys' spend
 * rows registered and read.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { BillingAccounts } from "../../BillingAccounts.js"
import { creditOutOfRange, inRange, notFound, requireAmount } from "../../Ledger.js"
import type { BillingContext } from "./context.js"
import { type AccountRow, persistence } from "./rows.js"

/** Builds `BillingAccounts` on billing's context. */
export const make = (context: BillingContext) =>
  Effect.gen(function*() {
    const { creditLocked, lockAccount, rows, sql, stateOf, t } = context

    /** Runs `f` on the locked account row, in a transaction. */
    const withAccount = <A, E>(
      operation: string,
      accountId: string,
      f: (row: AccountRow, now: number) => Effect.Effect<A, E | SqlError | SqlRows.RowError>
    ) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql.withTransaction(Effect.gen(function*() {
          const row = yield* lockAccount(accountId)
          if (row === undefined) return yield* notFound(accountId)
          return yield* f(row, now)
        }))).pipe(persistence(operation))

    const stateAfter = (accountId: string, now: number) =>
      Effect.flatMap(
        lockAccount(accountId),
        (row) =>
          row === undefined ? Effect.die(new Error("billing: account row vanished")) : stateOf(accountId, row, now)
      )

    const accounts: BillingAccounts["Type"] = {
      open: (accountId, settings, openingMicros) =>
        Effect.gen(function*() {
          yield* requireAmount("an opening credit", openingMicros)
          const now = yield* Clock.currentTimeMillis
          return yield* sql.withTransaction(Effect.gen(function*() {
            const row = yield* rows.account.encode({ ...settings, balanceMicros: 0 })
            yield* sql`INSERT INTO ${t.accounts} ${
              sql.insert({ account_id: accountId, ...row, created_at: now, updated_at: now })
            }`
            if (openingMicros > 0) yield* creditLocked(accountId, openingMicros, "opening credit", now)
            return yield* stateAfter(accountId, now)
          }))
        }).pipe(persistence("open")),

      state: (accountId) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const row = yield* sql`SELECT * FROM ${t.accounts} WHERE account_id = ${accountId}`.pipe(
            Effect.flatMap(rows.account.first)
          )
          if (Option.isNone(row)) return yield* notFound(accountId)
          return yield* stateOf(accountId, row.value, now)
        }).pipe(persistence("state")),

      update: (accountId, settings) =>
        withAccount("update", accountId, (row, now) =>
          Effect.gen(function*() {
            if (Object.values(settings).some((value) => value !== undefined)) {
              // the locked row with the given settings over it (the balance stays as it is)
              const set = yield* rows.account.encode({ ...row, ...settings })
              yield* sql`UPDATE ${t.accounts} SET ${sql.update({ ...set, updated_at: now }, ["balance_micros"])}
              WHERE account_id = ${accountId}`
            }
            return yield* stateAfter(accountId, now)
          })),

      credit: (accountId, amountMicros, note) =>
        Effect.zipRight(
          requireAmount("a credit", amountMicros),
          withAccount("credit", accountId, (row, now) =>
            // under the account's lock: no credit or charge of the account runs between the check and the write
            !inRange(row.balanceMicros + amountMicros)
              ? Effect.fail(creditOutOfRange(amountMicros, row.balanceMicros))
              : Effect.zipRight(
                amountMicros > 0 ? creditLocked(accountId, amountMicros, note ?? "credit", now) : Effect.void,
                stateAfter(accountId, now)
              ))
        ),

      registerKey: (accountId, keyId, spendLimitMicros, ancestors = []) =>
        sql`INSERT INTO ${t.keySpend} ${
          sql.insert({
            key_id: keyId,
            account_id: accountId,
            spend_limit_micros: spendLimitMicros,
            spent_micros: 0,
            ancestors: JSON.stringify(ancestors)
          })
        } ON CONFLICT (key_id) DO UPDATE SET spend_limit_micros = excluded.spend_limit_micros,
        ancestors = excluded.ancestors`.pipe(
          Effect.asVoid,
          persistence("registerKey")
        ),

      keySpend: (keyId) =>
        sql`SELECT spend_limit_micros, spent_micros FROM ${t.keySpend} WHERE key_id = ${keyId}`.pipe(
          Effect.flatMap(rows.keySpend.first),
          Effect.map((row) => ({ keyId, spendLimitMicros: null, spentMicros: 0, ...Option.getOrUndefined(row) })),
          persistence("keySpend")
        )
    }

    return accounts
  })
