/**
 * Accounts and API keys on SQL: SQLite and PostgreSQL (any `SqlClient` of those dialects).
 *
 * Tables, named with the store's prefix (`options.prefix`, default `mediagate_`; see {@link tables}), migrations
 * recorded in {@link migrationsTable}; times are epoch ms, money integer micro-dollars, JSON as TEXT on both
 * databases:
 * - `<prefix>accounts` (id `acct_`+ULID, name, created_at);
 * - `<prefix>api_keys` (id `key_`+ULID, account_id, name, environment, key_hash UNIQUE = SHA-256 hex of the full
 *   key, masked_key, permissions, ip_whitelist, spend_limit_micros, expires_at, created_at, revoked_at,
 *   last_used_at, parent_id, ancestors JSON root first: the key tree); the full key is never stored;
 * - `<prefix>idempotent_responses` (account_id, scope, key_hash, fingerprint, ciphertext, created_at), primary key
 *   (account_id, scope, key_hash): the sealed answers of `Idempotency` ({@link makeIdempotencyStore}).
 *
 * Rows are decoded with Schema: a corrupt row, like every storage failure, surfaces as a `PersistenceError` (naming
 * its table and column); so does an invalid prefix, when the store is built.
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import type { Services } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { AccountRow, AccountStore, KeyRow } from "./AccountStore.js"
import * as Idempotency from "./Idempotency.js"
import * as KeyService from "./KeyService.js"

const storeName = "accounts storage"

/**
 * The tables of accounts and keys under `prefix`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const tables = (prefix: string = SqlStore.defaultPrefix) =>
  ({
    accounts: `${prefix}accounts`,
    keys: `${prefix}api_keys`,
    responses: `${prefix}idempotent_responses`,
    rateWindows: `${prefix}rate_windows`
  }) as const

/**
 * The table the accounts migrations are recorded in: `<prefix>accounts_migrations`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}accounts_migrations`

/** A constant of the bootstrap advisory lock (PostgreSQL). */
const bootstrapLock = 0x6d67_6163 // "mgac"

const createTables = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, id: idType } = SqlStore.columns(sql)
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

const createResponses = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const name = tables(prefix).responses
    yield* sql.unsafe(`CREATE TABLE ${name} (
  account_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  ciphertext TEXT NOT NULL,
  created_at ${SqlStore.columns(sql).big} NOT NULL,
  PRIMARY KEY (account_id, scope, key_hash)
)`)
    yield* sql.unsafe(`CREATE INDEX ${name}_created_idx ON ${name} (created_at)`)
  })

/** The key tree: a key's parent and ancestors (keys made before it are roots). */
const addKeyTree = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keys = tables(prefix).keys
    yield* sql.unsafe(`ALTER TABLE ${keys} ADD COLUMN parent_id TEXT`)
    yield* sql.unsafe(`ALTER TABLE ${keys} ADD COLUMN ancestors TEXT NOT NULL DEFAULT '[]'`)
  })

/** Per-key rate limits (null: the configured defaults). */
const addKeyRateLimits = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keys = tables(prefix).keys
    const { big } = SqlStore.columns(sql)
    yield* sql.unsafe(`ALTER TABLE ${keys} ADD COLUMN rate_limit_rpm ${big}`)
    yield* sql.unsafe(`ALTER TABLE ${keys} ADD COLUMN max_in_flight_tasks ${big}`)
  })

/**
 * `<prefix>rate_windows`: the request counters of fixed windows (`SqlRateWindows`), one row per scope and window,
 * shared by every node on the database.
 */
const createRateWindows = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, pg } = SqlStore.columns(sql)
    const name = tables(prefix).rateWindows
    yield* sql.unsafe(`CREATE TABLE ${name} (
  scope TEXT NOT NULL,
  window_start ${big} NOT NULL,
  count ${big} NOT NULL,
  PRIMARY KEY (scope, window_start)
)${pg ? " WITH (fillfactor = 50)" : ""}`)
    yield* sql.unsafe(`CREATE INDEX ${name}_window_idx ON ${name} (window_start)`)
  })

/**
 * The accounts migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails
 * the loader with a `MigrationError`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_accounts_api_keys": createTables(prefix),
    "0002_idempotent_responses": createResponses(prefix),
    "0003_api_key_tree": addKeyTree(prefix),
    "0004_api_key_rate_limits": addKeyRateLimits(prefix),
    "0005_rate_windows": createRateWindows(prefix)
  }))

/**
 * Runs the accounts migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)

/** The decoders of the accounts rows (`AccountStore`'s and `Idempotency`'s records), named after their tables. */
const decoders = (prefix: string) => {
  const names = tables(prefix)
  return {
    account: SqlRows.decoder(names.accounts, AccountRow),
    count: SqlRows.decoder(names.accounts, Schema.Struct({ n: SqlRows.Number })),
    key: SqlRows.decoder(names.keys, KeyRow),
    response: SqlRows.decoder(names.responses, Idempotency.StoredResponse)
  }
}

