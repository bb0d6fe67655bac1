/**
 * The embedding examples (docs/embedding.md), one per host: Express, Fastify, Hono (`@hono/node-server`), plain
 * `node:http` and an Effect app, each mounting Mediagate under `/media` beside its own routes. For each: the host's
 * routes stay its own; the API answers below the prefix (a task created and read with the bootstrapped key); the
 * dashboard's page at three depths (`/media/dashboard`, `/media/dashboard/`, a task's page) names asset URLs that
 * resolve below the prefix; and in headless Chromium the dashboard loads at `/media/dashboard`, signs in and lists
 * the task through `/media/api/v1`, opens its page and reloads it there, with no answer a 404. The same behind a
 * reverse proxy that serves the `node:http` example's `/media` at `/edge`. Without Chromium the browser tests say
 * so and skip (under `CI=true` they fail: `@mediagate/testing/chromium`).
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpServer from "@effect/platform/HttpServer"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { getRequestListener } from "@hono/node-server"
import { Mediagate } from "@mediagate/node"
import * as Chromium from "@mediagate/testing/chromium"
import * as Dashboard from "@mediagate/testing/dashboard"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Browser } from "playwright-core"
import * as EffectApp from "../src/embedding/effect-app.js"
import * as ExpressApp from "../src/embedding/express-app.js"
import * as FastifyApp from "../src/embedding/fastify-app.js"
import * as HonoApp from "../src/embedding/hono-app.js"
import * as NodeApp from "../src/embedding/node-app.js"

const prefix = "/media"

/** A host app listening on a free port, with the bootstrapped account's test key. */
interface Running {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string
  readonly testKey: string
  readonly close: () => Promise<void>
}

/**
 * The settings every example runs with here: its own data directory, file links on the test server's origin (the
 * dashboard previews results; its CSP takes images from its own origin), simulated upstreams at 1/100 of their times.
 */
const options = (origin: string, mount = prefix): Mediagate.Options => ({
  dataDir: mkdtempSync(join(tmpdir(), "mediagate-embedding-")),
  publicBaseUrl: `${origin}${mount}`,
  settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01" }
})

/** A `node:http` server listening on a free port (the hosts below are attached to it), and its origin. */
const listen = async () => {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

const closing = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** A started `Mediagate.make` handle: ready, and its first account's test key. */
const testKeyOf = async (mediagate: Mediagate.Handle): Promise<string> => {
  await mediagate.ready
  const created = await mediagate.bootstrap()
  if (created === undefined) throw new Error("bootstrap created no account")
  return created.test.key
}

/** Each example as it serves requests: `app.listen(...)` and `serve(...)` do the same on a port of their own. */
const hosts: ReadonlyArray<{ readonly name: string; readonly start: () => Promise<Running> }> = [
  {
    name: "Express",
    start: async () => {
      const { origin, server } = await listen()
      const { app, mediagate } = ExpressApp.makeApp(options(origin))
      server.on("request", app)
      return { origin, testKey: await testKeyOf(mediagate), close: () => closing(server).then(mediagate.close) }
    }
  },
  {
    name: "Fastify",
    start: async () => {
      const { origin, server } = await listen()
      const { app, mediagate } = FastifyApp.makeApp(options(origin))
      await app.ready()
      server.on("request", app.routing)
      return {
        origin,
        testKey: await testKeyOf(mediagate),
        close: () => closing(server).then(() => app.close()).then(mediagate.close)
      }
    }
  },
  {
    name: "Hono",
    start: async () => {
      const { origin, server } = await listen()
      const { app, mediagate } = HonoApp.makeApp(options(origin))
      server.on("request", getRequestListener(app.fetch))
      return { origin, testKey: await testKeyOf(mediagate), close: () => closing(server).then(mediagate.close) }
    }
  },
  {
    name: "node:http",
    start: async () => {
      const { origin, server } = await listen()
      const { listener, mediagate } = NodeApp.makeApp(options(origin))
      server.on("request", listener)
      return { origin, testKey: await testKeyOf(mediagate), close: () => closing(server).then(mediagate.close) }
    }
  },
  {
    name: "Effect",
    start: async () => {
      const scope = Effect.runSync(Scope.make())
      const close = () => Effect.runPromise(Scope.close(scope, Exit.void))
      try {
        // the server first, for its origin; then the app on it
        const http = await Effect.runPromise(Layer.buildWithScope(
          NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }),
          scope
        ))
        const address = Context.get(http, HttpServer.HttpServer).address
        if (address._tag !== "TcpAddress") throw new Error("no TCP address")
        const origin = `http://127.0.0.1:${address.port}`
        const context = await Effect.runPromise(Layer.buildWithScope(
          EffectApp.HostApp.pipe(
            Layer.provideMerge(EffectApp.MediagateLive(options(origin))),
            Layer.provide(Layer.succeedContext(http))
          ),
          scope
        ))
        const keys = await Effect.runPromise(Context.get(context, Mediagate.Mediagate).bootstrap())
        if (Option.isNone(keys)) throw new Error("bootstrap created no account")
        return { origin, testKey: keys.value.test.key, close }
      } catch (error) {
        await close()
        throw error
      }
    }
  }
]

