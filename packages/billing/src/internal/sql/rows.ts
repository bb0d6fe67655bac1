/**
 * SQL billing's rows: their Schemas and decoders (named after their tables), the row the SQLite debit answers with
 * its fast path, the storage's failures as `PersistenceError`, and its options.
 */
import type { Errors } from "@mediagate/contract"
import { Account } from "@mediagate/contract"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Schema from "effect/Schema"
import { type BillingOptions, LedgerEntry, NewEntry, TopUpRecord } from "../../Ledger.js"
import { storeName, tables } from "./tables.js"

const { column } = SqlRows
const micros = SqlRows.Number
const limit = Schema.NullOr(SqlRows.Number)

/** A row of `<prefix>billing_accounts`: an account's settings and balance. */
export const AccountRow = Schema.Struct({
  billingMode: column("billing_mode", SqlRows.literal(...Account.BillingMode.literals)),
  balanceMicros: column("balance_micros", micros),
  monthlySpendLimitMicros: column("monthly_spend_limit_micros", limit),
  autoTopUpEnabled: column("auto_top_up_enabled", SqlRows.Flag),
  autoTopUpThresholdMicros: column("auto_top_up_threshold_micros", limit),
  autoTopUpAmountMicros: column("auto_top_up_amount_micros", limit),
  creditLimitMicros: column("credit_limit_micros", limit)
})
export type AccountRow = typeof AccountRow.Type

/** The decoders of billing's rows, named after its tables under `prefix`. */
export const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    account: SqlRows.decoder(names.accounts, AccountRow),
    balance: SqlRows.decoder(names.accounts, Schema.Struct({ balanceMicros: column("balance_micros", micros) })),
    keySpend: SqlRows.decoder(
      names.keySpend,
      Schema.Struct({
        spendLimitMicros: column("spend_limit_micros", limit),
        spentMicros: column("spent_micros", micros)
      })
    ),
    monthSpend: SqlRows.decoder(names.monthSpend, Schema.Struct({ spentMicros: column("spent_micros", micros) })),
    ledger: SqlRows.decoder(names.ledger, LedgerEntry),
    newEntry: SqlRows.decoder(names.ledger, NewEntry),
    openMonths: SqlRows.decoder(names.ledger, Schema.Struct({ month: Schema.String, net: micros })),
    topUp: SqlRows.decoder(names.topUps, TopUpRecord),
    /** SQLite: the debited account row and what the charge's checks read with it ({@link DebitedRow}). */
    debited: SqlRows.withFastPath(SqlRows.decoder(names.accounts, DebitedRow), debitedRowFast),
    /**
     * PostgreSQL: a row of the charge function: the account before the charge, whether it was funded and allowed
     * (and written), what the limits were checked on.
     */
    pgCharged: SqlRows.decoder(
      names.accounts,
      Schema.Struct({
        ...AccountRow.fields,
        funded: Schema.Boolean,
        allowed: Schema.Boolean,
        ...SpendRead.fields
      })
    )
  }
}

/**
 * What a charge's limit checks read: the limit and spend of the key or ancestor whose limit the charge would pass
 * (the one with the least left; none when every limit of the chain allows it), the month's spend.
 */
export const SpendRead = Schema.Struct({
  keyLimitMicros: column("key_limit", limit),
  keySpentMicros: column("key_spent", limit),
  monthSpentMicros: column("month_spent", limit)
})

/** A charge refused by the balance or a spend limit. */
export type Refusal = Errors.InsufficientBalance | Errors.SpendLimitExceeded

/**
 * SQLite: the debited account row with the first limit of the key's chain the charge would pass, the key's
 * ancestors (null: the key has no spend row) and the month's spend (see `charging`).
 *
 * @internal
 */
export const DebitedRow = Schema.Struct({
  ...AccountRow.fields,
  ...SpendRead.fields,
  keyAncestors: column("key_ancestors", Schema.NullOr(Schema.parseJson(Schema.Array(Schema.String))))
})

const finite = (u: unknown): u is number => typeof u === "number" && Number.isFinite(u)
const finiteOrNull = (u: unknown): u is number | null => u === null || finite(u)

/**
 * The fast path of {@link DebitedRow} (`SqlRows.withFastPath`; the debit's row is decoded on every charge of a
 * `POST`): a row whose numbers are plain finite numbers, whose flag is 0 or 1 and whose ancestors are null or a JSON
 * array of strings, decoded as the Schema decodes it; any other row is left to the Schema.
 *
 * @internal
 */
export const debitedRowFast = (row: unknown): typeof DebitedRow.Type | undefined => {
  if (typeof row !== "object" || row === null) return undefined
  const r = row as Readonly<Record<string, unknown>>
  const billingMode = r["billing_mode"]
  const balanceMicros = r["balance_micros"]
  const monthlySpendLimitMicros = r["monthly_spend_limit_micros"]
  const flag = r["auto_top_up_enabled"]
  const autoTopUpThresholdMicros = r["auto_top_up_threshold_micros"]
  const autoTopUpAmountMicros = r["auto_top_up_amount_micros"]
  const creditLimitMicros = r["credit_limit_micros"]
  const keyLimitMicros = r["key_limit"]
  const keySpentMicros = r["key_spent"]
  const monthSpentMicros = r["month_spent"]
  const ancestors = r["key_ancestors"]
  if (
    (billingMode !== "prepaid" && billingMode !== "postpaid") || !finite(balanceMicros) ||
    !finiteOrNull(monthlySpendLimitMicros) || (flag !== 0 && flag !== 1) || !finiteOrNull(autoTopUpThresholdMicros) ||
    !finiteOrNull(autoTopUpAmountMicros) || !finiteOrNull(creditLimitMicros) || !finiteOrNull(keyLimitMicros) ||
    !finiteOrNull(keySpentMicros) ||
    !finiteOrNull(monthSpentMicros) || (ancestors !== null && typeof ancestors !== "string")
  ) return undefined
  let keyAncestors: Array<string> | null = null
  if (ancestors !== null) {
    let parsed: unknown
    try {
      parsed = JSON.parse(ancestors)
    } catch {
      return undefined
    }
    if (!Array.isArray(parsed) || !parsed.every((id) => typeof id === "string")) return undefined
    keyAncestors = parsed
  }
  return {
    billingMode,
    balanceMicros,
    monthlySpendLimitMicros,
    autoTopUpEnabled: flag === 1,
    autoTopUpThresholdMicros,
    autoTopUpAmountMicros,
    creditLimitMicros,
    keyLimitMicros,
    keySpentMicros,
    monthSpentMicros,
    keyAncestors
  }
}

/** Storage failures become `PersistenceError`. */
export const persistence = SqlStore.persistence(storeName)

/** Subtracts `amount` from a counter column, never below zero. */
export const minus = (column: string, amount: number) =>
  `CASE WHEN ${column} > ${amount} THEN ${column} - ${amount} ELSE 0 END`

/** Options of SQL billing: the tables' prefix, the default credit limit of postpaid accounts. */
export interface SqlOptions extends SqlStore.PrefixOptions, BillingOptions {}
