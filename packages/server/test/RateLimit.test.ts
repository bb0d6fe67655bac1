/**
 * Rate limits (security.md "Rate limits"): the header fields, the limiter on memory windows, and every 429 through a
 * real server over the fake ports.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { Families, RateLimit as Windows } from "@mediagate/contract"
import { Http, RateLimit, ServerConfig } from "@mediagate/server"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { keys, PortsFake, SeededTasks } from "./fakes.js"
import { adminToken, type Answer, send } from "./harness.js"

/** The HTTP layer over the fakes with the given limits. */
const serverWith = (rateLimits: Partial<ServerConfig.RateLimitSettings>) =>
  Http.layerFor(Families.registry).pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(PortsFake),
    Layer.provide(ServerConfig.layer({
      adminToken: Option.some(Redacted.make(adminToken)),
      rateLimits: { ...ServerConfig.defaultRateLimits, ...rateLimits }
    }))
  )

/**
 * Runs `body` where at least 10 s of the current minute's window remain: its requests count in one window (a
 * window that ends between two of them starts the count again).
 */
const inOneWindow = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const left = RateLimit.windowMs - (now % RateLimit.windowMs)
    return left < 10_000 ? Effect.sleep(left + 10) : Effect.void
  }).pipe(Effect.zipRight(body))

const expectRateLimited = (answer: Answer) => {
  assert.strictEqual(answer.status, 429, answer.text)
  assert.strictEqual(answer.body.success, false)
  assert.strictEqual(answer.body.error.code, "RATE_LIMITED")
  const retryAfter = Number(answer.headers["retry-after"])
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true)
  expect(answer.headers["ratelimit-policy"]).toBeDefined()
  expect(answer.headers["ratelimit"]).toMatch(/;r=0/)
}

describe("rate limit fields", () => {
  it("renders the draft's structured fields", () => {
    const states = [
      { name: "key", quota: 600, remaining: 12, reset: 30 },
      { name: "key-tasks", quota: 10, remaining: 3 }
    ]
    expect(RateLimit.policyField(states)).toBe(`"key";q=600;w=60, "key-tasks";q=10;qu="concurrent-requests"`)
    expect(RateLimit.stateField(states)).toBe(`"key";r=12;t=30, "key-tasks";r=3`)
  })

  it("buckets addresses: IPv4 as is, IPv6 by /64, an unknown address apart", () => {
    expect(RateLimit.addressBucket("203.0.113.9")).toBe("203.0.113.9")
    expect(RateLimit.addressBucket("::ffff:203.0.113.9")).toBe("203.0.113.9")
    expect(RateLimit.addressBucket("2001:db8:1:2:3:4:5:6")).toBe(RateLimit.addressBucket("2001:db8:1:2::ff"))
    expect(RateLimit.addressBucket(undefined)).toBe("unknown")
  })

  it.effect("memory windows count per scope and window", () =>
    Effect.gen(function*() {
      const windows = Windows.makeMemory()
      const a = { scope: "key:a", windowStart: 0 }
      const b = { scope: "key:b", windowStart: 0 }
      expect(yield* windows.hit([a, b])).toEqual([1, 1])
      expect(yield* windows.hit([a])).toEqual([2])
      expect(yield* windows.peek(a)).toBe(2)
      expect(yield* windows.hit([{ scope: "key:a", windowStart: 60_000 }])).toEqual([1])
    }))
})

describe("requests per minute", () => {
  it.live("per key: 429 past the limit, with Retry-After and RateLimit fields; other keys unaffected", () =>
    inOneWindow(Effect.gen(function*() {
      for (let i = 0; i < 3; i++) {
        const ok = yield* send("GET", "/api/v1/balance", { token: keys.other })
        assert.strictEqual(ok.status, 200)
        expect(ok.headers["ratelimit-policy"]).toBe(`"key";q=3;w=60, "account";q=5;w=60`)
        expect(ok.headers["ratelimit"]).toMatch(new RegExp(`^"key";r=${2 - i};t=\\d+, "account";r=${4 - i};t=\\d+$`))
      }
      const refused = yield* send("GET", "/api/v1/balance", { token: keys.other })
      expectRateLimited(refused)
      expect(refused.body.error.message).toMatch(/this key allows 3 per minute/)
    })).pipe(Effect.provide(serverWith({ keyRequestsPerMinute: 3, accountRequestsPerMinute: 5 }))))

  it.live("per account: the keys of one account share its limit", () =>
    inOneWindow(Effect.gen(function*() {
      // acct_main: keys.live and keys.test, 5 a minute together
      const answers: Array<Answer> = []
      for (let i = 0; i < 3; i++) answers.push(yield* send("GET", "/api/v1/balance", { token: keys.live }))
      for (let i = 0; i < 3; i++) answers.push(yield* send("GET", "/api/v1/balance", { token: keys.test }))
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429])
      expectRateLimited(answers[5]!)
      expect(answers[5]!.body.error.message).toMatch(/this account allows 5 per minute/)
    })).pipe(Effect.provide(serverWith({ keyRequestsPerMinute: 3, accountRequestsPerMinute: 5 }))))

  it.live("off by default: no fields, no refusal", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 20; i++) {
        const ok = yield* send("GET", "/api/v1/balance", { token: keys.live })
        assert.strictEqual(ok.status, 200)
        expect(ok.headers["ratelimit"]).toBeUndefined()
      }
    }).pipe(Effect.provide(serverWith({}))))
})