/** The JSON answer of a request below the prefix with the test key. */
const api = async (running: Running, method: string, path: string, body?: unknown) => {
  const answer = await fetch(`${running.origin}${prefix}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${running.testKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: answer.status, body: await answer.json() as { data: { id: string; status: string } } }
}

const createTask = async (running: Running, prompt: string) => {
  const created = await api(running, "POST", "/api/v1/vendor4/text-to-image", {
    model: "vendor4-4-0",
    input: { prompt, size: "1K" }
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  return created.body.data.id
}

const runBrowser = Chromium.available("the embedding examples' browser tests")
const itBrowser = runBrowser ? it : it.skip
let browser: Browser | undefined
beforeAll(async () => {
  if (runBrowser) browser = await Chromium.launch()
})
afterAll(() => browser?.close())

for (const host of hosts) {
  describe(`Mediagate in ${host.name}, mounted under ${prefix}`, () => {
    let running: Running
    beforeAll(async () => {
      running = await host.start()
    })
    afterAll(() => running?.close())

    it("keeps the host's routes and serves the API below the prefix", async () => {
      expect(await fetch(`${running.origin}/`).then((r) => r.text())).toBe("the host app")
      const anonymous = await fetch(`${running.origin}${prefix}/api/v1/balance`)
      expect(anonymous.status).toBe(401)
      expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe("AUTH_REQUIRED")
      // no mount at the origin's root
      expect((await fetch(`${running.origin}/api/v1/balance`)).status).not.toBe(401)
      const spec = await fetch(`${running.origin}${prefix}/api/v1/openapi.json`)
      expect([spec.status, ((await spec.json()) as { openapi: string }).openapi]).toEqual([200, "3.1.0"])
      const id = await createTask(running, "a kite over the harbour")
      const read = await api(running, "GET", `/api/v1/tasks/${id}`)
      expect([read.status, read.body.data.id]).toEqual([200, id])
    })

    it("names dashboard assets that resolve below the prefix, with and without a trailing slash, at any depth", () =>
      Dashboard.expectAssetsBelow(`${running.origin}${prefix}`))

    itBrowser("loads the dashboard in Chromium, signs in and reads tasks through the prefixed API", async () => {
      const id = await createTask(running, "a heron in the reeds")
      const mount = `${running.origin}${prefix}`
      await Dashboard.expectSignIn(browser!, mount, running.testKey, { id, prompt: "a heron in the reeds" })
    })
  })
}

describe("Mediagate behind a reverse proxy that serves the node:http example's /media at /edge", () => {
  let running: Running
  let edge: string
  beforeAll(async () => {
    const proxy = await listen()
    const { origin, server } = await listen()
    // the proxy strips its own prefix and puts the host's: /edge/dashboard → /media/dashboard
    proxy.server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      const url = req.url ?? "/"
      if (url !== "/edge" && !url.startsWith("/edge/")) return void res.writeHead(404).end()
      const target = `${origin}${prefix}${url.slice("/edge".length)}`
      const forwarded = request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      forwarded.on("error", () => res.writeHead(502).end())
      req.pipe(forwarded)
    })
    // file links are the public URLs, the proxy's
    const { listener, mediagate } = NodeApp.makeApp(options(proxy.origin, "/edge"))
    server.on("request", listener)
    edge = `${proxy.origin}/edge`
    running = {
      origin,
      testKey: await testKeyOf(mediagate),
      close: () => closing(proxy.server).then(() => closing(server)).then(mediagate.close)
    }
  })
  afterAll(() => running?.close())

  it("names dashboard assets that resolve below the proxy's prefix", () => Dashboard.expectAssetsBelow(edge))

  itBrowser("loads the dashboard in Chromium at /edge/dashboard, signs in, reads tasks through /edge", async () => {
    const id = await createTask(running, "a swift under the bridge")
    await Dashboard.expectSignIn(browser!, edge, running.testKey, { id, prompt: "a swift under the bridge" })
  })
})
