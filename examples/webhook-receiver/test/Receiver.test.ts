import { describe, expect, it } from "@effect/vitest"
import { WebhookSignature } from "@mediagate/contract"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { makeHandler } from "../src/Receiver.js"

const secret = `whsec_${Buffer.from("receiver-test-secret-32-bytes-!!").toString("base64")}`
const event = (id: string) => ({
  id,
  type: "task.completed",
  created_at: new Date().toISOString(),
  data: {
    task: {
      id: "task_1",
      type: "video",
      status: "succeeded",
      provider: "vendor3",
      model: "vendor3-3",
      created_at: "x",
      completed_at: "y"
    }
  }
})

const withServer = async (onEvent: (id: string) => void, body: (url: string) => Promise<void>) => {
  const handler = makeHandler(secret, (e) => onEvent(e.id))
  const server: Server = createServer((req, res) => void handler(req, res))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`)
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const deliver = (url: string, payload: string, timestamp: number, signature: string) =>
  fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-webhook-id": "evt_1",
      "x-webhook-timestamp": String(timestamp),
      "x-webhook-signature": signature
    },
    body: payload
  })

describe("example webhook receiver", () => {
  it("accepts a signed delivery once per event id, refuses bad signatures and old timestamps", async () => {
    const handled: Array<string> = []
    await withServer((id) => handled.push(id), async (url) => {
      const now = Math.floor(Date.now() / 1000)
      const body = JSON.stringify(event("evt_1"))
      expect((await deliver(url, body, now, WebhookSignature.sign(secret, now, body))).status).toBe(204)
      // a retry of the same event is acknowledged but not handled twice
      expect((await deliver(url, body, now, WebhookSignature.sign(secret, now, body))).status).toBe(204)
      expect(handled).toEqual(["evt_1"])
      const tampered = body.replace("succeeded", "failed")
      expect((await deliver(url, tampered, now, WebhookSignature.sign(secret, now, body))).status).toBe(400)
      const old = now - 301
      expect((await deliver(url, body, old, WebhookSignature.sign(secret, old, body))).status).toBe(400)
      expect((await fetch(url)).status).toBe(405)
      expect(handled).toEqual(["evt_1"])
    })
  })
})
