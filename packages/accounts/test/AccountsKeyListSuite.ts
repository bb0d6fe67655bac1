/**
 * The accounts conformance cases for listing and revoking an account's keys, with their spend from billing.
 */
import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { type Backend, bearer, codeOf, setup, testers } from "./AccountsSuiteSupport.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"

/** Registers the cases of listing and revoking keys for one backend. */
export const accountsKeyListSuite = (backend: Backend) => {
  const { test } = testers(backend)

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
}
