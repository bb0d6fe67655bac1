/**
 * The accounts conformance cases for the admin API (accounts created, read, updated and credited; keys created
 * without escalation rules) and for the bootstrap (the first account with a live and a test key, once).
 */
import { assert, describe } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { bootstrap } from "../src/Bootstrap.js"
import { type Backend, bearer, codeOf, setup, T0, testers } from "./AccountsSuiteSupport.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"

/** Registers the cases of the admin API and the bootstrap for one backend. */
export const accountsAdminSuite = (backend: Backend) => {
  const { test } = testers(backend)

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
}
