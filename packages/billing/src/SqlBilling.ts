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
 *   and the monthly limit are checked and the ledger entry, the key's spend and the month's spend written (PostgreSQL: one call of the
 *   charge function `<prefix>billing_charge` for a whole batch of charges, which writes nothing for a refusal;
 *   SQLite: four statements, a refusal rolled back with the transaction). Key tree: a key's spend row lists
 *   its ancestors; a charge checks and counts the key's limit and every ancestor's in those same statements, and a
 *   refund gives back to all of them. Every writer of an account's money
 *   locks its account row first, so concurrent charges serialize per account.
 * - A charge for an account billing was never opened for fails with `INSUFFICIENT_BALANCE` (nothing is charged
 *   into nothing).
 * - Time: created_at and the calendar month come from Effect's `Clock` (not the database clock).
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import { Account, type Errors, type Services } from "@mediagate/contract"
import type { Billing, Charge } from "@mediagate/engine/Billing"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlProgram from "@mediagate/persistence/SqlProgram"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Clock from "effect/Clock"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { BillingAccounts, BillingState } from "./BillingAccounts.js"
import {
  balanceService,
  type BillingLedger,
  type BillingOptions,
  type BillingServices,
  creditLimitExceeded,
  creditOutOfRange,
  defaultCreditLimitConfig,
  defaultCreditLimitMicros,
  entry,
  inRange,
  insufficientBalance,
  isAmount,
  keyLimitExceeded,
  layerOf,
  LedgerEntry,
  ledgerKinds,
  monthlyLimitExceeded,
  monthOf,
  NewEntry,
  notFound,
  refundParts,
  requestTopUp,
  requireAmount,
  topUpDue,
  TopUpRecord,
  type TopUpStatus,
  topUpStatuses
} from "./Ledger.js"
import { PaymentProvider } from "./PaymentProvider.js"

const storeName = "billing"

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
 * The key tree (accounts.md "Key tree"): each key's spend row lists its ancestors (a JSON array of key ids, root
 * first; `[]` for a root and for every key made before this migration).
 */
const addAncestors = (prefix: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql.unsafe(`ALTER TABLE ${tables(prefix).keySpend} ADD COLUMN ancestors TEXT NOT NULL DEFAULT '[]'`)
  )

/** PostgreSQL's charge function: `<prefix>billing_charge` (see {@link createChargeFunction}). */
export const chargeFunction = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}billing_charge`

/**
 * PostgreSQL: the function that makes a batch of charges in one call (SQLite: nothing; its charges run
 * synchronously on the write connection). `charges` is a JSON array of `{ account_id, key_id, task_id, amount,
 * description }`; `now_ms` and `month_text` are the charges' time and calendar month. It locks the accounts' rows
 * (in account order, one statement), then takes each charge in turn and answers one row for it, in order:
 * - `made`: the charge was written (the debit, its ledger entry, the spend of the key and its ancestors, or a new
 *   spend row for a key without one, and the month's spend); a charge of 0 is made and writes nothing;
 * - `deferred` (only with `defer_top_ups`): the charge would leave an account with auto top-up enabled below its
 *   threshold (or with none), so that a top-up may be due after it: it is not made, and the function stops there
 *   (the caller makes it and the charges after it in a transaction that can ask the payment provider);
 * - otherwise the charge is refused and writes nothing: `present` (the account exists), the account's row as it was
 *   (`billing_mode`, `balance_micros`, the monthly limit, the auto top-up settings), `funded` (postpaid, or prepaid
 *   with the balance covering the amount; an unknown mode funds nothing), `allowed` (no limit of the key's chain nor
 *   the monthly limit would be passed) and what the limits were checked on: the key or ancestor whose limit the
 *   charge would pass (`key_limit`, `key_spent`: the one with the least left), the month's spend (`month_spent`).
 * A made charge's row carries the same columns, read before the charge.
 */
const createChargeFunction = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!SqlStore.columns(sql).pg) return
    const t = tables(prefix)
    yield* sql.unsafe(`CREATE FUNCTION ${chargeFunction(prefix)}(charges jsonb, now_ms bigint, month_text text,
  defer_top_ups boolean)
