/**
 * Billing on SQL: SQLite and PostgreSQL (any `SqlClient` of those dialects). One build gives the engine's
 * `Billing` (charge, refund), `BillingAccounts`, the contract's `BillingService` (balance reads) and
 * `BillingLedger`, with the semantics of `MemoryBilling` and the same conformance suite.
 *
 * - Tables, named with the store's prefix (`options.prefix`, default `mediagate_`; see {@link tables}), migrations
 *   in their own table ({@link migrationsTable}): `<prefix>billing_accounts` (mode, balance, monthly limit, auto
 *   top-up settings), `<prefix>billing_key_spend` (a key's limit and net spend), `<prefix>billing_month_spend` (net
 *   charges per account and calendar month, UTC), `<prefix>billing_ledger` (append-only: triggers refuse UPDATE
 *   and DELETE; signed micro-dollars) and `<prefix>billing_top_up_requests` (the log of auto top-up requests). The
 *   ledger's triggers (and on PostgreSQL their function) carry the prefix too. An invalid prefix fails the build
 *   with a `PersistenceError`.
 * - Every operation runs in `sql.withTransaction`, which joins the caller's open transaction (as a savepoint): the
 *   engine's charge commits or rolls back with the task it stores. `chargeInTransaction` runs in the caller's
 *   transaction without a savepoint, for a caller that rolls it back when the charge fails (the storage's accept).
 *   `chargeBatch` (PostgreSQL) is one statement, atomic on its own, which needs no transaction.
 * - Atomic charge: the account row is locked first (PostgreSQL: the row lock, by the charge function; SQLite: the
 *   write lock, by the debit, which also answers the balance); then the balance (prepaid), the key's spend limit
 *   and the monthly limit are checked and the ledger entry, the key's spend and the month's spend written
 *   (PostgreSQL: one call of the charge function `<prefix>billing_charge` for a whole batch of charges, which
 *   writes nothing for a refusal; SQLite: four statements, a refusal rolled back with the transaction). Key tree: a
 *   key's spend row lists its ancestors; a charge checks and counts the key's limit and every ancestor's in those
 *   same statements, and a refund gives back to all of them. Every writer of an account's money locks its account
 *   row first, so concurrent charges serialize per account.
 * - A charge for an account billing was never opened for fails with `INSUFFICIENT_BALANCE` (nothing is charged
 *   into nothing).
 * - Time: created_at and the calendar month come from Effect's `Clock` (not the database clock).
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Services } from "@mediagate/contract"
import type { Billing } from "@mediagate/engine/Billing"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { BillingAccounts } from "./BillingAccounts.js"
import * as Accounts from "./internal/sql/accounts.js"
import * as Charge from "./internal/sql/charge.js"
import * as Context from "./internal/sql/context.js"
import * as Ledger from "./internal/sql/ledger.js"
import type { SqlOptions } from "./internal/sql/rows.js"
import {
  balanceService,
  type BillingLedger,
  type BillingServices,
  defaultCreditLimitConfig,
  layerOf
} from "./Ledger.js"
import type { PaymentProvider } from "./PaymentProvider.js"

export {
  /**
   * PostgreSQL's charge function: `<prefix>billing_charge` (see {@link createChargeFunction}).
   *
   * @since 0.1.0
   * @category utils
   */
  chargeFunction
} from "./internal/sql/chargeFunction.js"
export {
  /**
   * SQLite: the debited account row with the first limit of the key's chain the charge would pass, the key's ancestors
   * (null: the key has no spend row) and the month's spend (see `charging`).
   *
   * @since 0.1.0
   * @category schemas
   */
  DebitedRow,
  /**
   * The fast path of {@link DebitedRow} (`SqlRows.withFastPath`; the debit's row is decoded on every charge of a
   * `POST`): a row whose numbers are plain finite numbers, whose flag is 0 or 1 and whose ancestors are null or a JSON
   * array of strings, decoded as the Schema decodes it; any other row is left to the Schema.
   *
   * @since 0.1.0
   * @category utils
   */
  debitedRowFast,
  /**
   * Options of SQL billing: the tables' prefix, the default credit limit of postpaid accounts.
   *
   * @since 0.1.0
   * @category models
   */
  type SqlOptions
} from "./internal/sql/rows.js"
export {
  /**
   * Runs billing's migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
   * `PersistenceError`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrate,
  /**
   * Billing's migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails the
   * loader with a `MigrationError`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrations
} from "./internal/sql/schema.js"
export {
  /**
   * The table billing's migrations are recorded in: `<prefix>billing_migrations`.
   *
   * @since 0.1.0
   * @category migrations
   */
  migrationsTable,
  /**
   * The tables of billing under `prefix`.
   *
   * @since 0.1.0
   * @category migrations
   */
  tables
} from "./internal/sql/tables.js"

/**
 * Builds SQL billing on the `SqlClient` in context (SQLite or PostgreSQL), after running billing's migrations, with
 * its tables under `options.prefix` (default `mediagate_`). The `PaymentProvider` in context serves auto top-up.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  BillingServices,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | PaymentProvider
> =>
  Effect.gen(function*() {
    const context = yield* Context.make(options)
    const [billing, accounts, ledger] = yield* Effect.all([
      Charge.make(context),
      Accounts.make(context),
      Ledger.make(context)
    ])
    return { billing, accounts, balances: balanceService(accounts.state, ledger.page), ledger }
  })

/**
 * SQL billing: `Billing`, `BillingAccounts`, the contract's `BillingService` and `BillingLedger` on the
 * `SqlClient` in context, after migrating, with its tables under `options.prefix` (default `mediagate_`); auto
 * top-up through the `PaymentProvider` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SqlOptions = {}): Layer.Layer<
  Billing | BillingAccounts | Services.BillingService | BillingLedger,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | PaymentProvider
> => layerOf(make(options))

/**
 * {@link layer} with the default credit limit of postpaid accounts from Effect `Config`
 * (`MEDIAGATE_DEFAULT_CREDIT_LIMIT`, USD, default 100), unless `options` gives one.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (options: SqlOptions = {}): Layer.Layer<
  Billing | BillingAccounts | Services.BillingService | BillingLedger,
  SqlError | Migrator.MigrationError | PersistenceError | ConfigError.ConfigError,
  SqlClient.SqlClient | PaymentProvider
> =>
  Layer.unwrapEffect(
    Effect.map(defaultCreditLimitConfig, (defaultCreditLimitMicros) => layer({ defaultCreditLimitMicros, ...options }))
  )
