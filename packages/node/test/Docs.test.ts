/**
 * The documentation and caching as the production listener serves them (Http.nodeListener: the requests the
 * envelope dispatches and those the platform's listener serves): `Cache-Control: no-store` on `/api/v1` and
 * `/admin/v1` answers, the OpenAPI documents' server (`MEDIAGATE_PUBLIC_BASE_URL`), and `/docs` in Chromium showing
 * the public and the operator document.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Chromium from "@mediagate/testing/chromium"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Browser } from "playwright-core"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

const adminToken = "docs-test-admin-token"
const publicBaseUrl = "https://gateway.test/media"

/** The stack (SQLite, no workers) on the production listener, on a free port; its first account's keys. */
const start = async () => {
  const scope = Effect.runSync(Scope.make())
  const { baseUrl, live } = await Effect.runPromise(
    Effect.gen(function*() {
      const context = yield* Layer.build(Mediagate.layer({
        dataDir: mkdtempSync(join(tmpdir(), "mg-docs-")),
        fileSecret: "docs-test-secret",
        adminToken,
        workers: false,
        publicBaseUrl
      }))
      const service = Context.get(context, Mediagate.Mediagate)
      const server = yield* Server.listen(yield* service.listener, { port: 0, host: "127.0.0.1" })
      const keys = Option.getOrThrow(yield* service.bootstrap())
      return { baseUrl: Server.urlOf(server), live: keys.live.key }
    }).pipe(Scope.extend(scope))
  )
  return { baseUrl, live, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("docs and caching on the production listener", () => {
  let running: Awaited<ReturnType<typeof start>>
  beforeAll(async () => {
    running = await start()
  }, 60_000)
  afterAll(() => running?.close())

  it("no-store on every /api/v1 and /admin/v1 answer, dispatched or not, successes and errors", async () => {
    const auth = (token: string) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" })
    const requests: ReadonlyArray<readonly [string, string, number, RequestInit]> = [
      // dispatched by the envelope (a full key in the answer)
      ["POST", "/api/v1/api-keys", 201, { headers: auth(running.live), body: JSON.stringify({ name: "k" }) }],
      // served by the platform's listener (a query string)
      ["GET", "/api/v1/tasks?limit=5", 200, { headers: auth(running.live) }],
      ["GET", "/api/v1/balance", 401, {}],
      ["GET", "/api/v1/no-such-route", 404, {}],
      ["GET", "/admin/v1/system", 200, { headers: auth(adminToken) }],
      ["GET", "/admin/v1/system", 401, { headers: auth("not-the-token") }],
      ["GET", "/api/v1/openapi.json", 200, {}],
      ["GET", "/admin/v1/openapi.json", 200, {}]
    ]
    for (const [method, path, status, init] of requests) {
      const response = await fetch(`${running.baseUrl}${path}`, { method, ...init })
      await response.arrayBuffer()
      expect([response.status, response.headers.get("cache-control")], `${method} ${path}`)
        .toEqual([status, "no-store"])
    }
    const health = await fetch(`${running.baseUrl}/healthz`)
    expect(health.headers.get("cache-control")).toBeNull()
  })

  it("both documents name MEDIAGATE_PUBLIC_BASE_URL as their server", async () => {
    for (const path of ["/api/v1/openapi.json", "/admin/v1/openapi.json"]) {
      const document = await (await fetch(`${running.baseUrl}${path}`)).json() as { servers: unknown }
      expect(document.servers, path).toEqual([{ url: publicBaseUrl }])
    }
  })

  const describeBrowser = Chromium.available("docs browser test") ? describe : describe.skip
  describeBrowser("in Chromium", () => {
    let browser: Browser
    beforeAll(async () => {
      browser = await Chromium.launch()
    })
    afterAll(() => browser?.close())

    it("/docs shows the public API and, chosen in its selector, the operator API", async () => {
      const page = await browser.newPage()
      await page.goto(`${running.baseUrl}/docs`)
      await page.getByRole("heading", { name: "Mediagate API", exact: true }).waitFor({ timeout: 30_000 })
      await page.getByText("vendor1 text-to-video").first().waitFor()
      expect(await page.getByText("Create an account").count()).toBe(0)
      await page.getByRole("button", { name: /Mediagate API/ }).first().click()
      await page.getByText("Mediagate admin API").first().click()
      await page.getByRole("heading", { name: "Mediagate admin API", exact: true }).waitFor({ timeout: 30_000 })
      await page.getByText("Create an account").first().waitFor()
      expect(await page.getByText("vendor1 text-to-video").count()).toBe(0)
    }, 90_000)
  })
})
