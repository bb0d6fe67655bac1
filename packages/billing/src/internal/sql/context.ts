/**
 * What the services of SQL billing share: the client and its dialect, the tables, the row decoders, the payment
 * provider, the default credit limit, and the reads, writes and checks several of them make (the account's lock,
 * its state, the ledger's appends, the auto top-up, the refusals, a key's chain). Built once by {@link make}.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { BillingState } from "../../BillingAccounts.js"
import {
  creditLimitExceeded,
  defaultCreditLimitMicros,
  entry,
  insufficientBalance,
  keyLimitExceeded,
  monthlyLimitExceeded,
  monthOf,
  type NewEntry,
  requestTopUp,
  topUpDue,
  type TopUpStatus
} from "../../Ledger.js"
import { PaymentProvider } from "../../PaymentProvider.js"
import { type AccountRow, decoders, type Refusal, type SpendRead, type SqlOptions } from "./rows.js"
import { migrations } from "./schema.js"
import { migrationsTable, storeName, tables } from "./tables.js"

/** Builds the context (runs the migrations). */
export const make = (options: SqlOptions) =>
  Effect.gen(function*() {
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const provider = yield* PaymentProvider
    const rows = decoders(prefix)
    const defaultCreditLimit = options.defaultCreditLimitMicros ?? defaultCreditLimitMicros

    /** Reads and locks an account row for the rest of the transaction. */
    const lockAccount = (accountId: string): Effect.Effect<AccountRow | undefined, SqlError | SqlRows.RowError> =>
      (pg
        ? sql`SELECT * FROM ${t.accounts} WHERE account_id = ${accountId} FOR UPDATE`
        // SQLite has one writer: a write takes the database's write lock at once (a read would not)
        : sql`UPDATE ${t.accounts} SET balance_micros = balance_micros WHERE account_id = ${accountId} RETURNING *`)
        .pipe(Effect.flatMap(rows.account.first), Effect.map(Option.getOrUndefined))

    const monthSpent = (accountId: string, month: string) =>
      sql`SELECT spent_micros FROM ${t.monthSpend} WHERE account_id = ${accountId} AND month = ${month}`.pipe(
        Effect.flatMap(rows.monthSpend.first),
        Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.spentMicros }))
      )

    const stateOf = (accountId: string, row: AccountRow, now: number) =>
      Effect.map(
        monthSpent(accountId, monthOf(now)),
        (monthToDateMicros): BillingState => ({
          accountId,
          ...row,
          creditLimitMicros: row.creditLimitMicros ?? defaultCreditLimit,
          monthToDateMicros
        })
      )

    const ledgerInsert = (row: typeof NewEntry.Encoded) => sql`INSERT INTO ${t.ledger} ${sql.insert(row)}`
    const appendEntry = (entry: NewEntry) => Effect.flatMap(rows.newEntry.encode(entry), ledgerInsert)

    const addBalance = (accountId: string, amountMicros: number, now: number) =>
      sql`UPDATE ${t.accounts} SET balance_micros = balance_micros + ${amountMicros}, updated_at = ${now}
      WHERE account_id = ${accountId} RETURNING balance_micros`.pipe(
        Effect.flatMap(rows.balance.first),
        Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.balanceMicros }))
      )

    /** A `top_up` entry and the balance it adds (the account row is locked). */
    const creditLocked = (accountId: string, amountMicros: number, description: string, now: number) =>
      Effect.zipRight(
        appendEntry(entry("top_up", { accountId }, amountMicros, description, now)),
        addBalance(accountId, amountMicros, now)
      )

    /**
     * Auto top-up after a charge, in the charge's transaction (a savepoint of its own): whatever fails here is
     * logged and rolled back to the savepoint, never failing the charge.
     */
    const autoTopUp = (accountId: string, row: AccountRow, balanceMicros: number, now: number) => {
      const amountMicros = topUpDue(row, balanceMicros)
      if (amountMicros === undefined) return Effect.void
      const record = (status: TopUpStatus) =>
        Effect.zipRight(
          sql`INSERT INTO ${t.topUps} ${
            sql.insert({
              account_id: accountId,
              amount_micros: amountMicros,
              provider: provider.name,
              status,
              created_at: now
            })
          }`,
          status === "credited"
            ? creditLocked(accountId, amountMicros, `auto top-up (${provider.name})`, now)
            : Effect.void
        )
      return sql.withTransaction(requestTopUp(provider, { accountId, amountMicros }, record)).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("billing: recording an auto top-up failed", cause))
      )
    }

    /**
     * The account row a charge of `amount` debited, unless there is none, a prepaid balance did not cover it or a
     * postpaid balance went below its credit limit.
     */
    const coveredRow =
      (amount: number) => <A extends AccountRow>(found: Option.Option<A>): Either.Either<A, Refusal> => {
        if (Option.isNone(found)) return Either.left(insufficientBalance(amount, undefined))
        const row = found.value
        if (row.billingMode === "prepaid" && row.balanceMicros < 0) {
          return Either.left(insufficientBalance(amount, row.balanceMicros + amount))
        }
        const creditLimit = row.creditLimitMicros ?? defaultCreditLimit
        if (row.billingMode === "postpaid" && row.balanceMicros < -creditLimit) {
          return Either.left(creditLimitExceeded(amount, row.balanceMicros + amount, creditLimit))
        }
        return Either.right(row)
      }

    /** The refusal of a charge by the limit it exceeds: the key's first, then the account's monthly one. */
    const limitExceeded = (amount: number, row: AccountRow, read: typeof SpendRead.Type) =>
      read.keyLimitMicros !== null && (read.keySpentMicros ?? 0) + amount > read.keyLimitMicros
        ? Option.some(keyLimitExceeded(amount, read.keyLimitMicros, read.keySpentMicros ?? 0))
        : row.monthlySpendLimitMicros !== null && (read.monthSpentMicros ?? 0) + amount > row.monthlySpendLimitMicros
        ? Option.some(monthlyLimitExceeded(amount, row.monthlySpendLimitMicros, read.monthSpentMicros ?? 0))
        : Option.none()

    /** SQLite's text of {@link chain} (the key twice as its parameters). */
    const sqliteChain = `SELECT ? UNION ALL SELECT value FROM json_each((SELECT ancestors FROM "${
      tables(prefix).keySpend
    }" WHERE key_id = ?))`

    /**
     * The key ids of a key's chain: the key and its ancestors (read from the key's spend row, through its primary
     * key; a key without a row is its own chain), as a subquery for `key_id IN (...)`.
     */
    const chain = (keyId: string) =>
      pg
        ? sql`SELECT CAST(${keyId} AS TEXT) UNION ALL
          SELECT json_array_elements_text(ancestors::json) FROM ${t.keySpend} WHERE key_id = ${keyId}`
        : sql.unsafe(sqliteChain, [keyId, keyId])

    return {
      addBalance,
      appendEntry,
      autoTopUp,
      chain,
      coveredRow,
      creditLocked,
      defaultCreditLimit,
      limitExceeded,
      lockAccount,
      pg,
      prefix,
      rows,
      sql,
      sqliteChain,
      stateOf,
      t
    }
  })

/** The context of SQL billing. */
export type BillingContext = Effect.Effect.Success<ReturnType<typeof make>>
