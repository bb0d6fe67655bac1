/**
 * The names of SQL billing's tables and of its migrations' table, under the store's table prefix.
 */
import * as SqlStore from "@mediagate/persistence/SqlStore"

/** The name of the store in its errors and migrations. */
export const storeName = "billing"

/** The tables of billing under `prefix`. */
export const tables = (prefix: string = SqlStore.defaultPrefix) =>
  ({
    accounts: `${prefix}billing_accounts`,
    keySpend: `${prefix}billing_key_spend`,
    monthSpend: `${prefix}billing_month_spend`,
    ledger: `${prefix}billing_ledger`,
    topUps: `${prefix}billing_top_up_requests`
  }) as const

/** The table billing's migrations are recorded in: `<prefix>billing_migrations`. */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}billing_migrations`
