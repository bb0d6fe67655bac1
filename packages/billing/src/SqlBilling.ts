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
 *   engine's charge commits or rolls back with the task it stores.
 * - Atomic charge: the account row is locked first (PostgreSQL `SELECT ... FOR UPDATE`; SQLite takes the write
 *   lock with a no-op `UPDATE ... RETURNING`), then the balance (prepaid), the key's spend limit and the monthly
 *   limit are checked, then the ledger entry, the balance, the key's spend and the month's spend are written.
 *   Every writer of an account's money locks its account row first, so concurrent charges serialize per account.
 * - A charge for an account billing was never opened for fails with `INSUFFICIENT_BALANCE` (nothing is charged
 *   into nothing).
 * - Time: created_at and the calendar month come from Effect's `Clock` (not the database clock).
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Account, Errors, type Services } from "@mediagate/contract"
import type { Billing } from "@mediagate/engine/Billing"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { BillingAccounts, BillingState } from "./BillingAccounts.js"
import {
  balanceService,
  BillingLedger,
  type BillingServices,
  insufficientBalance,
  isAmount,
  keyLimitExceeded,
  type LedgerEntry,
  ledgerKinds,
  layerOf,
  monthlyLimitExceeded,
  monthOf,
  refundParts,
  topUpDue,
  topUpStatuses,
  type TopUpStatus
} from "./Ledger.js"
import { PaymentProvider } from "./PaymentProvider.js"

const storeName = "billing"

/** The tables of billing under `prefix`. */
export const tables = (prefix: string = SqlStore.defaultPrefix) => ({
  accounts: `${prefix}billing_accounts`,
  keySpend: `${prefix}billing_key_spend`,
  monthSpend: `${prefix}billing_month_spend`,
  ledger: `${prefix}billing_ledger`,
  topUps: `${prefix}billing_top_up_requests`
}) as const

/** The table billing's migrations are recorded in: `<prefix>billing_migrations`. */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}billing_migrations`

// -----------------------------------------------------------------------------------------------------------------
// migrations
// -----------------------------------------------------------------------------------------------------------------

const createTables = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, pg } = SqlStore.columns(sql)
    const t = tables(prefix)
    const serial = pg ? "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
    const kinds = ledgerKinds.map((k) => `'${k}'`).join(", ")
    const statuses = topUpStatuses.map((s) => `'${s}'`).join(", ")
    yield* sql.unsafe(`CREATE TABLE ${t.accounts} (
  account_id TEXT PRIMARY KEY NOT NULL,
  billing_mode TEXT NOT NULL CHECK (billing_mode IN ('prepaid', 'postpaid')),
  balance_micros ${big} NOT NULL,
  monthly_spend_limit_micros ${big},
  auto_top_up_enabled INTEGER NOT NULL CHECK (auto_top_up_enabled IN (0, 1)),
  auto_top_up_threshold_micros ${big},
  auto_top_up_amount_micros ${big},
  created_at ${big} NOT NULL,
  updated_at ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.keySpend} (
  key_id TEXT PRIMARY KEY NOT NULL,
  account_id TEXT NOT NULL,
  spend_limit_micros ${big},
  spent_micros ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.monthSpend} (
  account_id TEXT NOT NULL,
  month TEXT NOT NULL,
  spent_micros ${big} NOT NULL,
  PRIMARY KEY (account_id, month)
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.ledger} (
  id ${serial},
  account_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN (${kinds})),
  amount_micros ${big} NOT NULL,
  key_id TEXT,
  task_id TEXT,
  description TEXT NOT NULL,
  month TEXT NOT NULL,
  created_at ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE INDEX ${t.ledger}_account_idx ON ${t.ledger} (account_id, id)`)
    yield* sql.unsafe(`CREATE INDEX ${t.ledger}_task_idx ON ${t.ledger} (task_id) WHERE task_id IS NOT NULL`)
    yield* sql.unsafe(`CREATE TABLE ${t.topUps} (
  id ${serial},
  account_id TEXT NOT NULL,
  amount_micros ${big} NOT NULL,
  provider TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN (${statuses})),
  created_at ${big} NOT NULL
)`)
    // (`<prefix>billing_top_up_account_idx`: short enough for PostgreSQL's 63-byte names under a 30-character prefix)
    yield* sql.unsafe(`CREATE INDEX ${prefix}billing_top_up_account_idx ON ${t.topUps} (account_id, id)`)
    // the ledger is append-only
    if (pg) {
      yield* sql.unsafe(`CREATE FUNCTION ${t.ledger}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '${t.ledger} is append-only';
