import { NodeHttpServer } from "@effect/platform-node"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { ClientAddress, Http, ServerConfig } from "@mediagate/server"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { keys, PortsFake } from "./fakes.js"
import { send } from "./harness.js"

/** A host application with its own routes, mounting Mediagate's app under /api and /admin. */
const HostApp = Layer.unwrapScoped(Effect.gen(function*() {
  const mediagate = yield* Http.makeHttpApp
  const router = HttpRouter.empty.pipe(
    HttpRouter.get("/host/health", HttpServerResponse.text("host ok")),
    HttpRouter.mountApp("/api", mediagate, { includePrefix: true }),
    HttpRouter.mountApp("/admin", mediagate, { includePrefix: true })
  )
  return HttpServer.serve(router)
})).pipe(
  Layer.provideMerge(NodeHttpServer.layerTest),
  Layer.provide(PortsFake),
  Layer.provide(ServerConfig.layer())
)

describe("embedding", () => {
  layer(HostApp)("mounted into another Effect HTTP app", (it) => {
    it.effect("serves the host's routes and Mediagate's side by side", () =>
      Effect.gen(function*() {
        const host = yield* send("GET", "/host/health")
        assert.strictEqual(host.status, 200)
        assert.strictEqual(host.text, "host ok")
        const balance = yield* send("GET", "/api/v1/balance", { token: keys.live })
        assert.strictEqual(balance.status, 200)
        assert.strictEqual(balance.body.data.balance, 12.5)
        const invalid = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          json: { model: "vendor3-3", input: {} }
        })
        assert.strictEqual(invalid.status, 400)
        expect(invalid.body.error.message).toBe("input.prompt is required")
        const unknown = yield* send("GET", "/api/v1/unknown", { token: keys.live })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.body.error.code, "NOT_FOUND")
      }))
  })

  it("exports a web handler (Request in, Response out) with the client address in its context", async () => {
    const { dispose, handler } = Http.toWebHandler(
      Layer.mergeAll(PortsFake, ServerConfig.layer({ trustedProxies: ["10.0.0.1"] }))
    )
    try {
      const ok = await handler(
        new Request("http://mediagate.local/api/v1/balance", { headers: { authorization: `Bearer ${keys.live}` } })
      )
      expect(ok.status).toBe(200)
      expect(await ok.json()).toMatchObject({ success: true, data: { balance: 12.5 } })

      const created = await handler(
        new Request("http://mediagate.local/api/v1/vendor3/text-to-video", {
          method: "POST",
          headers: { authorization: `Bearer ${keys.live}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "vendor3-3", input: { prompt: "p" } })
        })
      )
      expect(created.status).toBe(201)

      // the IP whitelist sees the address the embedding server passes in
      const locked = (address: string, forwardedFor?: string) =>
        handler(
          new Request("http://mediagate.local/api/v1/balance", {
            headers: {
              authorization: `Bearer ${keys.ipLocked}`,
              ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor })
            }
          }),
          Context.make(ClientAddress.RemoteAddress, address)
        )
      expect((await locked("10.9.8.7")).status).toBe(200)
      expect((await locked("::ffff:10.9.8.7")).status).toBe(200)
      expect((await locked("203.0.113.5")).status).toBe(403)
      expect((await locked("10.0.0.1", "198.51.100.1, 192.0.2.7")).status).toBe(200)
      expect((await locked("10.0.0.1", "192.0.2.7, 198.51.100.1")).status).toBe(403)
      const missingRoute = await handler(new Request("http://mediagate.local/api/v1/none"))
      expect(missingRoute.status).toBe(404)
      expect(await missingRoute.json()).toMatchObject({ success: false, error: { code: "NOT_FOUND" } })
    } finally {
      await dispose()
    }
  })

  it("a web handler reads a streamed body under the limit: an endless one is 413 and read no further", async () => {
    const { dispose, handler } = Http.toWebHandler(
      Layer.mergeAll(PortsFake, ServerConfig.layer({ maxBodyBytes: 4096 }))
    )
    /** A body of `chunks` chunks of 1 KiB (endless when undefined), counting the chunks the handler pulled. */
    const streamed = (text: string | undefined, chunks?: number) => {
      let pulled = 0
      const bytes = new TextEncoder().encode(text ?? " ".repeat(1024))
      const body = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          pulled++
          if (chunks !== undefined && pulled > chunks) return controller.close()
          controller.enqueue(bytes)
        }
      })
      const request = new Request("http://mediagate.local/api/v1/vendor3/text-to-video", {
        method: "POST",
        headers: { authorization: `Bearer ${keys.live}`, "content-type": "application/json" },
        body,
        duplex: "half"
      } as RequestInit)
      return { request, pulled: () => pulled }
    }
    try {
      const endless = streamed(undefined)
      const tooLarge = await handler(endless.request)
      expect(tooLarge.status).toBe(413)
      expect(await tooLarge.json()).toMatchObject({ success: false, error: { code: "PAYLOAD_TOO_LARGE" } })
      // 4 KiB allowed: the fifth chunk crosses the limit and reading stops there (a few more may be buffered)
      expect(endless.pulled()).toBeGreaterThanOrEqual(5)
      expect(endless.pulled()).toBeLessThan(10)

      // a body streamed in one chunk under the limit is read as usual
      const small = streamed(JSON.stringify({ model: "vendor3-3", input: { prompt: "p" } }), 1)
      expect((await handler(small.request)).status).toBe(201)
      // a POST without a body is an empty one (a validation error, not a failure to read)
      const empty = await handler(
        new Request("http://mediagate.local/api/v1/vendor3/text-to-video", {
          method: "POST",
          headers: { authorization: `Bearer ${keys.live}`, "content-type": "application/json" }
        })
      )
      expect(empty.status).toBe(400)
      expect(await empty.json()).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" } })
    } finally {
      await dispose()
    }
  })
})
