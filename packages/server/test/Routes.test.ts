import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { keys, SeededTasks } from "./fakes.js"
import { adminToken, send, TestServer } from "./harness.js"

describe("routes", () => {
  it.layer(TestServer)((it) => {
    it.effect("tasks: list, read, retry, cancel with their statuses", () =>
      Effect.gen(function*() {
        const seeded = yield* SeededTasks
        const list = yield* send("GET", "/api/v1/tasks?status=failed&limit=5", { token: keys.live })
        assert.strictEqual(list.status, 200)
        expect(list.body.success).toBe(true)
        expect(list.body.data.map((t: { id: string }) => t.id)).toEqual([seeded.failed])
        expect(list.body.pagination).toEqual({ cursor: null, hasMore: false, total: 1 })

        const read = yield* send("GET", `/api/v1/tasks/${seeded.failed}`, { token: keys.live })
        assert.strictEqual(read.status, 200)
        expect(read.body.data).toMatchObject({ id: seeded.failed, status: "failed", error: { code: "PROVIDER_ERROR" } })

        const retry = yield* send("POST", `/api/v1/tasks/${seeded.failed}/retry`, { token: keys.live })
        assert.strictEqual(retry.status, 201)
        expect(retry.body.data).toMatchObject({
          original_task_id: seeded.failed,
          status: "pending",
          type: "video",
          provider: "vendor3",
          model: "vendor3-3"
        })
        expect(retry.body.data.id).not.toBe(seeded.failed)

        const notRetryable = yield* send("POST", `/api/v1/tasks/${seeded.running}/retry`, { token: keys.live })
        assert.strictEqual(notRetryable.status, 409)
        assert.strictEqual(notRetryable.body.error.code, "TASK_NOT_RETRYABLE")

        const cancel = yield* send("POST", `/api/v1/tasks/${seeded.pending}/cancel`, { token: keys.live })
        assert.strictEqual(cancel.status, 200)
        assert.strictEqual(cancel.body.data.status, "cancelled")
        const cancelAgain = yield* send("POST", `/api/v1/tasks/${seeded.pending}/cancel`, { token: keys.live })
        assert.strictEqual(cancelAgain.status, 409)
        assert.strictEqual(cancelAgain.body.error.code, "TASK_NOT_CANCELLABLE")

        const unknown = yield* send("GET", "/api/v1/tasks/task_nope", { token: keys.live })
        assert.strictEqual(unknown.status, 404)
        expect(unknown.body).toEqual({
          success: false,
          error: { code: "TASK_NOT_FOUND", message: "task task_nope not found" }
        })
      }))

    it.effect("a task of another account is answered exactly like an unknown one", () =>
      Effect.gen(function*() {
        const seeded = yield* SeededTasks
        for (
          const [method, path] of [
            ["GET", `/api/v1/tasks/${seeded.otherAccount}`],
            ["POST", `/api/v1/tasks/${seeded.otherAccount}/retry`],
            ["POST", `/api/v1/tasks/${seeded.otherAccount}/cancel`]
          ] as const
        ) {
          const answer = yield* send(method, path, { token: keys.live })
          assert.strictEqual(answer.status, 404, path)
          assert.strictEqual(answer.body.error.code, "TASK_NOT_FOUND")
          expect(answer.body.error.message).toBe(`task ${seeded.otherAccount} not found`)
        }
      }))

    it.effect("balance, voices, api keys and webhooks answer with their envelopes and statuses", () =>
      Effect.gen(function*() {
        const balance = yield* send("GET", "/api/v1/balance", { token: keys.live })
        assert.strictEqual(balance.status, 200)
        expect(balance.body.data).toMatchObject({ balance: 12.5, billingMode: "prepaid", monthlySpendLimit: null })

        const voices = yield* send("GET", "/api/v1/vendor9/voices?name=ALB", { token: keys.live })
        assert.strictEqual(voices.status, 200)
        expect(voices.body.data).toEqual({
          voices: [{ voice_id: "v_alba", name: "Alba", description: "Warm narrator" }],
          total: 1
        })

        const created = yield* send("POST", "/api/v1/api-keys", {
          token: keys.live,
          json: { name: "ci", spendLimit: 5, permissions: { "video:create": true }, ipWhitelist: ["10.0.0.0/8"] }
        })
        assert.strictEqual(created.status, 201)
        expect(created.body.data.key).toMatch(/^mg_live_[A-Za-z0-9]{32}$/)
        expect(created.body.data).toMatchObject({ name: "ci", spendLimit: 5, ipWhitelist: ["10.0.0.0/8"] })
        const badPermission = yield* send("POST", "/api/v1/api-keys", {
          token: keys.live,
          json: { name: "ci", permissions: { "video:delete": true } }
        })
        assert.strictEqual(badPermission.status, 400)
        expect(badPermission.body.error.message).toBe("permissions.video:delete: is not a known field")
        const badIp = yield* send("POST", "/api/v1/api-keys", {
          token: keys.live,
          json: { name: "ci", ipWhitelist: ["10.0.0.300"] }
        })
        assert.strictEqual(badIp.status, 400)
        expect(badIp.body.error.message).toBe("ipWhitelist[0]: must be an IP address or CIDR range")
        const listKeys = yield* send("GET", "/api/v1/api-keys", { token: keys.live })
        assert.strictEqual(listKeys.status, 200)
        expect(listKeys.body.data.every((k: Record<string, unknown>) => !("key" in k))).toBe(true)
        const deleted = yield* send("DELETE", "/api/v1/api-keys/key_test", { token: keys.live })
        assert.strictEqual(deleted.status, 200)
        expect(deleted.body).toEqual({ success: true, data: { id: "key_test", deleted: true } })
        const deleteOther = yield* send("DELETE", "/api/v1/api-keys/key_other", { token: keys.live })
        assert.strictEqual(deleteOther.status, 404)
        assert.strictEqual(deleteOther.body.error.code, "API_KEY_NOT_FOUND")

        const hook = yield* send("POST", "/api/v1/webhooks", {
          token: keys.live,
          json: { url: "https://hooks.example.com/in", events: ["task.completed", "task.failed"] }
        })
        assert.strictEqual(hook.status, 201)
        expect(hook.body.data.secret).toMatch(/^whsec_/)
        const badEvent = yield* send("POST", "/api/v1/webhooks", {
          token: keys.live,
          json: { url: "https://hooks.example.com/in", events: ["task.started"] }
        })
        assert.strictEqual(badEvent.status, 400)
        expect(badEvent.body.error.message).toContain("events[0]: must be one of")
        const privateHook = yield* send("POST", "/api/v1/webhooks", {
          token: keys.live,
          json: { url: "http://10.1.2.3/in", events: ["task.completed"] }
        })
        assert.strictEqual(privateHook.status, 400)
        expect(privateHook.body.error.message).toBe("url: address 10.1.2.3 is not a public address")
        assert.strictEqual((yield* send("GET", "/api/v1/webhooks", { token: keys.live })).status, 200)
        const test = yield* send("POST", "/api/v1/webhooks/wh_1/test", { token: keys.live })
        assert.strictEqual(test.status, 200)
        expect(test.body.data).toEqual({ delivered: true, statusCode: 200, durationMs: 3, error: null })
        const deliveries = yield* send("GET", "/api/v1/webhooks/wh_1/deliveries", { token: keys.live })
        assert.strictEqual(deliveries.status, 200)
        expect(deliveries.body.pagination).toEqual({ cursor: null, hasMore: false, total: 0 })
        const byState = yield* send("GET", "/api/v1/webhooks/wh_1/deliveries?status=failed", { token: keys.live })
        assert.strictEqual(byState.status, 200)
        const badState = yield* send("GET", "/api/v1/webhooks/wh_1/deliveries?status=lost", { token: keys.live })
        assert.strictEqual(badState.status, 400)
        expect(badState.body.error).toMatchObject({ code: "VALIDATION_ERROR" })
        expect(badState.body.error.message).toContain("status: must be one of \"pending\", \"succeeded\", \"failed\"")
        const replay = yield* send("POST", "/api/v1/webhooks/wh_1/deliveries/dlv_x/replay", { token: keys.live })
        assert.strictEqual(replay.status, 404)
        assert.strictEqual(replay.body.error.code, "DELIVERY_NOT_FOUND")
        const deleteHook = yield* send("DELETE", "/api/v1/webhooks/wh_2", { token: keys.live })
        assert.strictEqual(deleteHook.status, 404)
        assert.strictEqual(deleteHook.body.error.code, "WEBHOOK_NOT_FOUND")
      }))

    it.effect("authentication outcomes follow the order of decisions.md §5", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [Record<string, string>, number, string]> = [
          [{}, 401, "AUTH_REQUIRED"],
          [{ authorization: "" }, 401, "AUTH_REQUIRED"],
          [{ authorization: "Basic Zm9vOmJhcg==" }, 401, "AUTH_INVALID_TOKEN"],
          [{ authorization: "Bearer mg_live_short" }, 401, "AUTH_INVALID_TOKEN"],
          [{ authorization: `Bearer mg_live_${"Q".repeat(32)}` }, 401, "AUTH_INVALID_TOKEN"],
          [{ authorization: `Bearer ${keys.revoked}` }, 403, "KEY_REVOKED"],
          [{ authorization: `Bearer ${keys.expired}` }, 401, "AUTH_TOKEN_EXPIRED"],
          [{ authorization: `Bearer ${keys.ipLocked}` }, 403, "KEY_PERMISSION_DENIED"]
        ]
        for (const [headers, status, code] of cases) {
          const answer = yield* send("GET", "/api/v1/balance", { headers })
          assert.strictEqual(answer.status, status, JSON.stringify(headers))
          assert.strictEqual(answer.body.error.code, code, JSON.stringify(headers))
        }
        const ip = yield* send("GET", "/api/v1/balance", { token: keys.ipLocked })
        expect(ip.body.error.message).toBe("IP address not allowed for this key")
        // X-Forwarded-For is not honoured from an untrusted peer
        const spoofed = yield* send("GET", "/api/v1/balance", {
          token: keys.ipLocked,
          headers: { "x-forwarded-for": "10.1.1.1" }
        })
        assert.strictEqual(spoofed.status, 403)
      }))

    it.effect("every route checks its permission", () =>
      Effect.gen(function*() {
        const seeded = yield* SeededTasks
        const routes: ReadonlyArray<readonly ["GET" | "POST" | "DELETE", string, unknown?]> = [
          ["POST", "/api/v1/vendor3/text-to-video", { model: "vendor3-3", input: { prompt: "p" } }],
          ["POST", "/api/v1/vendor4/text-to-image", { model: "vendor4-4-0", input: { prompt: "p" } }],
          ["GET", "/api/v1/tasks"],
          ["GET", `/api/v1/tasks/${seeded.failed}`],
          ["POST", `/api/v1/tasks/${seeded.failed}/retry`],
          ["POST", `/api/v1/tasks/${seeded.failed}/cancel`],
          ["GET", "/api/v1/vendor9/voices"],
          ["GET", "/api/v1/balance"],
          ["POST", "/api/v1/api-keys", { name: "x" }],
          ["GET", "/api/v1/api-keys"],
          ["DELETE", "/api/v1/api-keys/key_live"],
          ["POST", "/api/v1/webhooks", { url: "https://h.example.com", events: ["task.failed"] }],
          ["GET", "/api/v1/webhooks"],
          ["DELETE", "/api/v1/webhooks/wh_1"],
          ["POST", "/api/v1/webhooks/wh_1/test"],
          ["GET", "/api/v1/webhooks/wh_1/deliveries"],
          ["POST", "/api/v1/webhooks/wh_1/deliveries/dlv_1/replay"]
        ]
        for (const [method, path, json] of routes) {
          const denied = yield* send(method, path, {
            token: keys.noPermissions,
            ...(json === undefined ? {} : { json })
          })
          assert.strictEqual(denied.status, 403, `${method} ${path}: ${denied.text}`)
          assert.strictEqual(denied.body.error.code, "KEY_PERMISSION_DENIED")
        }
        // a read-only key reads tasks but cannot create or retry
        assert.strictEqual((yield* send("GET", "/api/v1/tasks", { token: keys.readOnly })).status, 200)
        assert.strictEqual(
          (yield* send("POST", `/api/v1/tasks/${seeded.failed}/retry`, { token: keys.readOnly })).status,
          403
        )
        // a key restricted to vendor1 video
        const v1 = yield* send("POST", "/api/v1/vendor1/text-to-video", {
          token: keys.vendor1Only,
          json: { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 5 } }
        })
        assert.strictEqual(v1.status, 201)
        const v3 = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.vendor1Only,
          json: { model: "vendor3-3", input: { prompt: "p" } }
        })
        assert.strictEqual(v3.status, 403)
        expect(v3.body.error.message).toBe("key is not allowed to use provider vendor3")
        const retryVendor3 = yield* send("POST", `/api/v1/tasks/${seeded.failed}/retry`, { token: keys.vendor1Only })
        assert.strictEqual(retryVendor3.status, 403)
      }))

    it.effect("admin API: token required, accounts, credits and keys", () =>
      Effect.gen(function*() {
        const missing = yield* send("POST", "/admin/v1/accounts", { json: { name: "x" } })
        assert.strictEqual(missing.status, 401)
        assert.strictEqual(missing.body.error.code, "AUTH_REQUIRED")
        const wrong = yield* send("GET", "/admin/v1/accounts/acct_main", { token: "nope" })
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(wrong.body.error.code, "AUTH_INVALID_TOKEN")
        const apiKeyIsNotAdmin = yield* send("GET", "/admin/v1/accounts/acct_main", { token: keys.live })
        assert.strictEqual(apiKeyIsNotAdmin.status, 401)

        const created = yield* send("POST", "/admin/v1/accounts", {
          token: adminToken,
          json: { name: "Acme", balance: 10 }
        })
        assert.strictEqual(created.status, 201)
        expect(created.body.data).toMatchObject({ id: "acct_new", name: "Acme", balance: 10, billingMode: "prepaid" })
        const read = yield* send("GET", "/admin/v1/accounts/acct_main", { token: adminToken })
        assert.strictEqual(read.status, 200)
        const unknown = yield* send("GET", "/admin/v1/accounts/acct_x", { token: adminToken })
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.body.error.code, "ACCOUNT_NOT_FOUND")
        const patched = yield* send("PATCH", "/admin/v1/accounts/acct_main", {
          token: adminToken,
          json: { billingMode: "postpaid", monthlySpendLimit: null }
        })
        assert.strictEqual(patched.status, 200)
        const badMode = yield* send("PATCH", "/admin/v1/accounts/acct_main", {
          token: adminToken,
          json: { billingMode: "free" }
        })
        assert.strictEqual(badMode.status, 400)
        expect(badMode.body.error.message).toBe("billingMode: must be one of \"prepaid\", \"postpaid\"")
        const credit = yield* send("POST", "/admin/v1/accounts/acct_main/credits", {
          token: adminToken,
          json: { amount: 2.5 }
        })
        assert.strictEqual(credit.status, 200)
        assert.strictEqual(credit.body.data.balance, 15)
        const negative = yield* send("POST", "/admin/v1/accounts/acct_main/credits", {
          token: adminToken,
          json: { amount: -1 }
        })
        assert.strictEqual(negative.status, 400)
        const tooPrecise = yield* send("POST", "/admin/v1/accounts/acct_main/credits", {
          token: adminToken,
          json: { amount: 0.0000001 }
        })
        assert.strictEqual(tooPrecise.status, 400)
        expect(tooPrecise.body.error.message).toContain("at most 6 decimals")
        const key = yield* send("POST", "/admin/v1/accounts/acct_main/api-keys", {
          token: adminToken,
          json: { name: "ops" }
        })
        assert.strictEqual(key.status, 201)
        expect(key.body.data.key).toMatch(/^mg_live_/)
      }))
  })
})