/** Storage failures become `PersistenceError`. */
const persistence = SqlStore.persistence(storeName)

/**
 * Options of the SQL stores.
 *
 * @since 0.1.0
 * @category models
 */
export interface SqlOptions extends SqlStore.PrefixOptions {}

/**
 * Builds the SQL store on the `SqlClient` in context (SQLite or PostgreSQL), after running the accounts
 * migrations, with its tables under `options.prefix` (default `mediagate_`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStore = (options: SqlOptions = {}): Effect.Effect<
  AccountStore["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const rows = decoders(prefix)

    const store: AccountStore["Type"] = {
      transaction: (self) => persistence("transaction")(sql.withTransaction(self)),
      // PostgreSQL: an advisory lock; SQLite: its one write lock, taken by a write of no row (the check that follows
      // then reads what every other process committed, and the inserts cannot fail for a commit in between)
      lockBootstrap: (pg
        ? sql`SELECT pg_advisory_xact_lock(${bootstrapLock})`
        : sql`UPDATE ${t.accounts} SET name = name WHERE 0 = 1`).pipe(Effect.asVoid, persistence("bootstrap lock")),
      hasAccounts: sql`SELECT 1 AS one FROM ${t.accounts} LIMIT 1`.pipe(
        Effect.map((found) => found.length > 0),
        persistence("account count")
      ),
      insertAccount: (row) =>
        sql`INSERT INTO ${t.accounts} ${sql.insert({ id: row.id, name: row.name, created_at: row.createdAt })}`.pipe(
          Effect.asVoid,
          persistence("account insert")
        ),
      findAccount: (id) =>
        sql`SELECT * FROM ${t.accounts} WHERE id = ${id}`.pipe(
          Effect.flatMap(rows.account.first),
          persistence("account read")
        ),
      renameAccount: (id, name) =>
        sql`UPDATE ${t.accounts} SET name = ${name} WHERE id = ${id}`.pipe(
          Effect.asVoid,
          persistence("account update")
        ),
      listAccounts: (query) =>
        Effect.gen(function*() {
          const limit = Math.max(0, Math.floor(query.limit))
          if (SqlStore.hasNul(query.search, query.beforeId)) return { items: [], hasMore: false, total: 0 }
          // a case-insensitive prefix of the id or the name: LIKE with its wildcards escaped
          const filters = query.search === undefined || query.search === "" ? [] : (() => {
            const pattern = `${query.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
            return [sql`(lower(id) LIKE ${pattern} ESCAPE '\\' OR lower(name) LIKE ${pattern} ESCAPE '\\')`]
          })()
          const page = query.beforeId === undefined ? filters : [...filters, sql`id < ${query.beforeId}`]
          const [items, [counted]] = yield* Effect.all([
            sql`SELECT * FROM ${t.accounts} WHERE ${sql.and(page)} ORDER BY id DESC LIMIT ${limit + 1}`.pipe(
              Effect.flatMap(rows.account.all)
            ),
            sql`SELECT COUNT(*) AS n FROM ${t.accounts} WHERE ${sql.and(filters)}`.pipe(Effect.flatMap(rows.count.all))
          ], { concurrency: 2 })
          return { items: items.slice(0, limit), hasMore: items.length > limit, total: counted?.n ?? 0 }
        }).pipe(persistence("account list")),
      findKeyById: (id) =>
        sql`SELECT * FROM ${t.keys} WHERE id = ${id}`.pipe(Effect.flatMap(rows.key.first), persistence("key read")),
      insertKey: (row) =>
        Effect.flatMap(rows.key.encode(row), (encoded) => sql`INSERT INTO ${t.keys} ${sql.insert(encoded)}`).pipe(
          Effect.asVoid,
          persistence("key insert")
        ),
      keyByHash: (keyHash) =>
        sql`SELECT * FROM ${t.keys} WHERE key_hash = ${keyHash}`.pipe(
          Effect.flatMap(rows.key.first),
          persistence("key lookup")
        ),
      findKey: (accountId, id) =>
        sql`SELECT * FROM ${t.keys} WHERE id = ${id} AND account_id = ${accountId}`.pipe(
          Effect.flatMap(rows.key.first),
          persistence("key read")
        ),
      lockAncestors: (accountId, ids) =>
        ids.length === 0
          ? Effect.succeed(true)
          // PostgreSQL: a shared row lock; SQLite has one writer: a write that changes nothing takes the write lock at
          // once (a read first would fail the transaction's insert if another process committed in between)
          : (pg
            ? sql`SELECT id FROM ${t.keys} WHERE ${sql.in("id", ids)} AND account_id = ${accountId}
              AND revoked_at IS NULL FOR SHARE`
            : sql`UPDATE ${t.keys} SET revoked_at = revoked_at WHERE ${sql.in("id", ids)} AND account_id = ${accountId}
              AND revoked_at IS NULL RETURNING id`).pipe(
              Effect.map((live) => live.length === new Set(ids).size),
              persistence("key ancestors")
            ),
      listKeys: (accountId) =>
        sql`SELECT * FROM ${t.keys} WHERE account_id = ${accountId} AND revoked_at IS NULL ORDER BY id`.pipe(
          Effect.flatMap(rows.key.all),
          persistence("key list")
        ),
      revokeKey: (accountId, id, at) =>
        Effect.gen(function*() {
          // the key first (its row lock waits for a derivation that holds it `FOR SHARE`), then, in a statement of
          // its own (a snapshot taken after that lock: a child committed meanwhile is seen), its descendants
          const revoked = yield* sql`UPDATE ${t.keys} SET revoked_at = ${at}
          WHERE id = ${id} AND account_id = ${accountId} AND revoked_at IS NULL RETURNING id`
          if (revoked.length !== 1) return false
          const listed = JSON.stringify(id)
          yield* sql`UPDATE ${t.keys} SET revoked_at = ${at}
          WHERE account_id = ${accountId} AND revoked_at IS NULL
            AND ${sql.literal(pg ? "strpos(ancestors, " : "instr(ancestors, ")}${listed}) > 0`
          return true
        }).pipe(persistence("key revoke")),
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
 * The SQL store of sealed idempotent answers on the `SqlClient` in context (SQLite or PostgreSQL), on the table
 * under `options.prefix` (default `mediagate_`), which the accounts migrations create. An invalid prefix fails with
 * a `PersistenceError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeIdempotencyStore = (
  options: SqlOptions = {}
): Effect.Effect<Idempotency.IdempotencyStore["Type"], PersistenceError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const prefix = yield* SqlStore.resolvePrefix(storeName, options)
    const { sql } = yield* SqlStore.storeClient(storeName)
    const responses = sql(tables(prefix).responses)
    const rows = decoders(prefix)
    const store: Idempotency.IdempotencyStore["Type"] = {
      find: (accountId, scope, keyHash) =>
        sql`SELECT * FROM ${responses} WHERE account_id = ${accountId} AND scope = ${scope} AND key_hash = ${keyHash}`
          .pipe(Effect.flatMap(rows.response.first), persistence("idempotency lookup")),
      insert: (record, expiredBefore) =>
        Effect.gen(function*() {
          // an expired record (created at or before the window's start) gives way
          yield* sql`DELETE FROM ${responses} WHERE account_id = ${record.accountId}
            AND scope = ${record.scope} AND key_hash = ${record.keyHash} AND created_at <= ${expiredBefore}`
          const encoded = yield* rows.response.encode(record)
          const inserted = yield* sql`INSERT INTO ${responses} ${
            sql.insert(encoded)
          } ON CONFLICT DO NOTHING RETURNING key_hash`
          return inserted.length === 1
        }).pipe(persistence("idempotency insert")),
      prune: (before) =>
        sql`DELETE FROM ${responses} WHERE created_at < ${before} RETURNING key_hash`.pipe(
          Effect.map((pruned) => pruned.length),
          persistence("idempotency prune")
        )
    }
    return store
  })

/**
 * The SQL stores (accounts and keys, idempotent answers) as a layer (runs the migrations), with their tables under
 * `options.prefix` (default `mediagate_`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStore = (options: SqlOptions = {}): Layer.Layer<
  AccountStore | Idempotency.IdempotencyStore,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> =>
  Layer.effectContext(Effect.gen(function*() {
    const store = yield* makeStore(options)
    const idempotency = yield* makeIdempotencyStore(options)
    return Context.make(AccountStore, store).pipe(Context.add(Idempotency.IdempotencyStore, idempotency))
  }))

/**
 * The accounts services on SQL: `KeyService` (with `KeyUsage` and `KeyCache`, configured by `options`) and the
 * stores (configured by `storage`: the table prefix). The `AdminService` (`AdminService.layer`) also needs the
 * engine's and the webhooks' operator ports: it is composed where every package meets.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: KeyService.Options = {},
  storage: SqlOptions = {}
): Layer.Layer<
  | Services.KeyService
  | KeyService.KeyUsage
  | KeyService.KeyCache
  | AccountStore
  | Idempotency.IdempotencyStore,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | BillingAccounts
> => KeyService.layer(options).pipe(Layer.provideMerge(layerStore(storage)))
