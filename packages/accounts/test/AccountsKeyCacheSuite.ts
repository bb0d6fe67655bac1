/**
 * The accounts conformance cases for the key cache: a key's row read once per TTL (expiry and the whitelist judged
 * on every request), revocations at once in this process and within the TTL in another, invalidation and the size.
 */
import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as KeyService from "../src/KeyService.js"
import { type Backend, bearer, Calls, codeOf, setup, T0, testers } from "./AccountsSuiteSupport.js"

/** Registers the cases of the key cache for one backend. */
export const accountsKeyCacheSuite = (backend: Backend) => {
  const { cachedTest } = testers(backend)

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
}
