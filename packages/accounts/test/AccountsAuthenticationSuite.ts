/**
 * The accounts conformance cases for authentication, in the order of decisions.md §5 (credentials, revocation,
 * expiry, the IP whitelist; one store read per request, lastUsedAt written in batches), and for storage (only the
 * hashes of keys are stored).
 */
import { assert, describe } from "@effect/vitest"
import type { ApiKey, Security } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { createHash } from "node:crypto"
import { AccountStore } from "../src/AccountStore.js"
import * as KeyService from "../src/KeyService.js"
import {
  type Backend,
  bearer,
  calledTimes,
  Calls,
  codeOf,
  Dump,
  hour,
  messageOf,
  setup,
  T0,
  testers
} from "./AccountsSuiteSupport.js"

/** Registers the cases of authentication and storage for one backend. */
export const accountsAuthenticationSuite = (backend: Backend) => {
  const { test } = testers(backend)

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
        assert.strictEqual(yield* calledTimes(calls, "touchKeys", 1), 1)
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
}
