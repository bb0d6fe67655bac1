/**
 * The storage port of accounts and API keys, with the memory implementation. The SQL implementation lives in
 * `SqlAccounts.ts`; the services (`KeyService`, `AdminService`, `Bootstrap`) are written once against this port.
 *
 * Times are epoch milliseconds; money is integer micro-dollars. Only SHA-256 hashes of keys are stored.
 *
 * @since 0.1.0
 */
import type { ApiKey } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** An account row. */
export interface AccountRow {
  readonly id: string
  readonly name: string
  readonly createdAt: number
}

/** An API key row (never the full key). */
export interface KeyRow {
  readonly id: string
  readonly accountId: string
  readonly name: string
  readonly environment: ApiKey.Environment
  /** SHA-256 hex of the full key. */
  readonly keyHash: string
  readonly maskedKey: string
  readonly permissions: ApiKey.Permissions
  readonly ipWhitelist: ReadonlyArray<string>
  readonly spendLimitMicros: number | null
  readonly expiresAt: number | null
  readonly createdAt: number
  readonly revokedAt: number | null
  readonly lastUsedAt: number | null
}

/** Storage of accounts and keys. Every failure is a {@link PersistenceError}. */
export class AccountStore extends Context.Tag("@mediagate/accounts/AccountStore")<AccountStore, {
  /** Runs an effect in one transaction (SQL; the memory store runs it as is). */
  readonly transaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | PersistenceError, R>
  /** Serializes bootstraps of several processes (inside {@link transaction}; PostgreSQL: an advisory lock). */
  readonly lockBootstrap: Effect.Effect<void, PersistenceError>
  readonly hasAccounts: Effect.Effect<boolean, PersistenceError>
  readonly insertAccount: (row: AccountRow) => Effect.Effect<void, PersistenceError>
  readonly findAccount: (id: string) => Effect.Effect<Option.Option<AccountRow>, PersistenceError>
  readonly renameAccount: (id: string, name: string) => Effect.Effect<void, PersistenceError>
  readonly insertKey: (row: KeyRow) => Effect.Effect<void, PersistenceError>
  /** The authentication hot path: one indexed lookup. */
  readonly keyByHash: (keyHash: string) => Effect.Effect<Option.Option<KeyRow>, PersistenceError>
  /** Keys of an account that are not revoked, oldest first. */
  readonly listKeys: (accountId: string) => Effect.Effect<ReadonlyArray<KeyRow>, PersistenceError>
  /** Revokes a key of the account; false when there is no such unrevoked key in that account. */
  readonly revokeKey: (accountId: string, id: string, at: number) => Effect.Effect<boolean, PersistenceError>
  /** Records last use times in one batch (a time never moves backwards). */
  readonly touchKeys: (uses: ReadonlyMap<string, number>) => Effect.Effect<void, PersistenceError>
}>() {}

/** The memory store (one process, no persistence). */
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
      Effect.sync(() => {
        const id = byHash.get(keyHash)
        return Option.fromNullable(id === undefined ? undefined : keys.get(id))
      }),
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
