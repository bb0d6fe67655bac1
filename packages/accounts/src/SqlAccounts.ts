/**
 * Accounts and API keys on SQL: SQLite and PostgreSQL (any `SqlClient` of those dialects).
 *
 * Tables, named with the store's prefix (`options.prefix`, default `mediagate_`; see {@link tables}), migrations
 * recorded in {@link migrationsTable}; times are epoch ms, money integer micro-dollars, JSON as TEXT on both
 * databases:
 * - `<prefix>accounts` (id `acct_`+ULID, name, created_at);
 * - `<prefix>api_keys` (id `key_`+ULID, account_id, name, environment, key_hash UNIQUE = SHA-256 hex of the full
 *   key, masked_key, permissions, ip_whitelist, spend_limit_micros, expires_at, created_at, revoked_at,
 *   last_used_at); the full key is never stored;
 * - `<prefix>idempotent_responses` (see `Idempotency.ts`).
 *
 * Every storage failure surfaces as `PersistenceError`; so does an invalid prefix, when the store is built.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import type { ApiKey, Services } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/engine/PersistenceError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AccountStore, type AccountRow, type KeyRow } from "./AccountStore.js"
import * as AdminService from "./AdminService.js"
import * as Idempotency from "./Idempotency.js"
import {
  columns,
  defaultPrefix,
  identifiers,
  migrateWith,
  migrator,
  type PrefixOptions,
  prefixedMigrations,
  resolvePrefix,
  storeClient
} from "@mediagate/engine/SqlStore"
import { decodeAll, jsonOf, numberOf, numberOrNull, persistence, type Row, stringOf } from "./internal/sql.js"
import * as KeyService from "./KeyService.js"

const storeName = "accounts storage"

/** The tables of accounts and keys under `prefix`. */
export const tables = (prefix: string = defaultPrefix) => ({
  accounts: `${prefix}accounts`,
  keys: `${prefix}api_keys`,
  responses: Idempotency.table(prefix)
}) as const

/** The table the accounts migrations are recorded in: `<prefix>accounts_migrations`. */
export const migrationsTable = (prefix: string = defaultPrefix): string => `${prefix}accounts_migrations`

/** A constant of the bootstrap advisory lock (PostgreSQL). */
const bootstrapLock = 0x6d67_6163 // "mgac"

const createTables = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, id: idType } = columns(sql)
    const t = tables(prefix)
    yield* sql.unsafe(`CREATE TABLE ${t.accounts} (
  id ${idType} PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  created_at ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.keys} (
  id ${idType} PRIMARY KEY NOT NULL,
  account_id TEXT NOT NULL REFERENCES ${t.accounts} (id),
  name TEXT NOT NULL,
  environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
  key_hash TEXT NOT NULL UNIQUE,
  masked_key TEXT NOT NULL,
  permissions TEXT NOT NULL,
  ip_whitelist TEXT NOT NULL,
  spend_limit_micros ${big},
  expires_at ${big},
  created_at ${big} NOT NULL,
  revoked_at ${big},
  last_used_at ${big}
)`)
    yield* sql.unsafe(`CREATE INDEX ${t.keys}_account_idx ON ${t.keys} (account_id, id)`)
  })

/**
 * The accounts migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails
 * the loader with a `MigrationError`.
 */
export const migrations = (prefix: string = defaultPrefix): Migrator.Loader =>
  prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_accounts_api_keys": createTables(prefix),
    "0002_idempotent_responses": Idempotency.createTable(prefix)
  }))

/**
 * Runs the accounts migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 */
export const migrate = migrateWith(storeName, migrations, migrationsTable)

const environments: ReadonlyArray<ApiKey.Environment> = ["live", "test"]

const decodeAccount = (row: Row): AccountRow => ({
  id: stringOf(row, "id"),
  name: stringOf(row, "name"),
  createdAt: numberOf(row, "created_at")
})

const decodeKey = (row: Row): KeyRow => {
  const environment = stringOf(row, "environment")
  if (!(environments as ReadonlyArray<string>).includes(environment)) throw new Error("column environment: unknown")
  const permissions = jsonOf(row, "permissions")
  const ipWhitelist = jsonOf(row, "ip_whitelist")
  if (typeof permissions !== "object" || permissions === null || Array.isArray(permissions)) {
    throw new Error("column permissions: not an object")
  }
  if (!Array.isArray(ipWhitelist) || !ipWhitelist.every((e) => typeof e === "string")) {
    throw new Error("column ip_whitelist: not a list of strings")
  }
  return {
    id: stringOf(row, "id"),
    accountId: stringOf(row, "account_id"),
    name: stringOf(row, "name"),
    environment: environment as ApiKey.Environment,
    keyHash: stringOf(row, "key_hash"),
    maskedKey: stringOf(row, "masked_key"),
    permissions: permissions as ApiKey.Permissions,
    ipWhitelist: ipWhitelist as ReadonlyArray<string>,
    spendLimitMicros: numberOrNull(row, "spend_limit_micros"),
    expiresAt: numberOrNull(row, "expires_at"),
    createdAt: numberOf(row, "created_at"),
    revokedAt: numberOrNull(row, "revoked_at"),
    lastUsedAt: numberOrNull(row, "last_used_at")
  }
}

/** Options of the SQL stores. */
export interface SqlOptions extends PrefixOptions {}