describe("tasks in flight", () => {
  it.live("a new generation (and a retry) is refused while the key has as many active tasks as it may", () =>
    Effect.gen(function*() {
      const seeded = yield* SeededTasks
      const create = () =>
        send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.other,
          json: { model: "vendor3-3", input: { prompt: "p" } }
        })
      const first = yield* create()
      assert.strictEqual(first.status, 201, first.text)
      expect(first.headers["ratelimit-policy"]).toBe(`"key-tasks";q=2;qu="concurrent-requests"`)
      expect(first.headers["ratelimit"]).toBe(`"key-tasks";r=1`)
      assert.strictEqual((yield* create()).status, 201)
      const refused = yield* create()
      expectRateLimited(refused)
      assert.strictEqual(refused.headers["retry-after"], String(RateLimit.inFlightRetryAfterSeconds))
      expect(refused.body.error.message).toMatch(/too many tasks in flight: this key allows 2 at once/)
      // another key is not held back by this one's tasks
      const other = yield* send("POST", "/api/v1/vendor3/text-to-video", {
        token: keys.live,
        json: { model: "vendor3-3", input: { prompt: "p" } }
      })
      assert.strictEqual(other.status, 201)
      assert.isString(seeded.failed)
    }).pipe(Effect.provide(serverWith({ keyMaxInFlightTasks: 2 }))))
})

describe("webhook test and replay", () => {
  it.live("are limited per account", () =>
    inOneWindow(Effect.gen(function*() {
      const first = yield* send("POST", "/api/v1/webhooks/wh_1/test", { token: keys.live })
      expect(first.status).not.toBe(429)
      expect(first.headers["ratelimit-policy"]).toBe(`"webhook-actions";q=2;w=60`)
      const second = yield* send("POST", "/api/v1/webhooks/wh_1/deliveries/dlv_x/replay", { token: keys.live })
      expect(second.status).not.toBe(429)
      expectRateLimited(yield* send("POST", "/api/v1/webhooks/wh_1/test", { token: keys.test }))
      expectRateLimited(yield* send("POST", "/api/v1/webhooks/wh_1/deliveries/dlv_x/replay", { token: keys.live }))
      // another account has its own budget
      expect((yield* send("POST", "/api/v1/webhooks/wh_1/test", { token: keys.other })).status).not.toBe(429)
    })).pipe(Effect.provide(serverWith({ webhookActionsPerMinute: 2 }))))
})

describe("failed admin-token attempts", () => {
  it.live("are throttled per client address; past the limit even the right token waits", () =>
    inOneWindow(Effect.gen(function*() {
      const wrong = () => send("GET", "/admin/v1/accounts/acct_main", { token: "wrong-token" })
      const right = () => send("GET", "/admin/v1/accounts/acct_main", { token: adminToken })
      const ok = yield* right()
      expect(ok.status).not.toBe(429)
      for (let i = 0; i < 3; i++) {
        const failed = yield* wrong()
        assert.strictEqual(failed.status, 401)
        assert.strictEqual(failed.body.error.code, "AUTH_INVALID_TOKEN")
      }
      expectRateLimited(yield* wrong())
      // a success does not reset the count, and the right token is refused too while the address is throttled
      expectRateLimited(yield* right())
      const refused = yield* wrong()
      expectRateLimited(refused)
      expect(refused.body.error.message).toMatch(/too many failed admin-token attempts/)
      // a missing token is not a guess: still throttled, as any attempt from the address
      expectRateLimited(yield* send("GET", "/admin/v1/accounts/acct_main"))
    })).pipe(Effect.provide(serverWith({ adminFailuresPerMinute: 3 }))))
})
