/**
 * The accounts conformance suite, run on every backend (memory, SQLite, PostgreSQL): authentication in the order of
 * decisions.md §5, whitelists, stored hashes only, batched lastUsedAt, key creation without escalation, list/revoke,
 * idempotent creation, the admin API and the bootstrap.
 */
import { assert, describe, it } from "@effect/vitest"
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import type { ApiKey, Security } from "@mediagate/contract"
import { Services } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { createHash } from "node:crypto"
import { AccountStore } from "../src/AccountStore.js"
import * as AdminService from "../src/AdminService.js"
import { bootstrap } from "../src/Bootstrap.js"
import * as Idempotency from "../src/Idempotency.js"
import * as KeyService from "../src/KeyService.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"
import * as FakeOperatorViews from "./FakeOperatorViews.js"

/** Everything a backend stores, as text (to prove what is not in it). */
export class Dump extends Context.Tag("test/Dump")<Dump, {
  readonly dump: (
    probe: { readonly accountId: string; readonly idempotencyKey?: string }
  ) => Effect.Effect<string, unknown>
}>() {}

/** A backend: fresh stores (and a dump of them) per test. */
export type Backend = () => Layer.Layer<AccountStore | Idempotency.IdempotencyStore | Dump, unknown>

/** Counts of store calls (hot-path statements). */
export class Calls extends Context.Tag("test/Calls")<Calls, Map<string, number>>() {}

const T0 = Date.parse("2026-11-21T00:00:00.000Z")
const hour = 3_600_000

/**
 * The backend's stores, the fake billing, and a store proxy that counts hot-path calls; the services on top (the key
 * service with `options`: no key cache unless they say so).
 */
const env = (backend: Backend, options: KeyService.Options = {}) => {
  const base = Layer.merge(backend(), FakeBillingAccounts.layer)
  const counted = Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<
      AccountStore | Idempotency.IdempotencyStore | Dump | BillingAccounts | FakeBillingAccounts.FakeBilling
    >()
    const store = Context.get(context, AccountStore)
    const calls = new Map<string, number>()
    const count = (name: string) => Effect.sync(() => calls.set(name, (calls.get(name) ?? 0) + 1))
    const proxy: AccountStore["Type"] = {
      ...store,
      keyByHash: (hash) => Effect.zipRight(count("keyByHash"), store.keyByHash(hash)),
      touchKeys: (uses) => Effect.zipRight(count("touchKeys"), store.touchKeys(uses))
    }
    return context.pipe(Context.add(AccountStore, proxy), Context.add(Calls, calls))
  })).pipe(Layer.provide(base))
  return Layer.mergeAll(
    KeyService.layer({ flushInterval: "1 hour", ...options }),
    AdminService.layer.pipe(Layer.provide(FakeOperatorViews.layer))
  ).pipe(Layer.provideMerge(counted))
}

type Env = Layer.Layer.Success<ReturnType<typeof env>>

const codeOf = <A, E extends { readonly code: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(self), (e) => e.code)
const messageOf = <A, E extends { readonly message: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(self), (e) => e.message)

const bearer = (key: string) => `Bearer ${key}`

/** An account with one key made by the admin API, and that key authenticated. */
const setup = (body: Partial<ApiKey.ApiKeyCreate> = {}, clientAddress = "127.0.0.1") =>
  Effect.gen(function*() {
    const admin = yield* Services.AdminService
    const keys = yield* Services.KeyService
    const account = yield* admin.createAccount({ name: "Acme", balance: 10 })
    const created = yield* admin.createKey(account.id, { name: "root", ...body })
    const principal = yield* keys.authenticate({ authorization: bearer(created.key), clientAddress })
    return { account, created, principal, keys, admin }
  })

