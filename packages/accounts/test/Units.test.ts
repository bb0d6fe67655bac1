import { assert, describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { AccountStore } from "../src/AccountStore.js"
import * as Idempotency from "../src/Idempotency.js"
import * as Keys from "../src/Keys.js"
import * as KeyServiceModule from "../src/KeyService.js"
import * as MemoryAccounts from "../src/MemoryAccounts.js"
import * as FakeBillingAccounts from "./FakeBillingAccounts.js"
import * as FakeOperatorViews from "./FakeOperatorViews.js"

describe("Keys", () => {
  it("generates well-formed, distinct keys over the whole alphabet", () => {
    const seen = new Set<string>()
    const chars = new Set<string>()
    for (let i = 0; i < 500; i++) {
      const key = Keys.generateKey(i % 2 === 0 ? "live" : "test")
      assert.match(key, /^mg_(live|test)_[A-Za-z0-9]{32}$/)
      seen.add(key)
      for (const c of key.slice(8)) chars.add(c)
    }
    assert.strictEqual(seen.size, 500)
    assert.strictEqual(chars.size, 62)
  })

  it("hashes with SHA-256 hex", () => {
    assert.strictEqual(Keys.hashKey("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  })

  it("reads only Bearer keys of the right shape", () => {
    const key = `mg_test_${"Z".repeat(32)}`
    assert.strictEqual(Keys.bearerKey(`Bearer ${key}`), key)
    assert.strictEqual(Keys.bearerKey(`Bearer  ${key}`), key)
    assert.isUndefined(Keys.bearerKey(`Bearer ${key} extra`))
    assert.isUndefined(Keys.bearerKey(`Token ${key}`))
  })

  it("matches whitelists", () => {
    assert.isTrue(Keys.allowedBy([], undefined))
    assert.isTrue(Keys.allowedBy(["fe80::/10"], "fe80::1%eth0"))
    assert.isFalse(Keys.allowedBy(["not an address"], "10.0.0.1"))
    assert.isTrue(Keys.allowedBy(["0.0.0.0/0"], "::ffff:8.8.8.8"))
    assert.isFalse(Keys.allowedBy(["0.0.0.0/0"], "2001:db8::1"))
  })
})

describe("Idempotency sealing", () => {
  const identity = { accountId: "acct_1", scope: "api-keys", keyHash: Idempotency.hashKey("k1"), fingerprint: "f" }
  const record = (ciphertext: string): Idempotency.StoredResponse => ({ ...identity, ciphertext, createdAt: 0 })

  it("opens only with the same Idempotency-Key and identity", () => {
    const sealed = Idempotency.seal("k1", identity, "{\"key\":\"secret\"}")
    assert.notInclude(sealed, "secret")
    assert.strictEqual(Idempotency.open("k1", record(sealed)), "{\"key\":\"secret\"}")
    assert.isUndefined(Idempotency.open("k2", record(sealed)))
    assert.isUndefined(Idempotency.open("k1", { ...record(sealed), accountId: "acct_2" }))
    assert.isUndefined(Idempotency.open("k1", { ...record(sealed), fingerprint: "g" }))
    const bytes = Buffer.from(sealed.slice(3), "base64")
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1
    assert.isUndefined(Idempotency.open("k1", record(`v1.${bytes.toString("base64")}`)))
    // two seals of the same answer differ (random IV)
    assert.notStrictEqual(Idempotency.seal("k1", identity, "x"), Idempotency.seal("k1", identity, "x"))
  })

  it("fingerprints canonically", () => {
    assert.strictEqual(
      Idempotency.fingerprint({ b: 1, a: [new Date(0)], c: undefined }),
      Idempotency.fingerprint({ a: ["1970-01-01T00:00:00.000Z"], b: 1 })
    )
    assert.notStrictEqual(Idempotency.fingerprint({ a: 1 }), Idempotency.fingerprint({ a: 2 }))
  })

  it.effect("prunes expired answers", () =>
    Effect.gen(function*() {
      const store = Idempotency.makeMemory()
      assert.isTrue(yield* store.insert(record("v1.a"), -1))
      assert.isFalse(yield* store.insert(record("v1.b"), -1))
      assert.isTrue(yield* store.insert(record("v1.c"), 0)) // created at 0: expired at 0
      assert.strictEqual(yield* store.prune(1), 1)
    }))
})

describe("lastUsedAt on shutdown", () => {
  it.live("the last buffered uses are written when the layer closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const layer = FakeOperatorViews.withAdmin(MemoryAccounts.layer()).pipe(
        Layer.provideMerge(FakeBillingAccounts.layer)
      )
      const context = yield* Layer.buildWithScope(layer, scope)
      const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>) =>
        Effect.provide(effect, context)
      const created = yield* run(Effect.flatMap(Services.AdminService, (admin) =>
        Effect.flatMap(admin.createAccount({ name: "A" }), (account) =>
          admin.createKey(account.id, { name: "k" }))))
      yield* run(Effect.flatMap(Services.KeyService, (keys) =>
        keys.authenticate({ authorization: `Bearer ${created.key}`, clientAddress: undefined })))
      const store = yield* run(AccountStore)
      const before = yield* store.keyByHash(Keys.hashKey(created.key))
      assert.strictEqual(before._tag === "Some" ? before.value.lastUsedAt : "none", null)
      yield* Scope.close(scope, Exit.void)
      const after = yield* store.keyByHash(Keys.hashKey(created.key))
      assert.isTrue(after._tag === "Some" && typeof after.value.lastUsedAt === "number")
    }))
})

describe("rate limits of derived keys", () => {
  it.effect("lie within the parent's own value, else the configured default", () =>
    Effect.gen(function*() {
      const within = KeyServiceModule.rateLimitWithin
      // absent inherits the parent's value
      expect(yield* within(undefined, 100, 600, "requestsPerMinute")).toBe(100)
      expect(yield* within(50, 100, 600, "requestsPerMinute")).toBe(50)
      expect((yield* Effect.flip(within(101, 100, 600, "requestsPerMinute"))).message).toMatch(/at most 100/)
      // a parent on the default of 600: 600 is the bound; null (the default) passes
      expect(yield* within(600, null, 600, "requestsPerMinute")).toBe(600)
      expect(yield* within(null, null, 600, "requestsPerMinute")).toBe(null)
      expect((yield* Effect.flip(within(601, null, 600, "requestsPerMinute"))).message).toMatch(/at most 600/)
      // null under a limited parent would be the (higher or unlimited) default: refused
      expect((yield* Effect.flip(within(null, 100, 600, "maxInFlightTasks"))).message).toMatch(/maxInFlightTasks/)
      expect((yield* Effect.flip(within(null, 100, null, "maxInFlightTasks"))).message).toMatch(/at most 100/)
      // no default and no parent value: anything
      expect(yield* within(1_000_000, null, null, "requestsPerMinute")).toBe(1_000_000)
    }))
})