END
$$`)
      yield* sql.unsafe(`CREATE TRIGGER ${t.ledger}_append_only BEFORE UPDATE OR DELETE ON ${t.ledger}
  FOR EACH ROW EXECUTE FUNCTION ${t.ledger}_append_only()`)
    } else {
      for (const event of ["UPDATE", "DELETE"]) {
        yield* sql.unsafe(`CREATE TRIGGER ${t.ledger}_no_${event.toLowerCase()} BEFORE ${event} ON ${t.ledger}
BEGIN
  SELECT RAISE(ABORT, '${t.ledger} is append-only');
END`)
      }
    }
  })

/**
 * Billing's migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails the
 * loader with a `MigrationError`.
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_billing": createTables(prefix)
  }))

/**
 * Runs billing's migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)

// -----------------------------------------------------------------------------------------------------------------
// rows
// -----------------------------------------------------------------------------------------------------------------

const { column } = SqlRows
const micros = SqlRows.Number
const limit = Schema.NullOr(SqlRows.Number)

/** A row of `<prefix>billing_accounts`: an account's settings and balance. */
const AccountRow = Schema.Struct({
  billingMode: column("billing_mode", SqlRows.literal(...Account.BillingMode.literals)),
  balanceMicros: column("balance_micros", micros),
  monthlySpendLimitMicros: column("monthly_spend_limit_micros", limit),
  autoTopUpEnabled: column("auto_top_up_enabled", SqlRows.Flag),
  autoTopUpThresholdMicros: column("auto_top_up_threshold_micros", limit),
  autoTopUpAmountMicros: column("auto_top_up_amount_micros", limit)
})
type AccountRow = typeof AccountRow.Type

/** A row of `<prefix>billing_ledger`: a {@link LedgerEntry}. */
const LedgerRow = Schema.Struct({
  id: SqlRows.Number,
  accountId: column("account_id", Schema.String),
  kind: SqlRows.literal(...ledgerKinds),
  amountMicros: column("amount_micros", micros),
  keyId: column("key_id", Schema.NullOr(Schema.String)),
  taskId: column("task_id", Schema.NullOr(Schema.String)),
  description: Schema.String,
  month: Schema.String,
  createdAt: column("created_at", SqlRows.Number)
})

/** A row of `<prefix>billing_top_up_requests`: a recorded auto top-up request. */
const TopUpRow = Schema.Struct({
  id: SqlRows.Number,
  accountId: column("account_id", Schema.String),
  amountMicros: column("amount_micros", micros),
  provider: Schema.String,
  status: SqlRows.literal(...topUpStatuses),
  createdAt: column("created_at", SqlRows.Number)
})

/** The decoders of billing's rows, named after its tables under `prefix`. */
const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    account: SqlRows.decoder(names.accounts, AccountRow),
    balance: SqlRows.decoder(names.accounts, Schema.Struct({ balanceMicros: column("balance_micros", micros) })),
    keySpend: SqlRows.decoder(names.keySpend, Schema.Struct({
      spendLimitMicros: column("spend_limit_micros", limit),
      spentMicros: column("spent_micros", micros)
    })),
    monthSpend: SqlRows.decoder(names.monthSpend, Schema.Struct({ spentMicros: column("spent_micros", micros) })),
    ledger: SqlRows.decoder(names.ledger, LedgerRow),
    openMonths: SqlRows.decoder(names.ledger, Schema.Struct({ month: Schema.String, net: micros })),
    topUp: SqlRows.decoder(names.topUps, TopUpRow)
  }
}

/** Storage failures become {@link PersistenceError}. */
const persistence = SqlStore.persistence(storeName)

const requireAmount = (what: string, micros: number) =>
  isAmount(micros)
    ? Effect.void
    : Effect.dieMessage(`billing: ${what} must be a non-negative integer of micro-dollars, got ${micros}`)

/** Subtracts `amount` from a counter column, never below zero. */
const minus = (column: string, amount: number) =>
  `CASE WHEN ${column} > ${amount} THEN ${column} - ${amount} ELSE 0 END`

// -----------------------------------------------------------------------------------------------------------------
// billing
// -----------------------------------------------------------------------------------------------------------------

/** Options of SQL billing. */
export interface SqlOptions extends SqlStore.PrefixOptions {}

/**
 * Builds SQL billing on the `SqlClient` in context (SQLite or PostgreSQL), after running billing's migrations, with
 * its tables under `options.prefix` (default `mediagate_`). The `PaymentProvider` in context serves auto top-up.
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  BillingServices,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | PaymentProvider
> => Effect.gen(function*() {
  const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
  const provider = yield* PaymentProvider
  const rows = decoders(prefix)

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
    Effect.map(monthSpent(accountId, monthOf(now)), (monthToDateMicros): BillingState => ({
      accountId,
      billingMode: row.billingMode,
      monthlySpendLimitMicros: row.monthlySpendLimitMicros,
      autoTopUpEnabled: row.autoTopUpEnabled,
      autoTopUpThresholdMicros: row.autoTopUpThresholdMicros,
      autoTopUpAmountMicros: row.autoTopUpAmountMicros,
      balanceMicros: row.balanceMicros,
      monthToDateMicros
    }))

  const appendEntry = (entry: Omit<LedgerEntry, "id">) =>
    sql`INSERT INTO ${t.ledger} ${
      sql.insert({
        account_id: entry.accountId,
        kind: entry.kind,
        amount_micros: entry.amountMicros,
        key_id: entry.keyId,
        task_id: entry.taskId,
        description: entry.description,
        month: entry.month,
        created_at: entry.createdAt
      })
    }`

  const addBalance = (accountId: string, amountMicros: number, now: number) =>
    sql`UPDATE ${t.accounts} SET balance_micros = balance_micros + ${amountMicros}, updated_at = ${now}
      WHERE account_id = ${accountId} RETURNING balance_micros`.pipe(
      Effect.flatMap(rows.balance.first),
      Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.balanceMicros }))
    )

  /** A `top_up` entry and the balance it adds (the account row is locked). */
  const creditLocked = (accountId: string, amountMicros: number, description: string, now: number) =>
    Effect.zipRight(
      appendEntry({
        accountId,
        kind: "top_up",
        amountMicros,
        keyId: null,
        taskId: null,
        description,
        month: monthOf(now),
        createdAt: now
      }),
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
          sql.insert({ account_id: accountId, amount_micros: amountMicros, provider: provider.name, status, created_at: now })
        }`,
        status === "credited"
          ? creditLocked(accountId, amountMicros, `auto top-up (${provider.name})`, now)
          : Effect.void
      )
    return sql.withTransaction(
      provider.requestTopUp({ accountId, amountMicros }).pipe(
        Effect.matchCauseEffect({
          onSuccess: (outcome) => record(outcome._tag === "Credited" ? "credited" : "requested"),
          onFailure: (cause) =>
            Effect.zipRight(Effect.logWarning("billing: auto top-up request failed", cause), record("failed"))
        })
      )
    ).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("billing: recording an auto top-up failed", cause))
    )
  }

  const billing: Billing["Type"] = {
    charge: (charge) =>
      Effect.gen(function*() {
        yield* requireAmount("a charge", charge.amountMicros)
        if (charge.amountMicros === 0) return
        const amount = charge.amountMicros
        const now = yield* Clock.currentTimeMillis
        const month = monthOf(now)
        yield* sql.withTransaction(Effect.gen(function*() {
          const row = yield* lockAccount(charge.accountId)
          if (row === undefined) return yield* insufficientBalance(amount, undefined)
          if (row.billingMode === "prepaid" && row.balanceMicros < amount) {
            return yield* insufficientBalance(amount, row.balanceMicros)
          }
          const key = yield* sql`SELECT spend_limit_micros, spent_micros FROM ${t.keySpend}
            WHERE key_id = ${charge.keyId}${sql.literal(pg ? " FOR UPDATE" : "")}`.pipe(
            Effect.flatMap(rows.keySpend.first),
            Effect.map(Option.getOrUndefined)
          )
          if (key !== undefined && key.spendLimitMicros !== null && key.spentMicros + amount > key.spendLimitMicros) {
            return yield* keyLimitExceeded(amount, key.spendLimitMicros, key.spentMicros)
          }
          if (row.monthlySpendLimitMicros !== null) {
            const spent = yield* monthSpent(charge.accountId, month)
            if (spent + amount > row.monthlySpendLimitMicros) {
              return yield* monthlyLimitExceeded(amount, row.monthlySpendLimitMicros, spent)
            }
          }
          yield* appendEntry({
            accountId: charge.accountId,
            kind: "charge",
            amountMicros: -amount,
            keyId: charge.keyId,
            taskId: charge.taskId,
            description: charge.description,
            month,
            createdAt: now
          })
          const balance = yield* addBalance(charge.accountId, -amount, now)
          yield* sql`INSERT INTO ${t.keySpend} ${
            sql.insert({ key_id: charge.keyId, account_id: charge.accountId, spend_limit_micros: null, spent_micros: amount })
          } ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${t.keySpend}.spent_micros + excluded.spent_micros`
          yield* sql`INSERT INTO ${t.monthSpend} ${
            sql.insert({ account_id: charge.accountId, month, spent_micros: amount })
          } ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${t.monthSpend}.spent_micros + excluded.spent_micros`
          yield* autoTopUp(charge.accountId, row, balance, now)
        }))
      }).pipe(persistence("charge")),

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
            yield* appendEntry({
              accountId: refund.accountId,
              kind: "refund",
              amountMicros: part,
              keyId: refund.keyId,
              taskId: refund.taskId,
              description: refund.reason,
              month,
              createdAt: now
            })
            yield* sql`UPDATE ${t.monthSpend} SET spent_micros = ${sql.literal(minus("spent_micros", part))}
              WHERE account_id = ${refund.accountId} AND month = ${month}`
            total += part
          }
          if (total === 0) return
          yield* addBalance(refund.accountId, total, now)
          yield* sql`UPDATE ${t.keySpend} SET spent_micros = ${sql.literal(minus("spent_micros", total))}
            WHERE key_id = ${refund.keyId}`
        }))
      }).pipe(persistence("refund"))
  }

  const notFound = (accountId: string) => new Errors.AccountNotFound({ message: `No billing account ${accountId}` })

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
    Effect.flatMap(lockAccount(accountId), (row) =>
      row === undefined ? Effect.die(new Error("billing: account row vanished")) : stateOf(accountId, row, now))

  const accounts: BillingAccounts["Type"] = {
    open: (accountId, settings, openingMicros) =>
      Effect.gen(function*() {
        yield* requireAmount("an opening credit", openingMicros)
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO ${t.accounts} ${
            sql.insert({
              account_id: accountId,
              billing_mode: settings.billingMode,
              balance_micros: 0,
              monthly_spend_limit_micros: settings.monthlySpendLimitMicros,
              auto_top_up_enabled: settings.autoTopUpEnabled ? 1 : 0,
              auto_top_up_threshold_micros: settings.autoTopUpThresholdMicros,
              auto_top_up_amount_micros: settings.autoTopUpAmountMicros,
              created_at: now,
              updated_at: now
            })
          }`
          if (openingMicros > 0) yield* creditLocked(accountId, openingMicros, "opening credit", now)
          return yield* stateAfter(accountId, now)
        }))
      }).pipe(persistence("open")),

    state: (accountId) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql`SELECT * FROM ${t.accounts} WHERE account_id = ${accountId}`.pipe(
          Effect.flatMap(rows.account.first),
          Effect.flatMap(Option.match({
            onNone: (): Effect.Effect<BillingState, Errors.AccountNotFound | SqlError | SqlRows.RowError> =>
              Effect.fail(notFound(accountId)),
            onSome: (row) => stateOf(accountId, row, now)
          }))
        )).pipe(persistence("state")),

    update: (accountId, settings) =>
      withAccount("update", accountId, (_row, now) =>
        Effect.gen(function*() {
          const set: Array<Fragment> = []
          if (settings.billingMode !== undefined) set.push(sql`billing_mode = ${settings.billingMode}`)
          if (settings.monthlySpendLimitMicros !== undefined) {
            set.push(sql`monthly_spend_limit_micros = ${settings.monthlySpendLimitMicros}`)
          }
          if (settings.autoTopUpEnabled !== undefined) {
            set.push(sql`auto_top_up_enabled = ${settings.autoTopUpEnabled ? 1 : 0}`)
          }
          if (settings.autoTopUpThresholdMicros !== undefined) {
            set.push(sql`auto_top_up_threshold_micros = ${settings.autoTopUpThresholdMicros}`)
          }
          if (settings.autoTopUpAmountMicros !== undefined) {
            set.push(sql`auto_top_up_amount_micros = ${settings.autoTopUpAmountMicros}`)
          }
          if (set.length > 0) {
            set.push(sql`updated_at = ${now}`)
            yield* sql`UPDATE ${t.accounts} SET ${sql.csv(set)} WHERE account_id = ${accountId}`
          }
          return yield* stateAfter(accountId, now)
        })),

    credit: (accountId, amountMicros, note) =>
      Effect.zipRight(
        requireAmount("a credit", amountMicros),
        withAccount("credit", accountId, (_row, now) =>
          Effect.zipRight(
            amountMicros > 0 ? creditLocked(accountId, amountMicros, note ?? "credit", now) : Effect.void,
            stateAfter(accountId, now)
          ))
      ),

    registerKey: (accountId, keyId, spendLimitMicros) =>
      sql`INSERT INTO ${t.keySpend} ${
        sql.insert({ key_id: keyId, account_id: accountId, spend_limit_micros: spendLimitMicros, spent_micros: 0 })
      } ON CONFLICT (key_id) DO UPDATE SET spend_limit_micros = excluded.spend_limit_micros`.pipe(
        Effect.asVoid,
        persistence("registerKey")
      ),

    keySpend: (keyId) =>
      sql`SELECT spend_limit_micros, spent_micros FROM ${t.keySpend} WHERE key_id = ${keyId}`.pipe(
        Effect.flatMap(rows.keySpend.first),
        Effect.map(Option.match({
          onNone: () => ({ keyId, spendLimitMicros: null, spentMicros: 0 }),
          onSome: (row) => ({ keyId, ...row })
        })),
        persistence("keySpend")
      )
  }

  const ledger: BillingLedger["Type"] = {
    entries: (accountId) =>
      sql`SELECT * FROM ${t.ledger} WHERE account_id = ${accountId} ORDER BY id`.pipe(
        Effect.flatMap(rows.ledger.all),
        persistence("ledger")
      ),
    topUpRequests: (accountId) =>
      sql`SELECT * FROM ${t.topUps} WHERE account_id = ${accountId} ORDER BY id`.pipe(
        Effect.flatMap(rows.topUp.all),
        persistence("topUpRequests")
      )
  }

  return { billing, accounts, balances: balanceService(accounts.state), ledger }
})

/**
 * SQL billing: `Billing`, `BillingAccounts`, the contract's `BillingService` and `BillingLedger` on the
 * `SqlClient` in context, after migrating, with its tables under `options.prefix` (default `mediagate_`); auto
 * top-up through the `PaymentProvider` in context.
 */
export const layer = (options: SqlOptions = {}): Layer.Layer<
  Billing | BillingAccounts | Services.BillingService | BillingLedger,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | PaymentProvider
> => layerOf(make(options))