/** Runs the suite on one backend. */
export const accountsSuite = (name: string, backend: Backend) => {
  const test = (title: string, body: Effect.Effect<void, unknown, Env>) =>
    it.effect(title, () => Effect.zipRight(TestClock.setTime(T0), Effect.provide(body, env(backend))), 20_000)
  /** A test with the key cache on (5 s, at most 3 keys). */
  const cachedTest = (title: string, body: Effect.Effect<void, unknown, Env | Scope.Scope>) =>
    it.scoped(title, () =>
      Effect.zipRight(
        TestClock.setTime(T0),
        Effect.provide(body, env(backend, { cacheTtl: "5 seconds", cacheSize: 3 }))
      ), 20_000)

  describe(`accounts (${name})`, () => {
    describe("authentication", () => {
      test(
        "a valid key answers its principal",
        Effect.gen(function*() {
          const { account, created, principal } = yield* setup({
            permissions: { "tasks:read": true },
            spendLimit: 5,
            expiresAt: new Date(T0 + hour)
          })
          assert.match(created.key, /^mg_live_[A-Za-z0-9]{32}$/)
          assert.deepStrictEqual(
            principal,
            {
              accountId: account.id,
              keyId: created.id,
              environment: "live",
              permissions: { "tasks:read": true },
              spendLimitMicros: 5_000_000,
              spentMicros: 0,
              expiresAt: new Date(T0 + hour),
              clientAddress: "127.0.0.1"
            } satisfies Security.Principal
          )
          assert.match(created.id, /^key_[0-9A-HJKMNP-TV-Z]{26}$/)
          assert.match(account.id, /^acct_[0-9A-HJKMNP-TV-Z]{26}$/)
        })
      )

      test(
        "missing, empty, malformed and unknown credentials",
        Effect.gen(function*() {
          const { created, keys } = yield* setup()
          const auth = (authorization: string | undefined) =>
            codeOf(keys.authenticate({ authorization, clientAddress: "1.2.3.4" }))
          assert.strictEqual(yield* auth(undefined), "AUTH_REQUIRED")
          assert.strictEqual(yield* auth(""), "AUTH_REQUIRED")
          assert.strictEqual(yield* auth("   "), "AUTH_REQUIRED")
          assert.strictEqual(yield* auth(`Basic ${created.key}`), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth(created.key), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth("Bearer"), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth(`Bearer ${created.key.slice(0, -1)}`), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth(`Bearer ${created.key}x`), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth(`Bearer ${created.key.replace("live", "prod")}`), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth(`Bearer ${created.key.slice(0, -1)}!`), "AUTH_INVALID_TOKEN")
          // well-formed but unknown (same random part, other environment; and a fresh one)
          assert.strictEqual(yield* auth(bearer(created.key.replace("mg_live_", "mg_test_"))), "AUTH_INVALID_TOKEN")
          assert.strictEqual(yield* auth(bearer(`mg_live_${"a".repeat(32)}`)), "AUTH_INVALID_TOKEN")
          // the scheme is case-insensitive and surrounding blanks are ignored
          const ok = yield* keys.authenticate({ authorization: `  bearer ${created.key} `, clientAddress: "1.2.3.4" })
          assert.strictEqual(ok.keyId, created.id)
        })
      )

      test(
        "revoked, expired, IP: in that order",
        Effect.gen(function*() {
          const { account, admin, keys, principal } = yield* setup()
          const make = (body: Partial<ApiKey.ApiKeyCreate>) => admin.createKey(account.id, { name: "k", ...body })
          const both = yield* make({ expiresAt: new Date(T0 + 1000) })
          const expiring = yield* make({ expiresAt: new Date(T0 + 1000) })
          const expiringLocked = yield* make({ expiresAt: new Date(T0 + 1000), ipWhitelist: ["10.0.0.1"] })
          const revokedLocked = yield* make({ ipWhitelist: ["10.0.0.1"] })
          yield* keys.revoke(principal, both.id)
          yield* keys.revoke(principal, revokedLocked.id)
          yield* TestClock.adjust(1000) // now == expiresAt: expired
          const auth = (key: string, clientAddress = "192.0.2.1") =>
            keys.authenticate({ authorization: bearer(key), clientAddress })
          assert.strictEqual(yield* codeOf(auth(both.key)), "KEY_REVOKED")
          assert.strictEqual(yield* codeOf(auth(revokedLocked.key)), "KEY_REVOKED")
          assert.strictEqual(yield* codeOf(auth(expiring.key)), "AUTH_TOKEN_EXPIRED")
          assert.strictEqual(yield* codeOf(auth(expiringLocked.key)), "AUTH_TOKEN_EXPIRED")
          assert.strictEqual(yield* messageOf(auth(expiring.key)), "API key has expired")
        })
      )

      test(
        "a key is valid until its expiry and revocation takes effect at once",
        Effect.gen(function*() {
          const { account, admin, keys, principal } = yield* setup()
          const key = yield* admin.createKey(account.id, { name: "k", expiresAt: new Date(T0 + 1000) })
          const auth = keys.authenticate({ authorization: bearer(key.key), clientAddress: undefined })
          yield* TestClock.adjust(999)
          assert.strictEqual((yield* auth).keyId, key.id)
          yield* keys.revoke(principal, key.id)
          assert.strictEqual(yield* codeOf(auth), "KEY_REVOKED")
        })
      )

      test(
        "IP whitelist: addresses, CIDR, IPv6, IPv4-mapped",
        Effect.gen(function*() {
          const { account, admin, keys } = yield* setup()
          const key = yield* admin.createKey(account.id, {
            name: "locked",
            ipWhitelist: ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1", "::ffff:172.16.0.0/112"]
          })
          const auth = (clientAddress: string | undefined) =>
            keys.authenticate({ authorization: bearer(key.key), clientAddress })
          for (
            const allowed of [
              "10.1.2.3",
              "::ffff:10.1.2.3",
              "192.0.2.7",
              "::ffff:192.0.2.7",
              "2001:db8::1",
              "2001:DB8:0:0:0:0:0:ff",
              "::1",
              "172.16.9.9",
              "::ffff:172.16.9.9"
            ]
          ) {
            assert.strictEqual((yield* auth(allowed)).clientAddress, allowed, allowed)
          }
          for (
            const denied of [
              "11.0.0.1",
              "192.0.2.8",
              "::ffff:192.0.2.8",
              "2001:db9::1",
              "::2",
              "172.17.0.1",
              "garbage",
              undefined
            ]
          ) {
            const error = yield* Effect.flip(auth(denied))
            assert.strictEqual(error.code, "KEY_PERMISSION_DENIED", String(denied))
            assert.strictEqual(error.message, "IP address not allowed for this key")
          }
          // an IPv4 entry matches the mapped form and the reverse
          const mapped = yield* admin.createKey(account.id, { name: "mapped", ipWhitelist: ["::ffff:198.51.100.4"] })
          const mappedAuth = yield* keys.authenticate({
            authorization: bearer(mapped.key),
            clientAddress: "198.51.100.4"
          })
          assert.strictEqual(mappedAuth.keyId, mapped.id)
          // empty whitelist: any address, also an unknown one
          const open = yield* admin.createKey(account.id, { name: "open", ipWhitelist: [] })
          assert.strictEqual(
            (yield* keys.authenticate({ authorization: bearer(open.key), clientAddress: undefined })).keyId,
            open.id
          )
        })
      )

      test(
        "one store read per request, lastUsedAt written in batches",
        Effect.gen(function*() {
          const { account, admin, created, keys, principal } = yield* setup()
          const second = yield* admin.createKey(account.id, { name: "second" })
          const calls = yield* Calls
          const usage = yield* KeyService.KeyUsage
          calls.clear()
          for (let i = 0; i < 5; i++) {
            yield* keys.authenticate({ authorization: bearer(created.key), clientAddress: "127.0.0.1" })
            yield* keys.authenticate({ authorization: bearer(second.key), clientAddress: "127.0.0.1" })
            yield* TestClock.adjust(100)
          }
          assert.strictEqual(calls.get("keyByHash"), 10)
          assert.strictEqual(calls.get("touchKeys"), undefined)
          assert.strictEqual(yield* usage.pending, 2)
          const store = yield* AccountStore
          const before = yield* store.listKeys(account.id)
          assert.isTrue(before.every((k) => k.lastUsedAt === null))
          // the periodic flush (every hour in these tests; 10 s by default) writes both keys in one batch
          yield* TestClock.adjust("1 hour")
          yield* Effect.yieldNow()
          assert.strictEqual(calls.get("touchKeys"), 1)
          assert.strictEqual(yield* usage.pending, 0)
          const after = yield* store.listKeys(account.id)
          assert.deepStrictEqual(after.map((k) => k.lastUsedAt), [T0 + 400, T0 + 400])
          const listed = yield* keys.list(principal)
          assert.deepStrictEqual(listed.map((k) => k.lastUsedAt), [
            new Date(T0 + 400).toISOString(),
            new Date(T0 + 400).toISOString()
          ])
          // an explicit flush with nothing pending writes nothing
          yield* usage.flush
          assert.strictEqual(calls.get("touchKeys"), 1)
        })
      )

      test(
        "buffered uses show in the list before they are flushed",
        Effect.gen(function*() {
          const { created, keys, principal } = yield* setup()
          yield* TestClock.adjust(5000)
          yield* keys.authenticate({ authorization: bearer(created.key), clientAddress: "127.0.0.1" })
          const listed = yield* keys.list(principal)
          assert.strictEqual(listed[0]!.lastUsedAt, new Date(T0 + 5000).toISOString())
        })
      )
    })

    describe("storage", () => {
      test(
        "only hashes of keys are stored",
        Effect.gen(function*() {
          const { account, created } = yield* setup()
          const { dump } = yield* Dump
          const text = yield* dump({ accountId: account.id })
          const random = created.key.slice("mg_live_".length)
          assert.notInclude(text, random)
          assert.include(text, createHash("sha256").update(created.key).digest("hex"))
          assert.include(text, created.maskedKey)
        })
      )
    })

    describe("key creation", () => {
      test(
        "answers the record and the full key once; list never shows the key",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup()
          const created = yield* keys.create(principal, {
            name: "ci",
            spendLimit: 2.5,
            expiresAt: new Date(T0 + hour),
            permissions: { "video:create": true, providers: ["vendor1"] },
            ipWhitelist: ["10.0.0.0/8"]
          }, undefined)
          assert.deepStrictEqual(Object.keys(created).sort(), [
            "createdAt",
            "environment",
            "expiresAt",
            "id",
            "ipWhitelist",
            "key",
            "lastUsedAt",
            "maskedKey",
            "name",
            "permissions",
            "rateLimit",
            "spendLimit",
            "spent"
          ])
          assert.strictEqual(created.environment, "live")
          assert.strictEqual(created.spendLimit, 2.5)
          assert.strictEqual(created.spent, 0)
          assert.strictEqual(created.expiresAt, new Date(T0 + hour).toISOString())
          assert.strictEqual(created.createdAt, new Date(T0).toISOString())
          assert.strictEqual(created.maskedKey, `mg_live_${created.key.slice(8, 12)}…${created.key.slice(-4)}`)
          const billing = yield* FakeBillingAccounts.FakeBilling
          assert.deepStrictEqual(billing.registered.get(created.id), {
            accountId: principal.accountId,
            spendLimitMicros: 2_500_000
          })
          const listed = yield* keys.list(principal)
          assert.strictEqual(listed.length, 2)
          const { key: _key, ...record } = created
          assert.deepStrictEqual(listed[1], record)
          assert.isFalse("key" in listed[1]!)
        })
      )

      test(
        "permissions must lie within the caller's",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({
            permissions: { "video:create": true, "api-keys:write": true, providers: ["vendor1", "vendor2"] }
          })
          const create = (permissions: ApiKey.Permissions | undefined) =>
            keys.create(principal, { name: "k", ...(permissions === undefined ? {} : { permissions }) }, undefined)
          const denied = yield* Effect.flip(create({ "image:create": true }))
          assert.strictEqual(denied.code, "KEY_PERMISSION_DENIED")
          assert.include(denied.message, "permissions")
          assert.strictEqual(yield* codeOf(create({})), "KEY_PERMISSION_DENIED") // {} is full access
          assert.strictEqual(
            yield* codeOf(create({ "video:create": true, providers: ["vendor3"] })),
            "KEY_PERMISSION_DENIED"
          )
          assert.strictEqual(yield* codeOf(create({ "video:create": true })), "KEY_PERMISSION_DENIED") // all providers
          const ok = yield* create({ "video:create": true, providers: ["vendor2"] })
          assert.deepStrictEqual(ok.permissions, { "video:create": true, providers: ["vendor2"] })
          // absent: the caller's own permissions
          const inherited = yield* create(undefined)
          assert.deepStrictEqual(inherited.permissions, principal.permissions)
        })
      )

      test(
        "spendLimit at most the caller's remaining limit",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ spendLimit: 10 })
          const billing = yield* FakeBillingAccounts.FakeBilling
          billing.setSpent(principal.keyId, 7_500_000)
          const create = (spendLimit: number | null | undefined) =>
            keys.create(principal, { name: "k", ...(spendLimit === undefined ? {} : { spendLimit }) }, undefined)
          const denied = yield* Effect.flip(create(2.6))
          assert.strictEqual(denied.code, "KEY_PERMISSION_DENIED")
          assert.strictEqual(
            denied.message,
            "spendLimit: must be at most 2.5 (the remaining spend limit of the calling key)"
          )
          assert.strictEqual(yield* codeOf(create(null)), "KEY_PERMISSION_DENIED") // no limit is more than 2.5
          assert.strictEqual((yield* create(2.5)).spendLimit, 2.5)
          assert.strictEqual((yield* create(undefined)).spendLimit, 2.5) // absent: the remaining limit
          billing.setSpent(principal.keyId, 12_000_000)
          assert.strictEqual((yield* create(0)).spendLimit, 0)
          assert.strictEqual(yield* codeOf(create(0.01)), "KEY_PERMISSION_DENIED")
        })
      )

      test(
        "a caller without a spend limit may set any",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup()
          assert.strictEqual(
            (yield* keys.create(principal, { name: "k", spendLimit: 1_000_000 }, undefined)).spendLimit,
            1_000_000
          )
          assert.strictEqual((yield* keys.create(principal, { name: "k" }, undefined)).spendLimit, null)
        })
      )

      test(
        "expiresAt not after the caller's and not in the past",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ expiresAt: new Date(T0 + hour) })
          const create = (expiresAt: Date | null | undefined) =>
            keys.create(principal, { name: "k", ...(expiresAt === undefined ? {} : { expiresAt }) }, undefined)
          const later = yield* Effect.flip(create(new Date(T0 + hour + 1)))
          assert.strictEqual(later.code, "KEY_PERMISSION_DENIED")
          assert.include(later.message, "expiresAt")
          assert.strictEqual(yield* codeOf(create(null)), "KEY_PERMISSION_DENIED") // never expiring is later
          const past = yield* Effect.flip(create(new Date(T0 - 1)))
          assert.strictEqual(past.code, "VALIDATION_ERROR")
          assert.strictEqual(past.message, "expiresAt: must be in the future")
          assert.strictEqual(yield* codeOf(create(new Date(T0))), "VALIDATION_ERROR")
          assert.strictEqual((yield* create(new Date(T0 + hour))).expiresAt, new Date(T0 + hour).toISOString())
          assert.strictEqual((yield* create(undefined)).expiresAt, new Date(T0 + hour).toISOString())
          // also for a caller that never expires, a past date is refused
          const free = yield* setup()
          assert.strictEqual(
            yield* codeOf(free.keys.create(free.principal, { name: "k", expiresAt: new Date(T0 - hour) }, undefined)),
            "VALIDATION_ERROR"
          )
        })
      )

      test(
        "test keys create only test keys; the environment defaults to the caller's",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ environment: "test" })
          assert.strictEqual(principal.environment, "test")
          const denied = yield* Effect.flip(keys.create(principal, { name: "k", environment: "live" }, undefined))
          assert.strictEqual(denied.code, "KEY_PERMISSION_DENIED")
          assert.include(denied.message, "environment")
          const created = yield* keys.create(principal, { name: "k" }, undefined)
          assert.strictEqual(created.environment, "test")
          assert.match(created.key, /^mg_test_[A-Za-z0-9]{32}$/)
          const live = yield* setup()
          assert.strictEqual((yield* live.keys.create(live.principal, { name: "k" }, undefined)).environment, "live")
          assert.strictEqual(
            (yield* live.keys.create(live.principal, { name: "k", environment: "test" }, undefined)).environment,
            "test"
          )
        })
      )
    })

    describe("key cache", () => {
      cachedTest(
        "a key's row is read once per TTL; expiry and the whitelist are judged on every request",
        Effect.gen(function*() {
          const { account, admin, created, keys } = yield* setup()
          const calls = yield* Calls
          const cache = yield* KeyService.KeyCache
          const locked = yield* admin.createKey(account.id, {
            name: "locked",
            ipWhitelist: ["10.0.0.0/8"],
            expiresAt: new Date(T0 + 7000)
          })
          const auth = (key: string, clientAddress = "10.1.2.3") =>
            keys.authenticate({ authorization: bearer(key), clientAddress })
          calls.clear()
          // `created` was read (and cached) by the setup, at T0 too
          for (let i = 0; i < 5; i++) {
            assert.strictEqual((yield* auth(created.key)).keyId, created.id)
            assert.strictEqual((yield* auth(locked.key)).keyId, locked.id)
            assert.strictEqual(yield* codeOf(auth(locked.key, "192.0.2.1")), "KEY_PERMISSION_DENIED")
            yield* TestClock.adjust(999)
          }
          assert.strictEqual(calls.get("keyByHash"), 1)
          assert.strictEqual(yield* cache.size, 2)
          // 5 s after the first reads: both are read again
          yield* TestClock.adjust(5)
          assert.strictEqual((yield* auth(created.key)).keyId, created.id)
          assert.strictEqual((yield* auth(locked.key)).keyId, locked.id)
          assert.strictEqual(calls.get("keyByHash"), 3)
          // the expiry comes while the row is cached
          yield* TestClock.adjust(2000)
          assert.strictEqual(yield* codeOf(auth(locked.key)), "AUTH_TOKEN_EXPIRED")
          assert.strictEqual(calls.get("keyByHash"), 3)
          // unknown keys are never cached
          for (let i = 0; i < 3; i++) {
            assert.strictEqual(yield* codeOf(auth(`mg_live_${"b".repeat(32)}`)), "AUTH_INVALID_TOKEN")
          }
          assert.strictEqual(calls.get("keyByHash"), 6)
        })
      )

      cachedTest(
        "a revocation through this process takes effect at once",
        Effect.gen(function*() {
          const { account, admin, keys, principal } = yield* setup()
          const other = yield* admin.createKey(account.id, { name: "other" })
          const auth = keys.authenticate({ authorization: bearer(other.key), clientAddress: "127.0.0.1" })
          assert.strictEqual((yield* auth).keyId, other.id)
          yield* keys.revoke(principal, other.id)
          assert.strictEqual(yield* codeOf(auth), "KEY_REVOKED")
        })
      )

      cachedTest(
        "revoking a key refuses its cached descendants at once",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup()
          const child = yield* keys.create(principal, { name: "child" }, undefined)
          const childPrincipal = yield* keys.authenticate({
            authorization: bearer(child.key),
            clientAddress: "127.0.0.1"
          })
          const grandchild = yield* keys.create(childPrincipal, { name: "grandchild" }, undefined)
          const auth = (key: string) => keys.authenticate({ authorization: bearer(key), clientAddress: "127.0.0.1" })
          assert.strictEqual((yield* auth(grandchild.key)).keyId, grandchild.id)
          assert.strictEqual((yield* auth(child.key)).keyId, child.id)
          yield* keys.revoke(principal, child.id)
          assert.strictEqual(yield* codeOf(auth(child.key)), "KEY_REVOKED")
          assert.strictEqual(yield* codeOf(auth(grandchild.key)), "KEY_REVOKED")
        })
      )

      cachedTest(
        "another process sees a revocation within the TTL",
        Effect.gen(function*() {
          const { account, admin, keys: here, principal } = yield* setup()
          // a second process on the same stores, with its own cache
          const there = (yield* KeyService.make({ flushInterval: "1 hour", cacheTtl: "5 seconds" })).service
          const key = yield* admin.createKey(account.id, { name: "shared" })
          const auth = (keys: typeof here) =>
            keys.authenticate({ authorization: bearer(key.key), clientAddress: "127.0.0.1" })
          assert.strictEqual((yield* auth(here)).keyId, key.id)
          yield* TestClock.adjust(1000)
          assert.strictEqual((yield* auth(there)).keyId, key.id)
          yield* here.revoke(principal, key.id)
          assert.strictEqual(yield* codeOf(auth(here)), "KEY_REVOKED")
          // the other process answers from its cache until its row (read at T0 + 1 s) is 5 s old, then reads the
          // revocation
          yield* TestClock.adjust(4999)
          assert.strictEqual((yield* auth(there)).keyId, key.id)
          yield* TestClock.adjust(1)
          assert.strictEqual(yield* codeOf(auth(there)), "KEY_REVOKED")
        })
      )

      cachedTest(
        "invalidation drops a key; the cache holds at most cacheSize keys",
        Effect.gen(function*() {
          const { account, admin, created, keys } = yield* setup()
          const calls = yield* Calls
          const cache = yield* KeyService.KeyCache
          const more = yield* Effect.forEach([1, 2, 3], (i) => admin.createKey(account.id, { name: `k${i}` }))
          const auth = (key: string) => keys.authenticate({ authorization: bearer(key), clientAddress: "127.0.0.1" })
          calls.clear()
          yield* cache.invalidate(created.id)
          assert.strictEqual(yield* cache.size, 0)
          yield* auth(created.key)
          yield* auth(created.key)
          assert.strictEqual(calls.get("keyByHash"), 1)
          for (const key of more) yield* auth(key.key)
          // 4 keys through a cache of 3: the oldest made room
          assert.strictEqual(yield* cache.size, 3)
          yield* auth(created.key)
          assert.strictEqual(calls.get("keyByHash"), 5)
          yield* cache.invalidateAll
          assert.strictEqual(yield* cache.size, 0)
        })
      )
    })

    describe("key tree", () => {
      const authAs = (key: string, clientAddress = "127.0.0.1") =>
        Effect.flatMap(Services.KeyService, (keys) => keys.authenticate({ authorization: bearer(key), clientAddress }))

      test(
        "a derived key records its parent and ancestors; the admin API makes roots",
        Effect.gen(function*() {
          const { created, keys, principal } = yield* setup()
          const store = yield* AccountStore
          const child = yield* keys.create(principal, { name: "child" }, undefined)
          const grandchild = yield* keys.create(yield* authAs(child.key), { name: "grandchild" }, undefined)
          const row = (id: string) => Effect.map(store.findKey(principal.accountId, id), Option.getOrThrow)
          const root = yield* row(created.id)
          assert.strictEqual(root.parentId, null)
          assert.deepStrictEqual(root.ancestors, [])
          assert.strictEqual((yield* row(child.id)).parentId, created.id)
          assert.deepStrictEqual((yield* row(grandchild.id)).ancestors, [created.id, child.id])
          assert.strictEqual((yield* row(grandchild.id)).parentId, child.id)
          assert.isTrue(Option.isNone(yield* store.findKey("acct_other", child.id)))
        })
      )

      test(
        "an IP whitelist is inherited or narrowed, never widened",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ ipWhitelist: ["10.0.0.0/8", "2001:db8::/32"] }, "10.1.2.3")
          const create = (ipWhitelist: ReadonlyArray<string> | undefined) =>
            keys.create(principal, { name: "k", ...(ipWhitelist === undefined ? {} : { ipWhitelist }) }, undefined)
          // absent: the caller's own whitelist
          const inherited = yield* create(undefined)
          assert.deepStrictEqual(inherited.ipWhitelist, ["10.0.0.0/8", "2001:db8::/32"])
          assert.strictEqual(yield* codeOf(authAs(inherited.key, "192.0.2.1")), "KEY_PERMISSION_DENIED")
          // narrower: fine
          assert.deepStrictEqual((yield* create(["10.1.0.0/16", "10.2.3.4", "2001:db8:1::/48"])).ipWhitelist, [
            "10.1.0.0/16",
            "10.2.3.4",
            "2001:db8:1::/48"
          ])
          // wider or elsewhere: refused; an empty whitelist allows any address
          for (
            const wider of [[], ["0.0.0.0/0"], ["10.0.0.0/7"], ["11.0.0.1"], ["10.1.0.0/16", "192.0.2.1"], [
              "2001:db9::1"
            ]]
          ) {
            const denied = yield* Effect.flip(create(wider))
            assert.strictEqual(denied.code, "KEY_PERMISSION_DENIED", JSON.stringify(wider))
            assert.strictEqual(denied.message, "ipWhitelist: must be within the IP whitelist of the calling key")
          }
          // a caller without a whitelist may set any, or none
          const free = yield* setup()
          assert.deepStrictEqual((yield* free.keys.create(free.principal, { name: "k" }, undefined)).ipWhitelist, [])
          assert.deepStrictEqual(
            (yield* free.keys.create(free.principal, { name: "k", ipWhitelist: ["192.0.2.0/24"] }, undefined))
              .ipWhitelist,
            ["192.0.2.0/24"]
          )
        })
      )

      test(
        "revoking a key revokes its descendants, not its ancestors nor its siblings",
        Effect.gen(function*() {
          const { created, keys, principal } = yield* setup()
          const child = yield* keys.create(principal, { name: "child" }, undefined)
          const sibling = yield* keys.create(principal, { name: "sibling" }, undefined)
          const childPrincipal = yield* authAs(child.key)
          const grandchild = yield* keys.create(childPrincipal, { name: "grandchild" }, undefined)
          const great = yield* keys.create(yield* authAs(grandchild.key), { name: "great" }, undefined)
          yield* keys.revoke(principal, child.id)
          for (const key of [child, grandchild, great]) {
            assert.strictEqual(yield* codeOf(authAs(key.key)), "KEY_REVOKED")
          }
          assert.strictEqual((yield* authAs(created.key)).keyId, created.id)
          assert.strictEqual((yield* authAs(sibling.key)).keyId, sibling.id)
          assert.deepStrictEqual((yield* keys.list(principal)).map((k) => k.id), [created.id, sibling.id])
          // a descendant is already revoked
          assert.strictEqual(yield* codeOf(keys.revoke(principal, grandchild.id)), "API_KEY_NOT_FOUND")
          // a principal authenticated before the revocation (another node's cache) derives nothing more
          const late = yield* Effect.flip(keys.create(childPrincipal, { name: "late" }, undefined))
          assert.strictEqual(late.code, "KEY_PERMISSION_DENIED")
          assert.strictEqual((yield* keys.list(principal)).length, 2)
        })
      )

      test(
        "a derived key expires with its ancestors",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ expiresAt: new Date(T0 + hour) })
          const child = yield* keys.create(principal, { name: "child" }, undefined)
          const grandchild = yield* keys.create(yield* authAs(child.key), { name: "grandchild" }, undefined)
          assert.strictEqual(grandchild.expiresAt, new Date(T0 + hour).toISOString())
          yield* TestClock.adjust(hour)
          assert.strictEqual(yield* codeOf(authAs(grandchild.key)), "AUTH_TOKEN_EXPIRED")
        })
      )

      test(
        `a key ${KeyService.maxAncestors + 1} levels below its root derives no key`,
        Effect.gen(function*() {
          const root = yield* setup()
          const keys = root.keys
          let principal = root.principal
          for (let depth = 1; depth <= KeyService.maxAncestors; depth++) {
            principal = yield* authAs((yield* keys.create(principal, { name: `level ${depth}` }, undefined)).key)
          }
          const denied = yield* Effect.flip(keys.create(principal, { name: "too deep" }, undefined))
          assert.strictEqual(denied.code, "KEY_PERMISSION_DENIED")
          assert.include(denied.message, "levels below its root")
        })
      )
    })

    describe("list and revoke", () => {
      test(
        "revoked keys leave the list; other accounts' keys are not found",
        Effect.gen(function*() {
          const mine = yield* setup()
          const other = yield* setup()
          const extra = yield* mine.keys.create(mine.principal, { name: "extra" }, undefined)
          assert.deepStrictEqual((yield* mine.keys.list(mine.principal)).map((k) => k.id), [mine.created.id, extra.id])
          assert.deepStrictEqual((yield* other.keys.list(other.principal)).map((k) => k.id), [other.created.id])
          const notFound = yield* Effect.flip(other.keys.revoke(other.principal, extra.id))
          assert.strictEqual(notFound.code, "API_KEY_NOT_FOUND")
          assert.strictEqual(notFound.message, `API key ${extra.id} not found`)
          assert.strictEqual(yield* codeOf(mine.keys.revoke(mine.principal, "key_unknown")), "API_KEY_NOT_FOUND")
          // the other account's attempt changed nothing
          assert.strictEqual(
            (yield* mine.keys.authenticate({ authorization: bearer(extra.key), clientAddress: undefined })).keyId,
            extra.id
          )
          assert.deepStrictEqual(yield* mine.keys.revoke(mine.principal, extra.id), { id: extra.id, deleted: true })
          assert.deepStrictEqual((yield* mine.keys.list(mine.principal)).map((k) => k.id), [mine.created.id])
          assert.strictEqual(yield* codeOf(mine.keys.revoke(mine.principal, extra.id)), "API_KEY_NOT_FOUND")
          assert.strictEqual(
            yield* codeOf(mine.keys.authenticate({ authorization: bearer(extra.key), clientAddress: undefined })),
            "KEY_REVOKED"
          )
        })
      )

      test(
        "list shows spend from billing",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ spendLimit: 3 })
          const billing = yield* FakeBillingAccounts.FakeBilling
          billing.setSpent(principal.keyId, 1_250_000)
          const [record] = yield* keys.list(principal)
          assert.strictEqual(record!.spent, 1.25)
          assert.strictEqual(record!.spendLimit, 3)
        })
      )
    })

    describe("idempotent creation", () => {
      test(
        "same key and body replays the answer, another body is refused",
        Effect.gen(function*() {
          const { account, keys, principal } = yield* setup()
          const body = { name: "ci", permissions: { "tasks:read": true }, expiresAt: new Date(T0 + 48 * hour) }
          const first = yield* keys.create(principal, body, "idem-1")
          yield* TestClock.adjust(hour)
          const again = yield* keys.create(principal, { ...body, permissions: { "tasks:read": true } }, "idem-1")
          assert.deepStrictEqual(again, first)
          assert.strictEqual((yield* keys.list(principal)).length, 2)
          const reused = yield* Effect.flip(keys.create(principal, { ...body, name: "other" }, "idem-1"))
          assert.strictEqual(reused.code, "IDEMPOTENCY_KEY_REUSED")
          // another Idempotency-Key creates another key
          const second = yield* keys.create(principal, body, "idem-2")
          assert.notStrictEqual(second.id, first.id)
          // the stored answer does not hold the key (nor the Idempotency-Key) in plain text
          const { dump } = yield* Dump
          const text = yield* dump({ accountId: account.id, idempotencyKey: "idem-1" })
          const stored = JSON.stringify(JSON.parse(text).stored)
          assert.include(stored, Idempotency.hashKey("idem-1"))
          assert.include(stored, "v1.")
          assert.notInclude(text, first.key.slice(8))
          assert.notInclude(stored, first.id) // the whole answer is sealed
          assert.notInclude(stored, first.maskedKey)
          assert.notInclude(text, "idem-1")
        })
      )

      test(
        "the replay window is 24 hours; accounts are separate",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup()
          const other = yield* setup()
          const first = yield* keys.create(principal, { name: "ci" }, "idem")
          const theirs = yield* other.keys.create(other.principal, { name: "ci" }, "idem")
          assert.notStrictEqual(theirs.id, first.id)
          assert.strictEqual(theirs.id, (yield* other.keys.create(other.principal, { name: "ci" }, "idem")).id)
          yield* TestClock.adjust(24 * hour)
          const later = yield* keys.create(principal, { name: "ci" }, "idem")
          assert.notStrictEqual(later.id, first.id)
          assert.strictEqual((yield* keys.create(principal, { name: "ci" }, "idem")).id, later.id)
        })
      )

      test(
        "a replay is answered only to the key that made the request; another key's request is its own",
        Effect.gen(function*() {
          const { account, admin, keys, principal } = yield* setup()
          const body = { name: "deploy" }
          const original = yield* keys.create(principal, body, "X")
          assert.strictEqual(original.environment, "live")
          const authAs = (key: string, clientAddress = "127.0.0.1") =>
            keys.authenticate({ authorization: bearer(key), clientAddress })
          // a test key of the account, the same body and Idempotency-Key: a test key of its own, never the live one
          const tester = yield* authAs(
            (yield* admin.createKey(account.id, {
              name: "tester",
              environment: "test",
              permissions: { "api-keys:write": true }
            })).key
          )
          const theirs = yield* keys.create(tester, body, "X")
          assert.notStrictEqual(theirs.id, original.id)
          assert.notStrictEqual(theirs.key, original.key)
          assert.strictEqual(theirs.environment, "test")
          assert.deepStrictEqual(theirs.permissions, { "api-keys:write": true })
          // and it is replayed to that test key alone
          assert.strictEqual((yield* keys.create(tester, body, "X")).key, theirs.key)
          // a key limited to one family, an address and 5 USD: its own key, within its limits
          const limited = yield* authAs(
            (yield* admin.createKey(account.id, {
              name: "limited",
              spendLimit: 5,
              ipWhitelist: ["192.0.2.7"],
              permissions: { "video:create": true, "api-keys:write": true, providers: ["vendor1"] }
            })).key,
            "192.0.2.7"
          )
          const narrow = yield* keys.create(limited, body, "X")
          assert.notStrictEqual(narrow.key, original.key)
          assert.strictEqual(narrow.spendLimit, 5)
          assert.deepStrictEqual(narrow.ipWhitelist, ["192.0.2.7"])
          assert.deepStrictEqual(narrow.permissions, limited.permissions)
          // a key that may not make the request gets the normal refusal, not the replay
          assert.strictEqual(
            yield* codeOf(keys.create(tester, { ...body, environment: "live" }, "X")),
            "KEY_PERMISSION_DENIED"
          )
          // the original key still gets its replay
          assert.strictEqual((yield* keys.create(principal, body, "X")).key, original.key)
        })
      )

      test(
        "a replay goes to the same key only while it may still make the request",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ spendLimit: 10 })
          const billing = yield* FakeBillingAccounts.FakeBilling
          const first = yield* keys.create(principal, { name: "k", spendLimit: 4 }, "idem")
          assert.strictEqual((yield* keys.create(principal, { name: "k", spendLimit: 4 }, "idem")).key, first.key)
          // the caller has since spent 7 of its 10: a key of 4 is more than it may give now
          billing.setSpent(principal.keyId, 7_000_000)
          assert.strictEqual(
            yield* codeOf(keys.create(principal, { name: "k", spendLimit: 4 }, "idem")),
            "KEY_PERMISSION_DENIED"
          )
        })
      )

      test(
        "a refused creation stores nothing",
        Effect.gen(function*() {
          const { keys, principal } = yield* setup({ permissions: { "api-keys:write": true } })
          assert.strictEqual(
            yield* codeOf(keys.create(principal, { name: "k", permissions: {} }, "idem")),
            "KEY_PERMISSION_DENIED"
          )
          const ok = yield* keys.create(principal, { name: "k", permissions: { "api-keys:write": true } }, "idem")
          assert.strictEqual(ok.name, "k")
        })
      )
    })

    describe("admin", () => {
      test(
        "create, get, update, credit",
        Effect.gen(function*() {
          const admin = yield* Services.AdminService
          const billing = yield* FakeBillingAccounts.FakeBilling
          const created = yield* admin.createAccount({
            name: "Acme",
            billingMode: "postpaid",
            balance: 12.5,
            monthlySpendLimit: 100,
            autoTopUpEnabled: true,
            autoTopUpThreshold: 5,
            autoTopUpAmount: 20
          })
          assert.deepStrictEqual(created, {
            id: created.id,
            name: "Acme",
            balance: 12.5,
            billingMode: "postpaid",
            monthlySpendLimit: 100,
            autoTopUpEnabled: true,
            autoTopUpThreshold: 5,
            autoTopUpAmount: 20,
            creditLimit: 100,
            currency: "USD",
            monthToDateSpend: 0,
            createdAt: new Date(T0).toISOString()
          })
          assert.deepStrictEqual(yield* admin.getAccount(created.id), created)
          const updated = yield* admin.updateAccount(created.id, {
            name: "Acme 2",
            monthlySpendLimit: null,
            billingMode: "prepaid"
          })
          assert.strictEqual(updated.name, "Acme 2")
          assert.strictEqual(updated.monthlySpendLimit, null)
          assert.strictEqual(updated.billingMode, "prepaid")
          assert.strictEqual(updated.autoTopUpAmount, 20)
          assert.deepStrictEqual(yield* admin.getAccount(created.id), updated)
          const credited = yield* admin.credit(created.id, { amount: 0.75, note: "goodwill" })
          assert.strictEqual(credited.balance, 13.25)
          assert.deepStrictEqual(billing.credits.at(-1), { accountId: created.id, micros: 750_000, note: "goodwill" })
          const plain = yield* admin.createAccount({ name: "Plain" })
          assert.strictEqual(plain.balance, 0)
          assert.strictEqual(plain.billingMode, "prepaid")
          assert.strictEqual(
            yield* codeOf(admin.createAccount({ name: "Bad", autoTopUpEnabled: true })),
            "VALIDATION_ERROR"
          )
        })
      )

      test(
        "unknown accounts",
        Effect.gen(function*() {
          const admin = yield* Services.AdminService
          assert.strictEqual(yield* codeOf(admin.getAccount("acct_nope")), "ACCOUNT_NOT_FOUND")
          assert.strictEqual(yield* codeOf(admin.updateAccount("acct_nope", { name: "x" })), "ACCOUNT_NOT_FOUND")
          assert.strictEqual(yield* codeOf(admin.credit("acct_nope", { amount: 1 })), "ACCOUNT_NOT_FOUND")
          assert.strictEqual(yield* codeOf(admin.createKey("acct_nope", { name: "x" })), "ACCOUNT_NOT_FOUND")
        })
      )

      test(
        "createKey has no escalation rules, but refuses a past expiry",
        Effect.gen(function*() {
          const { account, admin, keys } = yield* setup({ permissions: { "tasks:read": true }, spendLimit: 1 })
          const key = yield* admin.createKey(account.id, { name: "full", spendLimit: 1000 })
          assert.deepStrictEqual(key.permissions, {})
          assert.strictEqual(key.spendLimit, 1000)
          assert.strictEqual(key.environment, "live")
          const principal = yield* keys.authenticate({ authorization: bearer(key.key), clientAddress: undefined })
          assert.strictEqual(principal.accountId, account.id)
          const testKey = yield* admin.createKey(account.id, { name: "sandbox", environment: "test" })
          assert.match(testKey.key, /^mg_test_/)
          assert.strictEqual(
            yield* codeOf(admin.createKey(account.id, { name: "old", expiresAt: new Date(T0 - 1) })),
            "VALIDATION_ERROR"
          )
        })
      )
    })

    describe("bootstrap", () => {
      test(
        "creates the first account with a live and a test key, once",
        Effect.gen(function*() {
          const first = yield* bootstrap()
          assert.isTrue(Option.isSome(first))
          const { account, live, test: sandbox } = Option.getOrThrow(first)
          assert.match(live.key, /^mg_live_[A-Za-z0-9]{32}$/)
          assert.match(sandbox.key, /^mg_test_[A-Za-z0-9]{32}$/)
          const keys = yield* Services.KeyService
          const principal = yield* keys.authenticate({ authorization: bearer(live.key), clientAddress: undefined })
          assert.strictEqual(principal.accountId, account.id)
          assert.deepStrictEqual(principal.permissions, {})
          const sandboxPrincipal = yield* keys.authenticate({
            authorization: bearer(sandbox.key),
            clientAddress: undefined
          })
          assert.strictEqual(sandboxPrincipal.environment, "test")
          assert.isTrue(Option.isNone(yield* bootstrap()))
          assert.strictEqual((yield* keys.list(principal)).length, 2)
        })
      )

      test(
        "does nothing when an account exists",
        Effect.gen(function*() {
          const admin = yield* Services.AdminService
          yield* admin.createAccount({ name: "Existing" })
          assert.isTrue(Option.isNone(yield* bootstrap()))
        })
      )
    })
  })
}
