/**
 * The estimate of a generation request (`POST /api/v1/<family>/<operation>/estimate`) through the production server
 * on SQLite: the price the key would pay (what the same request is then charged), 0 for a test key, the input with
 * the model's defaults filled in, the same checks and messages as the request itself, its permission, and nothing
 * charged or stored.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { call, servedStacks } from "./served.js"

const adminToken = "estimates-test-admin-token"
const serve = servedStacks()

describe("generation estimates", () => {
  it.live("price, defaults and checks of a request, without a task or a charge", () =>
    Effect.gen(function*() {
      const port = yield* serve({
        dataDir: mkdtempSync(join(tmpdir(), "mg-estimates-")),
        adminToken,
        fileSecret: "estimates-test-secret",
        workers: false
      })
      const base = `http://127.0.0.1:${port}`
      const admin = (method: string, path: string, body?: unknown) => call(base, method, path, adminToken, body)
      const account = (yield* admin("POST", "/admin/v1/accounts", { name: "estimates", balance: 100 })).body.data.id
      const keyOf = (body: Record<string, unknown>) =>
        Effect.map(admin("POST", `/admin/v1/accounts/${account}/api-keys`, body), (a) => a.body.data.key as string)
      const live = yield* keyOf({ name: "live", environment: "live" })
      const test = yield* keyOf({ name: "test", environment: "test" })
      const imagesOnly = yield* keyOf({
        name: "images",
        environment: "live",
        permissions: { "video:create": false, "image:create": true, "tasks:read": true }
      })
      const request = { model: "vendor3-3", input: { prompt: "a lighthouse at dusk" } }

      const estimated = yield* call(base, "POST", "/api/v1/vendor3/text-to-video/estimate", live, request)
      expect(estimated.status).toBe(200)
      const estimate = estimated.body.data
      expect(estimate).toMatchObject({ type: "text-to-video", provider: "vendor3", model: "vendor3-3" })
      expect(estimate.price).toBeGreaterThan(0)
      expect(estimate.price).toBe(estimate.live_price)
      expect(estimate.estimated_seconds).toBeGreaterThan(0)
      // the model's defaults filled in (vendor3's aspect ratio defaults to 16:9)
      expect(estimate.input).toMatchObject({ prompt: "a lighthouse at dusk", aspect_ratio: "16:9" })

      // nothing charged or stored
      const balance = () => Effect.map(call(base, "GET", "/api/v1/balance", live), (a) => a.body.data.balance)
      const before = yield* balance()
      const tasks = () => Effect.map(call(base, "GET", "/api/v1/tasks", live), (a) => a.body.pagination!.total)
      expect(yield* tasks()).toBe(0)
      // the request itself is charged exactly the estimate
      const created = yield* call(base, "POST", "/api/v1/vendor3/text-to-video", live, request)
      expect(created.status).toBe(201)
      const task = (yield* call(base, "GET", `/api/v1/tasks/${created.body.data.id}`, live)).body.data
      expect(task.cost).toBe(estimate.price)
      expect(task.input).toEqual(estimate.input)
      expect(yield* balance()).toBeCloseTo(before - estimate.price, 6)
      expect(yield* tasks()).toBe(1)

      // a test key pays nothing; the live price is still told
      const free = (yield* call(base, "POST", "/api/v1/vendor3/text-to-video/estimate", test, request)).body.data
      expect([free.price, free.live_price]).toEqual([0, estimate.live_price])

      // the checks and messages of the request itself
      const bad = { model: "vendor3-3", input: { prompt: "x", seed: 5 } }
      const refused = yield* call(base, "POST", "/api/v1/vendor3/text-to-video/estimate", live, bad)
      const refusedCreate = yield* call(base, "POST", "/api/v1/vendor3/text-to-video", live, bad)
      expect(refused.status).toBe(400)
      expect(refused.body.error!.code).toBe("VALIDATION_ERROR")
      expect(refused.body.error!.message).toBe(refusedCreate.body.error!.message)
      expect(refused.body.error!.message).toContain("seed")
      // the permission of the request: a key that may not make videos may not price them
      const denied = yield* call(base, "POST", "/api/v1/vendor3/text-to-video/estimate", imagesOnly, request)
      expect([denied.status, denied.body.error!.code]).toEqual([403, "KEY_PERMISSION_DENIED"])
      const unknown = yield* call(base, "POST", "/api/v1/vendor3/text-to-video/estimate", "mg_live_unknown", request)
      expect(unknown.status).toBe(401)
      expect(yield* tasks()).toBe(1)
    }), 60_000)
})
