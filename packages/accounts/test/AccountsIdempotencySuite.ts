/**
 * The accounts conformance cases for idempotent key creation: replays of the same request, refusal of another, the
 * 24-hour window per account, replays only to the requesting key, and nothing stored for a refused creation.
 */
import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Idempotency from "../src/Idempotency.js"
import { type Backend, bearer, codeOf, Dump, hour, setup, T0, testers } from "./AccountsSuiteSupport.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"

/** Registers the cases of idempotent creation for one backend. */
export const accountsIdempotencySuite = (backend: Backend) => {
  const { test } = testers(backend)

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
}
