/**
 * The storage port of accounts and API keys, with the memory implementation. The SQL implementation lives in
 * `SqlAccounts.ts`; the services (`KeyService`, `AdminService`, `Bootstrap`) are written once against this port.
 *
 * Times are epoch milliseconds; money is integer micro-dollars. Only SHA-256 hashes of keys are stored. Each row is
 * a Schema: its type here, its columns in SQL.
 *
 * @since 0.1.0
 */
import { ApiKey } from "@mediagate/contract"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

const { column } = SqlRows
const time = SqlRows.Number
const optionalTime = Schema.NullOr(SqlRows.Number)

/**
 * An account row.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AccountRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  createdAt: column("created_at", time)
})
/**
 * An account row.
 *
 * @since 0.1.0
 * @category schemas
 */
export interface AccountRow extends Schema.Schema.Type<typeof AccountRow> {}

/**
 * An API key row (never the full key); in SQL, permissions and whitelist are JSON (the contract's Schemas).
 *
 * @since 0.1.0
 * @category schemas
 */
export const KeyRow = Schema.Struct({
  id: Schema.String,
  accountId: column("account_id", Schema.String),
  name: Schema.String,
  environment: SqlRows.literal(...ApiKey.Environment.literals),
  /** SHA-256 hex of the full key. */
  keyHash: column("key_hash", Schema.String),
  maskedKey: column("masked_key", Schema.String),
  permissions: Schema.parseJson(ApiKey.Permissions),
  ipWhitelist: column("ip_whitelist", Schema.parseJson(Schema.Array(Schema.String))),
  spendLimitMicros: column("spend_limit_micros", Schema.NullOr(SqlRows.Number)),
  expiresAt: column("expires_at", optionalTime),
  createdAt: column("created_at", time),
  revokedAt: column("revoked_at", optionalTime),
  lastUsedAt: column("last_used_at", optionalTime),
  /** The key that created this one through the API (null: a root, made by the admin API or the bootstrap). */
  parentId: column("parent_id", Schema.NullOr(Schema.String)),
  /** Every ancestor, root first and the parent last (JSON in SQL); empty for a root. */
  ancestors: Schema.parseJson(Schema.Array(Schema.String)),
  /** The key's requests per minute (null: the configured default). */
  requestsPerMinute: column("rate_limit_rpm", Schema.NullOr(SqlRows.Number)),
  /** The key's most active tasks at once (null: the configured default). */
  maxInFlightTasks: column("max_in_flight_tasks", Schema.NullOr(SqlRows.Number))
})
/**
 * An API key row (never the full key).
 *
 * @since 0.1.0
 * @category schemas
 */
export interface KeyRow extends Schema.Schema.Type<typeof KeyRow> {}

/**
 * Filters and keyset position of the account list.
 *
 * @since 0.1.0
 * @category models
 */
export interface AccountQuery {
  readonly search?: string | undefined
  readonly beforeId?: string | undefined
  readonly limit: number
}

/**
 * A page of accounts.
 *
 * @since 0.1.0
 * @category models
 */
export interface AccountPage {
  readonly items: ReadonlyArray<AccountRow>
  readonly hasMore: boolean
  /** Accounts matching the search (all pages). */
  readonly total: number
}

/**
 * Whether an account matches a search: its id or name starts with it, case-insensitively.
 *
 * @since 0.1.0
 * @category utils
 */
export const matchesSearch = (row: AccountRow, search: string | undefined): boolean => {
  if (search === undefined || search === "") return true
  const prefix = search.toLowerCase()
  return row.id.toLowerCase().startsWith(prefix) || row.name.toLowerCase().startsWith(prefix)
}

/**
 * Storage of accounts and keys. Every failure is a {@link PersistenceError}.
 *
 * @since 0.1.0
 * @category services
 */