RETURNS TABLE (made boolean, deferred boolean, present boolean, funded boolean, allowed boolean, billing_mode text,
  balance_micros bigint, monthly_spend_limit_micros bigint, auto_top_up_enabled integer,
  auto_top_up_threshold_micros bigint, auto_top_up_amount_micros bigint, key_limit bigint, key_spent bigint,
  month_spent bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c jsonb;
  acct ${t.accounts}%ROWTYPE;
  amount bigint;
  k_id text;
  k_ancestors text;
  k_present boolean;
  k_chain text[];
BEGIN
  PERFORM 1 FROM ${t.accounts} WHERE account_id IN (SELECT e->>'account_id' FROM jsonb_array_elements(charges) AS e)
    ORDER BY account_id FOR UPDATE;
  FOR c IN SELECT e FROM jsonb_array_elements(charges) WITH ORDINALITY AS x(e, n) ORDER BY n LOOP
    amount := (c->>'amount')::bigint;
    made := false; deferred := false; present := NULL; funded := NULL; allowed := NULL; billing_mode := NULL;
    balance_micros := NULL; monthly_spend_limit_micros := NULL; auto_top_up_enabled := NULL;
    auto_top_up_threshold_micros := NULL; auto_top_up_amount_micros := NULL; key_limit := NULL; key_spent := NULL;
    month_spent := NULL;
    IF amount = 0 THEN
      made := true;
      RETURN NEXT;
      CONTINUE;
    END IF;
    k_id := c->>'key_id';
    SELECT * INTO acct FROM ${t.accounts} WHERE account_id = c->>'account_id';
    present := FOUND;
    IF NOT present THEN
      RETURN NEXT;
      CONTINUE;
    END IF;
    billing_mode := acct.billing_mode;
    balance_micros := acct.balance_micros;
    monthly_spend_limit_micros := acct.monthly_spend_limit_micros;
    auto_top_up_enabled := acct.auto_top_up_enabled;
    auto_top_up_threshold_micros := acct.auto_top_up_threshold_micros;
    auto_top_up_amount_micros := acct.auto_top_up_amount_micros;
    funded := CASE acct.billing_mode WHEN 'postpaid' THEN true WHEN 'prepaid' THEN acct.balance_micros >= amount
      ELSE false END;
    -- the key's chain: the key and its ancestors, their spend rows locked
    SELECT ancestors INTO k_ancestors FROM ${t.keySpend} WHERE key_id = k_id FOR UPDATE;
    k_present := FOUND;
    k_chain := ARRAY[k_id];
    IF k_present AND k_ancestors <> '[]' THEN
      k_chain := k_chain || ARRAY(SELECT jsonb_array_elements_text(k_ancestors::jsonb));
      PERFORM 1 FROM ${t.keySpend} WHERE key_id = ANY(k_chain) FOR UPDATE;
    END IF;
    SELECT s.spend_limit_micros, s.spent_micros INTO key_limit, key_spent FROM ${t.keySpend} AS s
      WHERE s.key_id = ANY(k_chain) AND s.spend_limit_micros IS NOT NULL AND s.spent_micros + amount > s.spend_limit_micros
      ORDER BY s.spend_limit_micros - s.spent_micros, s.key_id LIMIT 1;
    SELECT m.spent_micros INTO month_spent FROM ${t.monthSpend} AS m
      WHERE m.account_id = acct.account_id AND m.month = month_text;
    allowed := key_limit IS NULL AND (acct.monthly_spend_limit_micros IS NULL
      OR COALESCE(month_spent, 0) + amount <= acct.monthly_spend_limit_micros);
    IF funded AND allowed AND defer_top_ups AND acct.auto_top_up_enabled = 1
      AND NOT COALESCE(acct.balance_micros - amount >= acct.auto_top_up_threshold_micros, false) THEN
      deferred := true;
      RETURN NEXT;
      RETURN;
    END IF;
    IF funded AND allowed THEN
      made := true;
      UPDATE ${t.accounts} SET balance_micros = balance_micros - amount, updated_at = now_ms
        WHERE account_id = acct.account_id;
      INSERT INTO ${t.ledger} (account_id, kind, amount_micros, key_id, task_id, description, month, created_at)
        VALUES (acct.account_id, 'charge', -amount, k_id, c->>'task_id', c->>'description', month_text, now_ms);
      IF k_present THEN
        UPDATE ${t.keySpend} SET spent_micros = spent_micros + amount WHERE key_id = ANY(k_chain);
      ELSE
        INSERT INTO ${t.keySpend} (key_id, account_id, spend_limit_micros, spent_micros)
          VALUES (k_id, acct.account_id, NULL, amount)
          ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${t.keySpend}.spent_micros + excluded.spent_micros;
      END IF;
      INSERT INTO ${t.monthSpend} (account_id, month, spent_micros) VALUES (acct.account_id, month_text, amount)
        ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${t.monthSpend}.spent_micros + excluded.spent_micros;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$`)
  })

/** A postpaid account's credit limit (null: billing's configured default), read by SQLite's debit with the row. */
const addCreditLimit = (prefix: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql.unsafe(`ALTER TABLE ${tables(prefix).accounts} ADD COLUMN credit_limit_micros ${SqlStore.columns(sql).big}`)
  )

/**
 * PostgreSQL: the charge function of {@link createChargeFunction} replaced by one that also takes the default credit
 * limit (`default_credit_limit`) and answers the account's `credit_limit_micros`: a postpaid charge is `funded` only
 * when the balance after it stays at or above `-COALESCE(credit_limit_micros, default_credit_limit)`.
 */
const createChargeFunctionWithCreditLimit = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!SqlStore.columns(sql).pg) return
    const t = tables(prefix)
    yield* sql.unsafe(`DROP FUNCTION ${chargeFunction(prefix)}(jsonb, bigint, text, boolean)`)
    yield* sql.unsafe(`CREATE FUNCTION ${chargeFunction(prefix)}(charges jsonb, now_ms bigint, month_text text,
  defer_top_ups boolean, default_credit_limit bigint)
RETURNS TABLE (made boolean, deferred boolean, present boolean, funded boolean, allowed boolean, billing_mode text,
  balance_micros bigint, monthly_spend_limit_micros bigint, auto_top_up_enabled integer,
  auto_top_up_threshold_micros bigint, auto_top_up_amount_micros bigint, credit_limit_micros bigint,
  key_limit bigint, key_spent bigint, month_spent bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c jsonb;
  acct ${t.accounts}%ROWTYPE;
  amount bigint;
  k_id text;
  k_ancestors text;
  k_present boolean;
  k_chain text[];
BEGIN
  PERFORM 1 FROM ${t.accounts} WHERE account_id IN (SELECT e->>'account_id' FROM jsonb_array_elements(charges) AS e)
    ORDER BY account_id FOR UPDATE;
  FOR c IN SELECT e FROM jsonb_array_elements(charges) WITH ORDINALITY AS x(e, n) ORDER BY n LOOP
    amount := (c->>'amount')::bigint;
    made := false; deferred := false; present := NULL; funded := NULL; allowed := NULL; billing_mode := NULL;
    balance_micros := NULL; monthly_spend_limit_micros := NULL; auto_top_up_enabled := NULL;
    auto_top_up_threshold_micros := NULL; auto_top_up_amount_micros := NULL; credit_limit_micros := NULL;
    key_limit := NULL; key_spent := NULL; month_spent := NULL;
    IF amount = 0 THEN
      made := true;
      RETURN NEXT;
      CONTINUE;
    END IF;
    k_id := c->>'key_id';
    SELECT * INTO acct FROM ${t.accounts} WHERE account_id = c->>'account_id';
    present := FOUND;
    IF NOT present THEN
      RETURN NEXT;
      CONTINUE;
    END IF;
    billing_mode := acct.billing_mode;
    balance_micros := acct.balance_micros;
    monthly_spend_limit_micros := acct.monthly_spend_limit_micros;
    auto_top_up_enabled := acct.auto_top_up_enabled;
    auto_top_up_threshold_micros := acct.auto_top_up_threshold_micros;
    auto_top_up_amount_micros := acct.auto_top_up_amount_micros;
    credit_limit_micros := acct.credit_limit_micros;
    funded := CASE acct.billing_mode
      WHEN 'postpaid' THEN acct.balance_micros - amount >= -COALESCE(acct.credit_limit_micros, default_credit_limit)
      WHEN 'prepaid' THEN acct.balance_micros >= amount
      ELSE false END;
    -- the key's chain: the key and its ancestors, their spend rows locked
    SELECT ancestors INTO k_ancestors FROM ${t.keySpend} WHERE key_id = k_id FOR UPDATE;
    k_present := FOUND;
    k_chain := ARRAY[k_id];
    IF k_present AND k_ancestors <> '[]' THEN
      k_chain := k_chain || ARRAY(SELECT jsonb_array_elements_text(k_ancestors::jsonb));
      PERFORM 1 FROM ${t.keySpend} WHERE key_id = ANY(k_chain) FOR UPDATE;
    END IF;
    SELECT s.spend_limit_micros, s.spent_micros INTO key_limit, key_spent FROM ${t.keySpend} AS s
      WHERE s.key_id = ANY(k_chain) AND s.spend_limit_micros IS NOT NULL AND s.spent_micros + amount > s.spend_limit_micros
      ORDER BY s.spend_limit_micros - s.spent_micros, s.key_id LIMIT 1;
    SELECT m.spent_micros INTO month_spent FROM ${t.monthSpend} AS m
      WHERE m.account_id = acct.account_id AND m.month = month_text;
    allowed := key_limit IS NULL AND (acct.monthly_spend_limit_micros IS NULL
      OR COALESCE(month_spent, 0) + amount <= acct.monthly_spend_limit_micros);
    IF funded AND allowed AND defer_top_ups AND acct.auto_top_up_enabled = 1
      AND NOT COALESCE(acct.balance_micros - amount >= acct.auto_top_up_threshold_micros, false) THEN
      deferred := true;
      RETURN NEXT;
      RETURN;
    END IF;
    IF funded AND allowed THEN
      made := true;
      UPDATE ${t.accounts} SET balance_micros = balance_micros - amount, updated_at = now_ms
        WHERE account_id = acct.account_id;
      INSERT INTO ${t.ledger} (account_id, kind, amount_micros, key_id, task_id, description, month, created_at)
        VALUES (acct.account_id, 'charge', -amount, k_id, c->>'task_id', c->>'description', month_text, now_ms);
      IF k_present THEN
        UPDATE ${t.keySpend} SET spent_micros = spent_micros + amount WHERE key_id = ANY(k_chain);
      ELSE
        INSERT INTO ${t.keySpend} (key_id, account_id, spend_limit_micros, spent_micros)
          VALUES (k_id, acct.account_id, NULL, amount)
          ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${t.keySpend}.spent_micros + excluded.spent_micros;
      END IF;
      INSERT INTO ${t.monthSpend} (account_id, month, spent_micros) VALUES (acct.account_id, month_text, amount)
        ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${t.monthSpend}.spent_micros + excluded.spent_micros;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$`)
  })

/**
 * Billing's migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails the
 * loader with a `MigrationError`.
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_billing": createTables(prefix),
    "0002_key_spend_ancestors": addAncestors(prefix),
    "0003_charge_function": createChargeFunction(prefix),
    "0004_credit_limit": Effect.zipRight(addCreditLimit(prefix), createChargeFunctionWithCreditLimit(prefix))
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
  autoTopUpAmountMicros: column("auto_top_up_amount_micros", limit),
  creditLimitMicros: column("credit_limit_micros", limit)
})
type AccountRow = typeof AccountRow.Type

/** The decoders of billing's rows, named after its tables under `prefix`. */
const decoders = (prefix: string) => {
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
const SpendRead = Schema.Struct({
  keyLimitMicros: column("key_limit", limit),
  keySpentMicros: column("key_spent", limit),
  monthSpentMicros: column("month_spent", limit)
})

/** A charge refused by the balance or a spend limit. */
type Refusal = Errors.InsufficientBalance | Errors.SpendLimitExceeded

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

/** Storage failures become {@link PersistenceError}. */
const persistence = SqlStore.persistence(storeName)

/** Subtracts `amount` from a counter column, never below zero. */
const minus = (column: string, amount: number) =>
  `CASE WHEN ${column} > ${amount} THEN ${column} - ${amount} ELSE 0 END`

// -----------------------------------------------------------------------------------------------------------------
// billing
// -----------------------------------------------------------------------------------------------------------------

/** Options of SQL billing: the tables' prefix, the default credit limit of postpaid accounts. */
export interface SqlOptions extends SqlStore.PrefixOptions, BillingOptions {}

/**
 * Builds SQL billing on the `SqlClient` in context (SQLite or PostgreSQL), after running billing's migrations, with
 * its tables under `options.prefix` (default `mediagate_`). The `PaymentProvider` in context serves auto top-up.
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  BillingServices,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | PaymentProvider
> =>
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

    /** SQLite: a charge's statements through the client ({@link sqliteCharging}): the debited row, or the refusal. */
    const sqliteCharge = (charge: Charge, amount: number, now: number) =>
      Effect.flatMap(SqlProgram.run(sqliteCharging(charge, amount, now), sql), (charged) => charged)

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

    /**
     * A charge in `transaction` (or the caller's), then its auto top-up. The account row is locked first
     * (PostgreSQL: the row lock; SQLite: the database's write lock); then the balance (prepaid), the spend limit of
     * the key and of every ancestor (the key tree: each spend row counts what its key and its descendants spent) and
     * the month's are checked, and the debit, the ledger entry, the spend of the key and its ancestors and the
     * month's spend are written:
     * - PostgreSQL: a charge is a batch of one ({@link pgChargeBatch}): one call of the charge function, which locks
     *   the account, reads and writes everything, and writes nothing when it refuses ({@link createChargeFunction});
     *   several charges in one transaction lock their accounts together, once, in the same call.
     * - SQLite (one writer): the debit takes the lock and also answers the first limit of the chain the charge would
     *   pass, the key's ancestors and the month's spend; the checks run here (a refusal after the debit: the caller's
     *   transaction rolls back), then three writes (one `UPDATE` of the chain's spend rows by primary key). Four
     *   statements in all.
     * A derived key adds no statement: one more spend row read and written (by primary key) per ancestor.
     */
    const chargeWith = (
      transaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
    ): Billing["Type"]["charge"] =>
    (charge) =>
      Effect.gen(function*() {
        yield* requireAmount("a charge", charge.amountMicros)
        if (charge.amountMicros === 0) return
        const now = yield* Clock.currentTimeMillis
        if (pg) return yield* transaction(pgCharge(charge, now))
        yield* transaction(Effect.flatMap(
          sqliteCharge(charge, charge.amountMicros, now),
          (row) => autoTopUp(charge.accountId, row, row.balanceMicros, now)
        ))
      }).pipe(persistence("charge"))

    const billing: Billing["Type"] = {
      charge: chargeWith(sql.withTransaction),
      chargeInTransaction: chargeWith((self) => self),
      ...(pg ?
        {
          chargeBatch: (charges, alongside) => pgChargeBatch(charges, alongside).pipe(persistence("charge"))
        } :
        {
          // the same statements as `chargeInTransaction` on SQLite; an auto top-up due after the charge is left to it
          *chargeStatements(charge, now) {
            const amount = charge.amountMicros
            if (amount === 0) return Either.right("charged")
            if (!isAmount(amount)) return Either.right("deferred")
            const charged = yield* sqliteCharging(charge, amount, now)
            return Either.map(charged, (row) => topUpDue(row, row.balanceMicros) === undefined ? "charged" : "deferred")
          }
        }),

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
              yield* appendEntry(entry("refund", refund, part, refund.reason, now, month))
              yield* sql`UPDATE ${t.monthSpend} SET spent_micros = ${sql.literal(minus("spent_micros", part))}
              WHERE account_id = ${refund.accountId} AND month = ${month}`
              total += part
            }
            if (total === 0) return
            yield* addBalance(refund.accountId, total, now)
            // the key's spend and every ancestor's (see `charging`)
            yield* sql`UPDATE ${t.keySpend} SET spent_micros = ${sql.literal(minus("spent_micros", total))}
            WHERE key_id IN (${chain(refund.keyId)})`
          }))
        }).pipe(persistence("refund"))
    }

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
        ),
      // both on the (account_id, id) index: a range scan of the page, a count of the account's entries
      page: (accountId, { before, kind, limit }) => {
        const ofKind = kind === undefined ? sql.literal("") : sql`AND kind = ${kind}`
        const below = before === undefined ? sql.literal("") : sql`AND id < ${before}`
        return Effect.all({
          entries: sql`SELECT * FROM ${t.ledger} WHERE account_id = ${accountId} ${ofKind} ${below}
          ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.flatMap(rows.ledger.all)),
          total: sql<{ readonly total: number | string | bigint }>`SELECT count(*) AS total FROM ${t.ledger}
          WHERE account_id = ${accountId} ${ofKind}`.pipe(Effect.map((found) => Number(found[0]?.total ?? 0)))
        }).pipe(persistence("ledgerPage"))
      }
    }

    return { billing, accounts, balances: balanceService(accounts.state, ledger.page), ledger }
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

/**
 * {@link layer} with the default credit limit of postpaid accounts from Effect `Config`
 * (`MEDIAGATE_DEFAULT_CREDIT_LIMIT`, USD, default 100), unless `options` gives one.
 */
export const layerConfig = (options: SqlOptions = {}): Layer.Layer<
  Billing | BillingAccounts | Services.BillingService | BillingLedger,
  SqlError | Migrator.MigrationError | PersistenceError | ConfigError.ConfigError,
  SqlClient.SqlClient | PaymentProvider
> =>
  Layer.unwrapEffect(
    Effect.map(defaultCreditLimitConfig, (defaultCreditLimitMicros) => layer({ defaultCreditLimitMicros, ...options }))
  )
