/**
 * The accounts conformance cases for the key tree: a derived key's parent and ancestors, its IP whitelist (inherited
 * or narrowed), revocation of its descendants, expiry with its ancestors, and the depth limit.
 */
import { assert, describe } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { AccountStore } from "../src/AccountStore.js"
import * as KeyService from "../src/KeyService.js"
import { type Backend, bearer, codeOf, hour, setup, T0, testers } from "./AccountsSuiteSupport.js"

/** Registers the cases of the key tree for one backend. */
export const accountsKeyTreeSuite = (backend: Backend) => {
  const { test } = testers(backend)

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
}
