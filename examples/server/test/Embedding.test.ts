/**
 * The two embedding examples: an Effect app mounting Mediagate's `httpApp` next to its own routes, and a plain
 * Node app passing Mediagate's paths to the handler of `Mediagate.make`.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { HostApp } from "../src/embedding/effect-app.js"
import { makeApp } from "../src/embedding/node-app.js"

describe("embedding", () => {
  it.live("an Effect app serves its own routes and Mediagate's", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(HostApp.pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))))
      const address = Context.get(context, HttpServer.HttpServer).address
      const base = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
      expect(yield* Effect.promise(() => fetch(`${base}/`).then((r) => r.text()))).toBe("the host app")
      const anonymous = yield* Effect.promise(() => fetch(`${base}/api/v1/balance`))
      expect(anonymous.status).toBe(401)
      expect(((yield* Effect.promise(() => anonymous.json())) as { error: { code: string } }).error.code).toBe("AUTH_REQUIRED")
      expect((yield* Effect.promise(() => fetch(`${base}/api/v1/openapi.json`))).status).toBe(200)
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it("a plain Node app passes Mediagate's paths to Mediagate's handler", async () => {
    const { listener, mediagate } = makeApp()
    const server: Server = createServer((req, res) => void listener(req, res))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      await mediagate.ready
      expect(await fetch(`${base}/`).then((r) => r.text())).toBe("the host app")
      const invalid = await fetch(`${base}/api/v1/vendor3/text-to-video`, {
        method: "POST",
        headers: { authorization: `Bearer mg_live_${"x".repeat(32)}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "vendor3-3", input: { prompt: "p" } })
      })
      expect(invalid.status).toBe(401)
      expect(((await invalid.json()) as { error: { code: string } }).error.code).toBe("AUTH_INVALID_TOKEN")
      const spec = await fetch(`${base}/api/v1/openapi.json`)
      expect([spec.status, ((await spec.json()) as { openapi: string }).openapi]).toEqual([200, "3.1.0"])
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await mediagate.close()
    }
  }, 30_000)
})
