/**
 * Accounts and their balance (`GET /api/v1/balance`, the admin API of decisions.md §5).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { optional, text } from "./Fields.js"
import { PositiveUsd, Usd } from "./Money.js"
import { Timestamp } from "./Timestamp.js"

/**
 * `prepaid` (top-up balance) or `postpaid` (card on file, invoiced monthly).
 *
 * @since 0.1.0
 * @category schemas
 */
export const BillingMode = Schema.Literal("prepaid", "postpaid").annotations({
  identifier: "BillingMode",
  message: () => ({ message: "must be one of \"prepaid\", \"postpaid\"", override: true })
})
/**
 * Billing mode of an account.
 *
 * @since 0.1.0
 * @category schemas
 */
export type BillingMode = typeof BillingMode.Type

/**
 * `data` of `GET /api/v1/balance`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Balance = Schema.Struct({
  balance: Schema.Number.annotations({ description: "Available balance in USD" }),
  billingMode: BillingMode,
  monthlySpendLimit: Schema.NullOr(Schema.Number),
  autoTopUpEnabled: Schema.Boolean,
  autoTopUpThreshold: Schema.NullOr(Schema.Number),
  autoTopUpAmount: Schema.NullOr(Schema.Number),
  currency: Schema.Literal("USD").annotations({ description: "Extension: always USD" }),
  monthToDateSpend: Schema.Number.annotations({
    description: "Extension: net charges of the current calendar month (UTC), in USD"
  })
}).annotations({ identifier: "Balance" })
/**
 * An account balance read.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Balance = typeof Balance.Type

/**
 * An account as the admin API shows it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Account = Schema.Struct({
  id: Schema.String.annotations({ description: "`acct_` + ULID" }),
  name: Schema.String,
  ...Balance.fields,
  creditLimit: Schema.Number.annotations({
    description: "Postpaid: how far the balance may go below zero, in USD (the account's own or the configured default)"
  }),
  createdAt: Timestamp
}).annotations({ identifier: "Account" })
/**
 * An account as the admin API shows it.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Account = typeof Account.Type

const billingSettings = {
  billingMode: optional(BillingMode),
  monthlySpendLimit: optional(Schema.NullOr(Usd)),
  autoTopUpEnabled: optional(Schema.Boolean),
  autoTopUpThreshold: optional(Schema.NullOr(Usd)),
  autoTopUpAmount: optional(Schema.NullOr(PositiveUsd)),
  creditLimit: optional(
    Schema.NullOr(Usd).annotations({
      description: "Postpaid: how far the balance may go below zero, in USD; null: the configured default"
    })
  )
}

/**
 * Body of `POST /admin/v1/accounts`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AccountCreate = Schema.Struct({
  name: text(200, 1),
  balance: optional(Usd.annotations({ description: "Opening credit in USD (a ledger entry)" })),
  ...billingSettings
}).annotations({ identifier: "AccountCreate", parseOptions: { onExcessProperty: "error" } })
/**
 * Body of `POST /admin/v1/accounts`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AccountCreate = typeof AccountCreate.Type

/**
 * Body of `PATCH /admin/v1/accounts/{id}`: billing settings, each optional.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AccountUpdate = Schema.Struct({
  name: optional(text(200, 1)),
  ...billingSettings
}).annotations({ identifier: "AccountUpdate", parseOptions: { onExcessProperty: "error" } })
/**
 * Body of `PATCH /admin/v1/accounts/{id}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AccountUpdate = typeof AccountUpdate.Type

/**
 * Body of `POST /admin/v1/accounts/{id}/credits`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreditRequest = Schema.Struct({
  amount: PositiveUsd,
  note: optional(text(500))
}).annotations({ identifier: "CreditRequest", parseOptions: { onExcessProperty: "error" } })
/**
 * Body of `POST /admin/v1/accounts/{id}/credits`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreditRequest = typeof CreditRequest.Type
