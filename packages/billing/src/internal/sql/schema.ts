/**
 * SQL billing's migrations (SQLite and PostgreSQL): the tables, the ledger's append-only triggers, the key tree's
 * ancestors, the credit limit, and PostgreSQL's charge function, every object under the store's table prefix.
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import { ledgerKinds, topUpStatuses } from "../../Ledger.js"
import {
  createBatchedChargeFunction,
  createChargeFunction,
  createChargeFunctionWithCreditLimit
} from "./chargeFunction.js"
import { migrationsTable, storeName, tables } from "./tables.js"

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

/** A postpaid account's credit limit (null: billing's configured default), read by SQLite's debit with the row. */
const addCreditLimit = (prefix: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql.unsafe(`ALTER TABLE ${tables(prefix).accounts} ADD COLUMN credit_limit_micros ${SqlStore.columns(sql).big}`)
  )

/**
 * Billing's migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails the
 * loader with a `MigrationError`.
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_billing": createTables(prefix),
    "0002_key_spend_ancestors": addAncestors(prefix),
    "0003_charge_function": createChargeFunction(prefix),
    "0004_credit_limit": Effect.zipRight(addCreditLimit(prefix), createChargeFunctionWithCreditLimit(prefix)),
    "0005_charge_batched": createBatchedChargeFunction(prefix)
  }))

/**
 * Runs billing's migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)
