/**
 * The accounts conformance cases for key creation: the full key answered once, and no escalation (permissions,
 * spend limit, expiry and environment within the caller's).
 */
import { assert, describe } from "@effect/vitest"
import type { ApiKey } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { type Backend, codeOf, hour, setup, T0, testers } from "./AccountsSuiteSupport.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"

/** Registers the cases of key creation for one backend. */
export const accountsKeyCreationSuite = (backend: Backend) => {
  const { test } = testers(backend)

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
}
