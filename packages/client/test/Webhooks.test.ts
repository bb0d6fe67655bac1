/**
 * `verifyWebhook` (Web Crypto) against the server's own signers (the contract's `WebhookSignature.sign` and
 * `signStandard`), both schemes, and the `standardwebhooks` library as a third-party check of the second.
 */
import { describe, expect, it } from "@effect/vitest"
import { WebhookSignature } from "@mediagate/contract"
import { Webhook as StandardWebhook } from "standardwebhooks"
import { Mediagate, verifyWebhook } from "../src/index.js"

const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")
const event = {
  id: "evt_01",
  type: "task.completed",
  created_at: "2026-11-24T00:00:00.000Z",
  data: { task: { id: "task_1" } }
}
const body = JSON.stringify(event)
const now = 1_790_000_000_000
const timestamp = Math.floor(now / 1000)

const signed = (raw = body, at = timestamp) => ({
  "content-type": "application/json",
  "x-webhook-id": event.id,
  "x-webhook-timestamp": String(at),
  "x-webhook-signature": WebhookSignature.sign(secret, at, raw),
  "webhook-id": event.id,
  "webhook-timestamp": String(at),
  "webhook-signature": WebhookSignature.signStandard(secret, event.id, at, raw)
})

const only = (headers: Record<string, string>, prefix: "x-" | "webhook-") =>
  Object.fromEntries(
    Object.entries(headers).filter(([k]) => prefix === "x-" ? !k.startsWith("webhook-") : !k.startsWith("x-"))
  )

describe("verifyWebhook", () => {
  it("accepts a delivery under either scheme (string, bytes, Headers) and answers the event", async () => {
    const headers = signed()
    expect(await verifyWebhook(body, headers, secret, { now })).toEqual(event)
    expect(await verifyWebhook(body, only(headers, "x-"), secret, { now })).toEqual(event)
    expect(await verifyWebhook(new TextEncoder().encode(body), only(headers, "webhook-"), secret, { now })).toEqual(
      event
    )
    expect(await verifyWebhook(body, new Headers(only(headers, "webhook-")), secret, { now, scheme: "standard" }))
      .toEqual(event)
    expect(await new Mediagate().webhooks.verify(body, headers, secret, { now, scheme: "mediagate" })).toEqual(event)
  })

  it("agrees with the standardwebhooks library on the Standard Webhooks scheme", async () => {
    const library = new StandardWebhook(secret)
    const at = new Date()
    const signature = library.sign(event.id, at, body)
    const headers = {
      "webhook-id": event.id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signature
    }
    expect(await verifyWebhook(body, headers, secret)).toEqual(event)
  })

  it("rejects a changed body, a wrong secret, an old timestamp and missing headers", async () => {
    const headers = signed()
    const tampered = body.replace("task_1", "task_2")
    for (const scheme of ["mediagate", "standard"] as const) {
      await expect(verifyWebhook(tampered, headers, secret, { now, scheme })).rejects.toMatchObject({
        code: "WEBHOOK_BAD_SIGNATURE",
        status: 0
      })
      await expect(
        verifyWebhook(body, headers, "whsec_" + Buffer.from("another secret of 32 bytes......").toString("base64"), {
          now,
          scheme
        })
      )
        .rejects.toMatchObject({ code: "WEBHOOK_BAD_SIGNATURE" })
      await expect(verifyWebhook(body, headers, secret, { now: now + 301_000, scheme })).rejects.toMatchObject({
        code: "WEBHOOK_TIMESTAMP_OUT_OF_RANGE"
      })
      expect(await verifyWebhook(body, headers, secret, { now: now + 301_000, scheme, toleranceSeconds: 400 })).toEqual(
        event
      )
    }
    await expect(verifyWebhook(body, { "content-type": "application/json" }, secret, { now })).rejects.toMatchObject({
      code: "WEBHOOK_MISSING_HEADER"
    })
    const notJson = "not json"
    await expect(verifyWebhook(notJson, signed(notJson), secret, { now })).rejects.toMatchObject({
      code: "WEBHOOK_INVALID_BODY"
    })
  })
})