/**
 * Builds the SQL store on the `SqlClient` in context (SQLite or PostgreSQL), after running the accounts
 * migrations, with its tables under `options.prefix` (default `mediagate_`).
 */
export const makeStore = (options: SqlOptions = {}): Effect.Effect<
  AccountStore["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> => Effect.gen(function*() {
  const prefix = yield* resolvePrefix(storeName, options)
  const { pg, sql } = yield* storeClient(storeName)
  yield* migrator(migrations(prefix), migrationsTable(prefix))
  const t = identifiers(sql, tables(prefix))

  const one = <A>(decode: (row: Row) => A) => (rows: ReadonlyArray<Row>) =>
    Effect.map(decodeAll(decode)(rows), (decoded) => Option.fromNullable(decoded[0]))

  const store: AccountStore["Type"] = {
    transaction: (self) => persistence("transaction")(sql.withTransaction(self)),
    lockBootstrap: pg
      ? sql`SELECT pg_advisory_xact_lock(${bootstrapLock})`.pipe(Effect.asVoid, persistence("bootstrap lock"))
      : Effect.void,
    hasAccounts: sql<Row>`SELECT 1 AS one FROM ${t.accounts} LIMIT 1`.pipe(
      Effect.map((rows) => rows.length > 0),
      persistence("account count")
    ),
    insertAccount: (row) =>
      sql`INSERT INTO ${t.accounts} ${sql.insert({ id: row.id, name: row.name, created_at: row.createdAt })}`.pipe(
        Effect.asVoid,
        persistence("account insert")
      ),
    findAccount: (id) =>
      sql<Row>`SELECT * FROM ${t.accounts} WHERE id = ${id}`.pipe(Effect.flatMap(one(decodeAccount)), persistence("account read")),
    renameAccount: (id, name) =>
      sql`UPDATE ${t.accounts} SET name = ${name} WHERE id = ${id}`.pipe(Effect.asVoid, persistence("account update")),
    insertKey: (row) =>
      sql`INSERT INTO ${t.keys} ${
        sql.insert({
          id: row.id,
          account_id: row.accountId,
          name: row.name,
          environment: row.environment,
          key_hash: row.keyHash,
          masked_key: row.maskedKey,
          permissions: JSON.stringify(row.permissions),
          ip_whitelist: JSON.stringify(row.ipWhitelist),
          spend_limit_micros: row.spendLimitMicros,
          expires_at: row.expiresAt,
          created_at: row.createdAt,
          revoked_at: row.revokedAt,
          last_used_at: row.lastUsedAt
        })
      }`.pipe(Effect.asVoid, persistence("key insert")),
    keyByHash: (keyHash) =>
      sql<Row>`SELECT * FROM ${t.keys} WHERE key_hash = ${keyHash}`.pipe(
        Effect.flatMap(one(decodeKey)),
        persistence("key lookup")
      ),
    listKeys: (accountId) =>
      sql<Row>`SELECT * FROM ${t.keys} WHERE account_id = ${accountId} AND revoked_at IS NULL ORDER BY id`.pipe(
        Effect.flatMap(decodeAll(decodeKey)),
        persistence("key list")
      ),
    revokeKey: (accountId, id, at) =>
      sql<Row>`UPDATE ${t.keys} SET revoked_at = ${at}
        WHERE id = ${id} AND account_id = ${accountId} AND revoked_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        persistence("key revoke")
      ),
    touchKeys: (uses) => {
      if (uses.size === 0) return Effect.void
      // one statement for the whole batch: UPDATE ... FROM (VALUES ...) (SQLite ≥ 3.33 and PostgreSQL)
      const values = sql.csv([...uses].map(([id, at]) => sql`(${id}, CAST(${at} AS BIGINT))`))
      return sql`UPDATE ${t.keys} SET last_used_at = u.at
        FROM (SELECT column1 AS id, column2 AS at FROM (VALUES ${values}) AS v) AS u
        WHERE ${t.keys}.id = u.id AND (${t.keys}.last_used_at IS NULL OR ${t.keys}.last_used_at < u.at)`.pipe(
        Effect.asVoid,
        persistence("key last use")
      )
    }
  }
  return store
})

/**
 * The SQL stores (accounts and keys, idempotent answers) as a layer (runs the migrations), with their tables under
 * `options.prefix` (default `mediagate_`).
 */
export const layerStore = (options: SqlOptions = {}): Layer.Layer<
  AccountStore | Idempotency.IdempotencyStore,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> =>
  Layer.effectContext(Effect.gen(function*() {
    const store = yield* makeStore(options)
    const idempotency = yield* Idempotency.makeSql(options)
    return Context.make(AccountStore, store).pipe(Context.add(Idempotency.IdempotencyStore, idempotency))
  }))

/**
 * Every accounts service on SQL: `KeyService` (with `KeyUsage`, configured by `options`), `AdminService` and the
 * stores (configured by `storage`: the table prefix).
 */
export const layer = (
  options: KeyService.Options = {},
  storage: SqlOptions = {}
): Layer.Layer<
  Services.KeyService | KeyService.KeyUsage | Services.AdminService | AccountStore | Idempotency.IdempotencyStore,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | BillingAccounts
> =>
  Layer.mergeAll(KeyService.layer(options), AdminService.layer).pipe(Layer.provideMerge(layerStore(storage)))
