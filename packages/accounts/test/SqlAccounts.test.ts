import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { AccountStore } from "../src/AccountStore.js"
import * as KeyService from "../src/KeyService.js"
import * as SqlAccounts from "../src/SqlAccounts.js"
import { accountsSuite, Dump } from "./AccountsSuite.js"
import { pgAvailable, pgNotRunning, postgres, runPostgres, sqlite } from "./databases.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"
import * as FakeOperatorViews from "./FakeOperatorViews.js"

if (!runPostgres) console.warn(`${pgNotRunning}: its tests are skipped`)

/** Every row of the accounts tables, as text. */
const dump = Layer.effect(
  Dump,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    dump: () =>
      Effect.gen(function*() {
        const t = SqlAccounts.tables()
        const keys = yield* sql`SELECT * FROM ${sql(t.keys)}`
        const accounts = yield* sql`SELECT * FROM ${sql(t.accounts)}`
        const stored = yield* sql`SELECT * FROM ${sql(t.responses)}`
        return JSON.stringify({ accounts, keys, stored }, (_k, v) => typeof v === "bigint" ? String(v) : v)
      })
  }))
)

const backend = (database: () => Layer.Layer<SqlClient.SqlClient, unknown>) => () =>
  Layer.merge(SqlAccounts.layerStore(), dump).pipe(Layer.provide(database()))

accountsSuite("sqlite", backend(sqlite))
if (runPostgres) accountsSuite("postgres", backend(postgres))

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})

describe("SQL migrations", () => {
  it.effect("run once into their own table", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* SqlAccounts.migrate()
      yield* SqlAccounts.migrate()
      const rows = yield* sql<{ name: string }>`SELECT name FROM ${
        sql(SqlAccounts.migrationsTable())
      } ORDER BY migration_id`
      assert.deepStrictEqual(rows.map((r) => r.name), [
        "accounts_api_keys",
        "idempotent_responses",
        "api_key_tree",
        "api_key_rate_limits",
        "rate_windows"
      ])
    }).pipe(Effect.provide(sqlite())))
})

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlAccounts on ${name}`, () => {
    it.effect("a corrupt row is a PersistenceError naming its table and column, not a defect", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* AccountStore
        const t = SqlAccounts.tables()
        yield* store.insertAccount({ id: "acct_a", name: "Acme", createdAt: 1 })
        yield* store.insertKey({
          id: "key_a",
          accountId: "acct_a",
          name: "root",
          environment: "live",
          keyHash: "h1",
          maskedKey: "mg_live_…",
          permissions: { "tasks:read": true },
          ipWhitelist: [],
          spendLimitMicros: null,
          expiresAt: null,
          createdAt: 1,
          revokedAt: null,
          lastUsedAt: null,
          parentId: null,
          requestsPerMinute: null,
          maxInFlightTasks: null,
          ancestors: []
        })
        expect(Option.map(yield* store.keyByHash("h1"), (key) => key.permissions)).toEqual(
          Option.some({ "tasks:read": true })
        )
        yield* sql`UPDATE ${sql(t.keys)} SET permissions = ${`{"tasks:read":"yes"}`} WHERE id = 'key_a'`
        const permissions = yield* Effect.flip(store.keyByHash("h1"))
        assert.instanceOf(permissions, PersistenceError)
        expect(permissions.message).toBe(
          `accounts storage: key lookup failed: ${t.keys}.permissions.tasks:read: must be a boolean`
        )
        expect(permissions.cause).toMatchObject({ _tag: "RowError", table: t.keys, column: "permissions" })
        yield* sql`UPDATE ${sql(t.keys)} SET permissions = '{}', ip_whitelist = '[1]' WHERE id = 'key_a'`
        const whitelist = yield* Effect.flip(store.listKeys("acct_a"))
        expect(whitelist.message).toBe(
          `accounts storage: key list failed: ${t.keys}.ip_whitelist[0]: Expected string, actual 1`
        )
        expect(whitelist.cause).toMatchObject({ _tag: "RowError", table: t.keys, column: "ip_whitelist" })
      }).pipe(Effect.provide(Layer.provideMerge(SqlAccounts.layerStore(), database())), Effect.scoped))
  })
}

for (const [name, database] of databases) {
  describe(`the key cache on ${name}`, () => {
    it.scoped("a key changed in the database counts at once after invalidation, and otherwise within the TTL", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const admin = yield* Services.AdminService
        const keys = yield* Services.KeyService
        const cache = yield* KeyService.KeyCache
        const account = yield* admin.createAccount({ name: "Acme" })
        const created = yield* admin.createKey(account.id, { name: "k", permissions: { "tasks:read": true } })
        const permissions = Effect.map(
          keys.authenticate({ authorization: `Bearer ${created.key}`, clientAddress: "127.0.0.1" }),
          (principal) => principal.permissions
        )
        const setPermissions = (json: string) =>
          sql`UPDATE ${sql(SqlAccounts.tables().keys)} SET permissions = ${json} WHERE id = ${created.id}`
        expect(yield* permissions).toEqual({ "tasks:read": true })
        // an operator narrows the key's permissions in the database: this process reads them anew once told
        yield* setPermissions(`{"tasks:read":false}`)
        expect(yield* permissions).toEqual({ "tasks:read": true })
        yield* cache.invalidate(created.id)
        expect(yield* permissions).toEqual({ "tasks:read": false })
        // untold, it reads them when its row is 5 s old
        yield* setPermissions(`{}`)
        yield* TestClock.adjust("4999 millis")
        expect(yield* permissions).toEqual({ "tasks:read": false })
        yield* TestClock.adjust("1 millis")
        expect(yield* permissions).toEqual({})
      }).pipe(Effect.provide(
        FakeOperatorViews.withAdmin(SqlAccounts.layer({ cacheTtl: "5 seconds" })).pipe(
          Layer.provide(FakeBillingAccounts.layer),
          Layer.provideMerge(database())
        )
      )))
  })
}
