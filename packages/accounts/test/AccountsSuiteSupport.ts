/**
 * What the suites of the accounts conformance suite share: a backend and its dump, the services on top of its stores
 * (with a count of the hot-path store calls), the registration of a case on a fresh backend, and the steps the cases
 * use (an account with one key, the code or message of a failure).
 */
import { it } from "@effect/vitest"
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import type { ApiKey } from "@mediagate/contract"
import { Services } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import { AccountStore } from "../src/AccountStore.js"
import * as AdminService from "../src/AdminService.js"
import type * as Idempotency from "../src/Idempotency.js"
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

/**
 * Waits (on the live clock, up to 10 s) until `name` has been counted `times` times: a write a scheduled fiber started
 * ends when the database answers, not when the test clock moves.
 */
export const calledTimes = (calls: Map<string, number>, name: string, times: number) =>
  TestServices.provideLive(Effect.gen(function*() {
    for (let waited = 0; (calls.get(name) ?? 0) < times && waited < 10_000; waited += 10) {
      yield* Effect.sleep("10 millis")
    }
    return calls.get(name) ?? 0
  }))

export const T0 = Date.parse("2026-11-21T00:00:00.000Z")
export const hour = 3_600_000

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
      // counted once written: a flush on a real database is still under way when its fiber yields
      touchKeys: (uses) => Effect.zipLeft(store.touchKeys(uses), count("touchKeys"))
    }
    return context.pipe(Context.add(AccountStore, proxy), Context.add(Calls, calls))
  })).pipe(Layer.provide(base))
  return Layer.mergeAll(
    KeyService.layer({ flushInterval: "1 hour", ...options }),
    AdminService.layer.pipe(Layer.provide(FakeOperatorViews.layer))
  ).pipe(Layer.provideMerge(counted))
}

export type Env = Layer.Layer.Success<ReturnType<typeof env>>

export const codeOf = <A, E extends { readonly code: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(self), (e) => e.code)
export const messageOf = <A, E extends { readonly message: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(self), (e) => e.message)

export const bearer = (key: string) => `Bearer ${key}`

/** An account with one key made by the admin API, and that key authenticated. */
export const setup = (body: Partial<ApiKey.ApiKeyCreate> = {}, clientAddress = "127.0.0.1") =>
  Effect.gen(function*() {
    const admin = yield* Services.AdminService
    const keys = yield* Services.KeyService
    const account = yield* admin.createAccount({ name: "Acme", balance: 10 })
    const created = yield* admin.createKey(account.id, { name: "root", ...body })
    const principal = yield* keys.authenticate({ authorization: bearer(created.key), clientAddress })
    return { account, created, principal, keys, admin }
  })

/**
 * The registration of a case on a fresh instance of the backend, at {@link T0}: `test`, and `cachedTest` with the
 * key cache on.
 */
export const testers = (backend: Backend) => {
  const test = (title: string, body: Effect.Effect<void, unknown, Env>) =>
    it.effect(title, () => Effect.zipRight(TestClock.setTime(T0), Effect.provide(body, env(backend))), 20_000)
  /** A test with the key cache on (5 s, at most 3 keys). */
  const cachedTest = (title: string, body: Effect.Effect<void, unknown, Env | Scope.Scope>) =>
    it.scoped(title, () =>
      Effect.zipRight(
        TestClock.setTime(T0),
        Effect.provide(body, env(backend, { cacheTtl: "5 seconds", cacheSize: 3 }))
      ), 20_000)

  return { cachedTest, test }
}
