/**
 * `@mediagate/billing`: the append-only ledger, atomic charges against balance and limits, refunds, balances and
 * auto top-up, in memory or on SQL.
 *
 * @since 0.1.0
 */

/** The billing side of accounts and keys: what the accounts package (admin API, key management) asks of billing. */
export * as BillingAccounts from "./BillingAccounts.js"
/**
 * The read side of the ledger and what every billing implementation (memory, SQL) shares.
 *
 * @since 0.1.0
 */
export * as Ledger from "./Ledger.js"
/**
 * Billing in memory, with the semantics of `SqlBilling` and the same conformance suite.
 *
 * @since 0.1.0
 */
export * as MemoryBilling from "./MemoryBilling.js"
/**
 * The payment provider port of auto top-up.
 *
 * @since 0.1.0
 */
export * as PaymentProvider from "./PaymentProvider.js"
/**
 * Billing on SQL (SQLite and PostgreSQL), with the semantics of `MemoryBilling` and the same conformance suite.
 *
 * @since 0.1.0
 */
export * as SqlBilling from "./SqlBilling.js"
