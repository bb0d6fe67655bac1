import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as TestClock from "effect/TestClock"
import { createHmac } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { sign, signStandard, verify, verifyAt, WebhookVerificationError } from "../src/WebhookSignature.js"

const secret = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`
const body = JSON.stringify({ id: "evt_01", type: "task.completed", created_at: "2026-11-21T00:00:00.000Z", data: {} })
const now = Date.UTC(2026, 10, 21, 12, 0, 0)
const timestamp = Math.floor(now / 1000)

const headers = (overrides: Record<string, string> = {}) => ({
  "X-Webhook-ID": "evt_01",
  "X-Webhook-Timestamp": String(timestamp),
  "X-Webhook-Signature": sign(secret, timestamp, body),
  ...overrides
})

describe("webhook signatures", () => {
  it("signs the spec's way: sha256= hex HMAC over '<timestamp>.<body>' keyed with the secret string", () => {
    const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${body}`).digest("hex")
    expect(sign(secret, timestamp, body)).toBe(`sha256=${expected}`)
  })

  it("verifies a genuine delivery and returns the parsed event", () => {
    const result = verifyAt({ secret, headers: headers(), body, now })
    expect(Either.getOrThrow(result)).toEqual(JSON.parse(body))
  })

  it.effect("verify reads the time from Effect's Clock", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      expect(yield* verify({ secret, headers: headers(), body })).toEqual(JSON.parse(body))
      yield* TestClock.adjust("301 seconds")
      const error = yield* Effect.flip(verify({ secret, headers: headers(), body }))
      expect(error).toBeInstanceOf(WebhookVerificationError)
      expect(error.reason).toBe("timestamp_out_of_range")
    }))

  it("accepts header records of any case, arrays and Fetch Headers", () => {
    const lower = Object.fromEntries(Object.entries(headers()).map(([k, v]) => [k.toLowerCase(), [v]]))
    expect(Either.isRight(verifyAt({ secret, headers: lower, body, now }))).toBe(true)
    expect(Either.isRight(verifyAt({ secret, headers: new Headers(headers()), body, now }))).toBe(true)
  })

  it.each(
    [
      ["a changed body", { body: body.replace("completed", "failed") }, "bad_signature"],
      ["another secret", { secret: "whsec_b3RoZXI=" }, "bad_signature"],
      ["a timestamp older than 300 s", { now: now + 301_000 }, "timestamp_out_of_range"],
      ["a timestamp from the future", { now: now - 301_000 }, "timestamp_out_of_range"]
    ] as const
  )("rejects %s", (_name, change, reason) => {
    const result = verifyAt({ secret, headers: headers(), body, now, ...change })
    expect(Either.isLeft(result)).toBe(true)
    const error = Either.getLeft(result)
    expect(error._tag === "Some" && error.value).toBeInstanceOf(WebhookVerificationError)
    expect(error._tag === "Some" && error.value.reason).toBe(reason)
  })

  it("accepts the edge of the tolerance and a custom tolerance", () => {
    expect(Either.isRight(verifyAt({ secret, headers: headers(), body, now: now + 300_000 }))).toBe(true)
    expect(Either.isLeft(verifyAt({ secret, headers: headers(), body, now: now + 60_000, toleranceSeconds: 30 }))).toBe(
      true
    )
  })

  it("rejects missing headers, a malformed timestamp and a signature of another length", () => {
    const { ["X-Webhook-Signature"]: _s, ...noSignature } = headers()
    expect(
      Either.getLeft(verifyAt({ secret, headers: noSignature, body, now })).pipe((e) =>
        e._tag === "Some" && e.value.reason
      )
    )
      .toBe("missing_header")
    const bad = verifyAt({ secret, headers: headers({ "X-Webhook-Timestamp": "12abc" }), body, now })
    expect(Either.isLeft(bad)).toBe(true)
    const short = verifyAt({ secret, headers: headers({ "X-Webhook-Signature": "sha256=00" }), body, now })
    expect(Either.isLeft(short)).toBe(true)
  })

  it("produces Standard Webhooks signatures that the standardwebhooks library verifies", () => {
    const id = "evt_01"
    const signature = signStandard(secret, id, timestamp, body)
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    const receiver = new Webhook(secret)
    const realNow = Math.floor(Date.now() / 1000)
    const fresh = signStandard(secret, id, realNow, body)
    expect(
      receiver.verify(body, { "webhook-id": id, "webhook-timestamp": String(realNow), "webhook-signature": fresh })
    )
      .toEqual(JSON.parse(body))
    expect(() =>
      receiver.verify(body.replace("completed", "failed"), {
        "webhook-id": id,
        "webhook-timestamp": String(realNow),
        "webhook-signature": fresh
      })
    ).toThrow()
    // and the library's own signature matches ours
    expect(receiver.sign(id, new Date(realNow * 1000), body)).toBe(fresh)
  })
})
