/**
 * The address policy and the client address through the API: non-global targets (webhook registration, per-task
 * `webhookUrl`, media input URLs) are `400 VALIDATION_ERROR` envelopes; an unreadable `X-Forwarded-For` hop from a
 * trusted proxy never lends the client the proxy's (whitelisted) address.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { ClientAddress, Http, ServerConfig } from "@mediagate/server"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { keys, PortsFake } from "./fakes.js"
import { send, TestServer } from "./harness.js"

/** Literal targets that are not global, in the forms a client may write them. */
const refusedTargets: ReadonlyArray<readonly [url: string, address: string]> = [
  ["http://[::127.0.0.1]/", "::7f00:1"],
  ["http://[::a9fe:a9fe]/", "::a9fe:a9fe"],
  ["http://[::ffff:7f00:1]/", "::ffff:7f00:1"],
  ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe"],
  ["http://[64:ff9b::10.0.0.1]/", "64:ff9b::a00:1"],
  ["http://[64:ff9b:1::808:808]/", "64:ff9b:1::808:808"],
  ["http://[2002:7f00:1::1]/", "2002:7f00:1::1"],
  ["http://[2001::1]/", "2001::1"],
  ["http://[fec0::1]/", "fec0::1"],
  ["http://2130706433/", "127.0.0.1"],
  ["http://0x7f.1/", "127.0.0.1"],
  ["http://127.1/", "127.0.0.1"],
  ["http://0/", "0.0.0.0"],
  ["http://100.64.0.1/", "100.64.0.1"],
  ["http://192.0.0.8/", "192.0.0.8"],
  ["http://198.18.0.1/", "198.18.0.1"],
  ["http://240.0.0.1/", "240.0.0.1"]
]

const expectRefused = (answer: { status: number; body: any; text: string }, message: string) => {
  assert.strictEqual(answer.status, 400, answer.text)
  expect(answer.body).toEqual({ success: false, error: { code: "VALIDATION_ERROR", message } })
}

describe("address policy through the API", () => {
  it.layer(TestServer)((it) => {
    it.effect("refuses non-global webhook targets, per-task webhookUrl and media URLs with 400 envelopes", () =>
      Effect.gen(function*() {
        for (const [url, address] of refusedTargets) {
          const problem = `address ${address} is not a public address`
          const hook = yield* send("POST", "/api/v1/webhooks", {
            token: keys.live,
            json: { url: `${url}in`, events: ["task.completed"] }
          })
          expectRefused(hook, `url: ${problem}`)
          const task = yield* send("POST", "/api/v1/vendor3/text-to-video", {
            token: keys.live,
            json: { model: "vendor3-3", input: { prompt: "p" }, webhookUrl: `${url}hook` }
          })
          expectRefused(task, `webhookUrl: ${problem}`)
          const media = yield* send("POST", "/api/v1/vendor8/image-to-video", {
            token: keys.live,
            json: { model: "vendor8/2-6-image-to-video", input: { prompt: "p", image_urls: [`${url}a.png`] } }
          })
          expectRefused(media, `input.image_urls[0]: ${problem}`)
        }
      }))

    it.effect("accepts global literals, including 6to4 and NAT64 forms of a global IPv4 address", () =>
      Effect.gen(function*() {
        for (
          const url of [
            "http://8.8.8.8/",
            "http://[2606:4700:4700::1111]/",
            "http://[2002:808:808::1]/",
            "http://[64:ff9b::8.8.8.8]/"
          ]
        ) {
          const hook = yield* send("POST", "/api/v1/webhooks", {
            token: keys.live,
            json: { url: `${url}in`, events: ["task.completed"] }
          })
          assert.strictEqual(hook.status, 201, `${url}: ${hook.text}`)
          const task = yield* send("POST", "/api/v1/vendor3/text-to-video", {
            token: keys.live,
            json: { model: "vendor3-3", input: { prompt: "p" }, webhookUrl: `${url}hook` }
          })
          assert.strictEqual(task.status, 201, `${url}: ${task.text}`)
        }
      }))
  })
})

describe("trusted proxies through the API", () => {
  it("an X-Forwarded-For hop that does not parse leaves the client unknown: a whitelisted key is refused", async () => {
    // the key allows 10.0.0.0/8 and 192.0.2.7; the proxy itself (10.0.0.1) lies in the whitelist
    const { dispose, handler } = Http.toWebHandler(
      Layer.mergeAll(PortsFake, ServerConfig.layer({ trustedProxies: ["10.0.0.1"] }))
    )
    const status = async (peer: string, forwardedFor: string) => {
      const answer = await handler(
        new Request("http://mediagate.local/api/v1/balance", {
          headers: { authorization: `Bearer ${keys.ipLocked}`, "x-forwarded-for": forwardedFor }
        }),
        Context.make(ClientAddress.RemoteAddress, peer)
      )
      const body = await answer.json()
      if (answer.status === 403) {
        expect(body).toMatchObject({ success: false, error: { code: "KEY_PERMISSION_DENIED" } })
      }
      return answer.status
    }
    try {
      // unparsable hops: unknown client, refused (the proxy's whitelisted address is never used)
      for (
        const hop of ["unknown", "", "garbage", "_hidden", "10.1", "[2001:db8::1", "192.0.2.7:99999", "fe80::1%eth0"]
      ) {
        expect(await status("10.0.0.1", hop), JSON.stringify(hop)).toBe(403)
      }
      expect(await status("10.0.0.1", "192.0.2.7, unknown")).toBe(403)
      expect(await status("10.0.0.1", "192.0.2.7,")).toBe(403)
      // hops with ports are read strictly as their address
      expect(await status("10.0.0.1", "192.0.2.7:5555")).toBe(200)
      expect(await status("10.0.0.1", "203.0.113.9:5555")).toBe(403)
      expect(await status("10.0.0.1", "[::ffff:192.0.2.7]:443")).toBe(200)
      expect(await status("10.0.0.1", "[::ffff:192.0.2.7]:443, 10.0.0.1:80")).toBe(200)
      expect(await status("10.0.0.1", "[2001:db8::1]:443")).toBe(403)
      expect(await status("10.0.0.1", "192.0.2.7, 10.0.0.1")).toBe(200)
      // an untrusted peer's header is ignored: its own address counts
      expect(await status("10.9.9.9", "unknown")).toBe(200)
      expect(await status("203.0.113.5", "192.0.2.7")).toBe(403)
    } finally {
      await dispose()
    }
  })
})