export class AccountStore extends Context.Tag("@mediagate/accounts/AccountStore")<AccountStore, {
  /** Runs an effect in one transaction (SQL; the memory store runs it as is). */
  readonly transaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | PersistenceError, R>
  /** Serializes bootstraps of several processes (inside {@link transaction}; PostgreSQL: an advisory lock). */
  readonly lockBootstrap: Effect.Effect<void, PersistenceError>
  readonly hasAccounts: Effect.Effect<boolean, PersistenceError>
  readonly insertAccount: (row: AccountRow) => Effect.Effect<void, PersistenceError>
  readonly findAccount: (id: string) => Effect.Effect<Option.Option<AccountRow>, PersistenceError>
  readonly renameAccount: (id: string, name: string) => Effect.Effect<void, PersistenceError>
  /**
   * Operators: accounts newest first (id order: ids are time-sortable), below `beforeId`; `search` keeps those whose
   * id or name starts with it, case-insensitively (SQLite folds ASCII letters only).
   */
  readonly listAccounts: (query: AccountQuery) => Effect.Effect<AccountPage, PersistenceError>
  /** A key by id alone, of any account (operators). */
  readonly findKeyById: (id: string) => Effect.Effect<Option.Option<KeyRow>, PersistenceError>
  readonly insertKey: (row: KeyRow) => Effect.Effect<void, PersistenceError>
  /** The authentication hot path: one indexed lookup. */
  readonly keyByHash: (keyHash: string) => Effect.Effect<Option.Option<KeyRow>, PersistenceError>
  /** A key of an account by id (revoked or not). */
  readonly findKey: (accountId: string, id: string) => Effect.Effect<Option.Option<KeyRow>, PersistenceError>
  /**
   * Inside {@link transaction}, before a derived key is inserted: locks its ancestors' rows against a concurrent
   * revocation (PostgreSQL: `FOR SHARE`) and answers whether every one exists in the account, unrevoked.
   */
  readonly lockAncestors: (accountId: string, ids: ReadonlyArray<string>) => Effect.Effect<boolean, PersistenceError>
  /** Keys of an account that are not revoked, oldest first. */
  readonly listKeys: (accountId: string) => Effect.Effect<ReadonlyArray<KeyRow>, PersistenceError>
  /**
   * Revokes a key of the account and every unrevoked descendant (the keys that list it among their ancestors);
   * false when there is no such unrevoked key in that account. Inside {@link transaction}.
   */
  readonly revokeKey: (accountId: string, id: string, at: number) => Effect.Effect<boolean, PersistenceError>
  /** Records last use times in one batch (a time never moves backwards). */
  readonly touchKeys: (uses: ReadonlyMap<string, number>) => Effect.Effect<void, PersistenceError>
}>() {}

/**
 * The memory store (one process, no persistence).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): AccountStore["Type"] => {
  const accounts = new Map<string, AccountRow>()
  const keys = new Map<string, KeyRow>()
  const byHash = new Map<string, string>()
  return {
    transaction: (self) => self,
    lockBootstrap: Effect.void,
    hasAccounts: Effect.sync(() => accounts.size > 0),
    insertAccount: (row) =>
      Effect.suspend(() => {
        if (accounts.has(row.id)) return Effect.fail(new PersistenceError({ message: "accounts: duplicate id" }))
        accounts.set(row.id, row)
        return Effect.void
      }),
    findAccount: (id) => Effect.sync(() => Option.fromNullable(accounts.get(id))),
    renameAccount: (id, name) =>
      Effect.sync(() => {
        const row = accounts.get(id)
        if (row !== undefined) accounts.set(id, { ...row, name })
      }),
    listAccounts: (query) =>
      Effect.sync(() => {
        const matches = [...accounts.values()]
          .filter((row) => matchesSearch(row, query.search))
          .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        return MemoryStore.page(matches, query.beforeId, Math.max(0, Math.floor(query.limit)))
      }),
    findKeyById: (id) => Effect.sync(() => Option.fromNullable(keys.get(id))),
    insertKey: (row) =>
      Effect.suspend(() => {
        if (keys.has(row.id) || byHash.has(row.keyHash)) {
          return Effect.fail(new PersistenceError({ message: "api_keys: duplicate key" }))
        }
        keys.set(row.id, row)
        byHash.set(row.keyHash, row.id)
        return Effect.void
      }),
    keyByHash: (keyHash) =>
      Effect.sync(() => Option.flatMapNullable(Option.fromNullable(byHash.get(keyHash)), (id) => keys.get(id))),
    findKey: (accountId, id) =>
      Effect.sync(() => Option.filter(Option.fromNullable(keys.get(id)), (row) => row.accountId === accountId)),
    lockAncestors: (accountId, ids) =>
      Effect.sync(() =>
        ids.every((id) => {
          const row = keys.get(id)
          return row !== undefined && row.accountId === accountId && row.revokedAt === null
        })
      ),
    listKeys: (accountId) =>
      Effect.sync(() =>
        [...keys.values()]
          .filter((k) => k.accountId === accountId && k.revokedAt === null)
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      ),
    revokeKey: (accountId, id, at) =>
      Effect.sync(() => {
        const row = keys.get(id)
        if (row === undefined || row.accountId !== accountId || row.revokedAt !== null) return false
        keys.set(id, { ...row, revokedAt: at })
        for (const other of keys.values()) {
          if (other.accountId === accountId && other.revokedAt === null && other.ancestors.includes(id)) {
            keys.set(other.id, { ...other, revokedAt: at })
          }
        }
        return true
      }),
    touchKeys: (uses) =>
      Effect.sync(() => {
        for (const [id, at] of uses) {
          const row = keys.get(id)
          if (row !== undefined && (row.lastUsedAt === null || row.lastUsedAt < at)) {
            keys.set(id, { ...row, lastUsedAt: at })
          }
        }
      })
  }
}
