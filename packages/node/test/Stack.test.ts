/**
 * The composed stack on a fresh SQLite database: bootstrap keys, a sandbox task run to a served file, billing of
 * live keys, the admin API with a token, tenant isolation and the OpenAPI document.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { BillingLedger } from "@mediagate/billing/Ledger"
import { Client, Errors } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

const adminToken = "stack-test-admin-token"

/** `Mediagate.layer` on a fresh SQLite database, served on a free port, with the first account bootstrapped. */
const start = (options: Mediagate.Options = {}) =>
  Effect.gen(function*() {
    const dataDir = mkdtempSync(join(tmpdir(), "mg-stack-"))
    const context = yield* Layer.build(Mediagate.layer({
      dataDir,
      fileSecret: "stack-test-secret",
      settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01" },
      ...options
    }))
    const service = Context.get(context, Mediagate.Mediagate)
    const server = yield* Server.listen(yield* NodeHttpServer.makeHandler(service.httpApp), {
      port: 0,
      host: "127.0.0.1"
    })
    const keys = Option.getOrThrow(yield* service.bootstrap())
    return { baseUrl: Server.urlOf(server), context, keys }
  })

describe("the composed stack", () => {
  it.live(
    "runs a sandbox task to a served file, charges live keys, keeps accounts apart",
    () =>
      Effect.gen(function*() {
        const { baseUrl, keys } = yield* start()
        const sandbox = yield* Client.make({ baseUrl, apiKey: keys.test.key })
        const live = yield* Client.make({ baseUrl, apiKey: keys.live.key })

        const ack = yield* sandbox.generation.vendor4TextToImage({
          payload: { model: "vendor4-4-0", input: { prompt: "a red kite", size: "1K" } },
          headers: {}
        })
        let task = yield* sandbox.tasks.get({ path: { id: ack.id } })
        for (let i = 0; i < 200 && task.status !== "succeeded" && task.status !== "failed"; i++) {
          yield* Effect.sleep(50)
          task = yield* sandbox.tasks.get({ path: { id: ack.id } })
        }
        expect(task).toMatchObject({ status: "succeeded", cost: 0 })
        const file = yield* Effect.promise(() =>
          fetch(task.result![0]!.url.replace(/^http:\/\/localhost:\d+/, baseUrl))
        )
        expect(file.status).toBe(200)
        expect(file.headers.get("content-type")).toBe("image/png")
        expect((yield* Effect.promise(() => file.arrayBuffer())).byteLength).toBe(task.result![0]!.size_bytes)

        // live keys are charged: the bootstrap account has no balance
        const refused = yield* Effect.flip(live.generation.vendor4TextToImage({
          payload: { model: "vendor4-4-0", input: { prompt: "x" } },
          headers: {}
        }))
        expect(refused).toBeInstanceOf(Errors.InsufficientBalance)
        const balance = yield* live.balance.get()
        expect(balance).toMatchObject({ balance: 0, billingMode: "prepaid" })

        // a key of the same account created through the API, and one revoked
        const created = yield* live.apiKeys.create({
          payload: { name: "ci", permissions: { "tasks:read": true } },
          headers: {}
        })
        const readOnly = yield* Client.make({ baseUrl, apiKey: created.key })
        // a live key sees only live tasks: the sandbox task is the test key's alone
        expect((yield* readOnly.tasks.list({ urlParams: {} })).pagination.total).toBe(0)
        expect(yield* Effect.flip(readOnly.tasks.get({ path: { id: ack.id } }))).toBeInstanceOf(Errors.TaskNotFound)
        expect((yield* sandbox.tasks.list({ urlParams: {} })).pagination.total).toBe(1)
        const denied = yield* Effect.flip(readOnly.balance.get())
        expect(denied).toBeInstanceOf(Errors.KeyPermissionDenied)
        yield* live.apiKeys.delete({ path: { id: created.id } })
        expect(yield* Effect.flip(readOnly.tasks.list({ urlParams: {} }))).toBeInstanceOf(Errors.KeyRevoked)

        // without an admin token the admin API does not exist
        const admin = yield* Client.make({ baseUrl, apiKey: adminToken })
        expect(yield* Effect.flip(admin.admin.getAccount({ path: { id: keys.account.id } }))).toBeInstanceOf(
          Errors.NotFound
        )

        // the OpenAPI document is served
        const spec = yield* Effect.promise(() => fetch(`${baseUrl}/api/v1/openapi.json`).then((r) => r.json()))
        expect((spec as { openapi: string }).openapi).toBe("3.1.0")
      }).pipe(Effect.provide(FetchHttpClient.layer), Effect.scoped),
    { timeout: 60_000 }
  )

  it.live(
    "another account's resources answer 404 on every route; auth outcomes of real keys",
    () =>
      Effect.gen(function*() {
        const { baseUrl, context } = yield* start({ adminToken })
        const admin = yield* Client.make({ baseUrl, apiKey: adminToken })
        const alice = yield* admin.admin.createAccount({ payload: { name: "Alice", balance: 100 } })
        const bob = yield* admin.admin.createAccount({ payload: { name: "Bob", balance: 100 } })
        const aliceKey = yield* admin.admin.createKey({ path: { id: alice.id }, payload: { name: "alice" } })
        const bobKey = yield* admin.admin.createKey({ path: { id: bob.id }, payload: { name: "bob" } })
        const a = yield* Client.make({ baseUrl, apiKey: aliceKey.key })
        const b = yield* Client.make({ baseUrl, apiKey: bobKey.key })

        const task = yield* a.generation.vendor3TextToVideo({
          payload: { model: "vendor3-3_fast", input: { prompt: "alice's [sim:fail]" } },
          headers: {}
        })
        const hook = yield* a.webhooks.create({
          payload: { url: "https://hooks.example.com/a", events: ["task.failed"] },
          headers: {}
        })
        const extraKey = yield* a.apiKeys.create({ payload: { name: "second" }, headers: {} })
        // Alice's task fails (refunded) so that retry would be allowed for her
        let state = yield* a.tasks.get({ path: { id: task.id } })
        for (let i = 0; i < 200 && state.status !== "failed"; i++) {
          yield* Effect.sleep(25)
          state = yield* a.tasks.get({ path: { id: task.id } })
        }
        expect(state).toMatchObject({ status: "failed", cost: 0 })
        const ledger = yield* Context.get(context, BillingLedger).entries(alice.id)
        expect(ledger.map((e) => [e.kind, e.amountMicros])).toEqual([["top_up", 100_000_000], ["charge", -1_200_000], [
          "refund",
          1_200_000
        ]])
        expect((yield* a.balance.get()).balance).toBe(100)

        const notFound = <A, E>(effect: Effect.Effect<A, E>, code: string) =>
          Effect.map(Effect.flip(effect), (error) => expect((error as { code?: string }).code).toBe(code))
        yield* notFound(b.tasks.get({ path: { id: task.id } }), "TASK_NOT_FOUND")
        yield* notFound(b.tasks.retry({ path: { id: task.id }, headers: {} }), "TASK_NOT_FOUND")
        yield* notFound(b.tasks.cancel({ path: { id: task.id } }), "TASK_NOT_FOUND")
        yield* notFound(b.apiKeys.delete({ path: { id: extraKey.id } }), "API_KEY_NOT_FOUND")
        yield* notFound(b.webhooks.delete({ path: { id: hook.id } }), "WEBHOOK_NOT_FOUND")
        yield* notFound(b.webhooks.test({ path: { id: hook.id } }), "WEBHOOK_NOT_FOUND")
        yield* notFound(b.webhooks.deliveries({ path: { id: hook.id }, urlParams: {} }), "WEBHOOK_NOT_FOUND")
        yield* notFound(b.webhooks.replay({ path: { id: hook.id, deliveryId: "dlv_x" } }), "WEBHOOK_NOT_FOUND")
        expect((yield* b.tasks.list({ urlParams: {} })).pagination.total).toBe(0)
        expect(yield* b.webhooks.list()).toEqual([])
        expect((yield* b.apiKeys.list()).map((k) => k.name)).toEqual(["bob"])
        expect((yield* b.balance.get()).balance).toBe(100)
        // Alice still sees all of hers
        const retried = yield* a.tasks.retry({ path: { id: task.id }, headers: {} })
        expect(retried.original_task_id).toBe(task.id)
        // the retry carries the same failing input: it fails and its charge is refunded (a failed task costs 0; the
        // retry's charge itself is asserted by the engine's retry tests)
        let again = yield* a.tasks.get({ path: { id: retried.id } })
        for (let i = 0; i < 200 && again.status !== "failed"; i++) {
          yield* Effect.sleep(25)
          again = yield* a.tasks.get({ path: { id: retried.id } })
        }
        expect(again).toMatchObject({ status: "failed", cost: 0, original_task_id: task.id })

        // real keys: an expired key and an IP-restricted one
        const soon = new Date(Date.now() + 1500)
        const expiring = yield* admin.admin.createKey({
          path: { id: alice.id },
          payload: { name: "short", expiresAt: soon }
        })
        const fenced = yield* admin.admin.createKey({
          path: { id: alice.id },
          payload: { name: "fenced", ipWhitelist: ["203.0.113.0/24"] }
        })
        const e = yield* Client.make({ baseUrl, apiKey: expiring.key })
        const f = yield* Client.make({ baseUrl, apiKey: fenced.key })
        // charged again and refunded once: back to 100
        expect((yield* e.balance.get()).balance).toBe(100)
        yield* Effect.sleep(1600)
        yield* notFound(e.balance.get(), "AUTH_TOKEN_EXPIRED")
        yield* notFound(f.balance.get(), "KEY_PERMISSION_DENIED")
        const nobody = yield* Client.make({ baseUrl, apiKey: `mg_live_${"Z".repeat(32)}` })
        yield* notFound(nobody.balance.get(), "AUTH_INVALID_TOKEN")
      }).pipe(Effect.provide(FetchHttpClient.layer), Effect.scoped),
    { timeout: 60_000 }
  )

  it.live(
    "derived keys stay inside their creator's limits; idempotent replays go to the creating key only",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* start({ adminToken })
        const admin = yield* Client.make({ baseUrl, apiKey: adminToken })
        const account = yield* admin.admin.createAccount({ payload: { name: "Acme", balance: 100 } })
        const owner = yield* Client.make({
          baseUrl,
          apiKey: (yield* admin.admin.createKey({ path: { id: account.id }, payload: { name: "owner" } })).key
        })
        const codeOf = <A, E>(effect: Effect.Effect<A, E>) =>
          Effect.map(Effect.flip(effect), (error) => (error as { code?: string }).code)
        const spend = (client: Client.MediagateClient) =>
          client.generation.vendor3TextToVideo({
            payload: { model: "vendor3-3_fast", input: { prompt: "kite" } },
            headers: {}
          })

        // a key limited to 1.20 (one vendor3-3_fast task) and allowed to derive keys, fenced to loopback
        const parentKey = yield* owner.apiKeys.create({
          payload: { name: "parent", spendLimit: 1.2, ipWhitelist: ["127.0.0.1"] },
          headers: {}
        })
        const parent = yield* Client.make({ baseUrl, apiKey: parentKey.key })
        // three children without a limit: each inherits what the parent has left, and all spend from it
        const children = yield* Effect.forEach([1, 2, 3], (i) =>
          Effect.flatMap(
            parent.apiKeys.create({ payload: { name: `child ${i}` }, headers: {} }),
            (created) => Effect.map(Client.make({ baseUrl, apiKey: created.key }), (client) => ({ created, client }))
          ))
        for (const { created } of children) {
          expect(created.spendLimit).toBe(1.2)
          expect(created.ipWhitelist).toEqual(["127.0.0.1"])
        }
        yield* spend(children[0]!.client)
        expect(yield* codeOf(spend(children[1]!.client))).toBe("SPEND_LIMIT_EXCEEDED")
        expect(yield* codeOf(spend(children[2]!.client))).toBe("SPEND_LIMIT_EXCEEDED")
        expect(yield* codeOf(spend(parent))).toBe("SPEND_LIMIT_EXCEEDED")
        expect((yield* owner.balance.get()).balance).toBe(98.8)
        // a wider whitelist (none: any address) is refused
        expect(yield* codeOf(parent.apiKeys.create({ payload: { name: "open", ipWhitelist: [] }, headers: {} })))
          .toBe("KEY_PERMISSION_DENIED")
        // revoking the parent disables every child at once
        yield* owner.apiKeys.delete({ path: { id: parentKey.id } })
        for (const { client } of children) expect(yield* codeOf(client.balance.get())).toBe("KEY_REVOKED")

        // idempotent replays: a full-access live key creates a key and a webhook with Idempotency-Key X
        const headers = { "idempotency-key": "X" }
        const liveKey = yield* owner.apiKeys.create({ payload: { name: "deploy" }, headers })
        const hook = yield* owner.webhooks.create({
          payload: { url: "https://hooks.example.com/x", events: ["task.completed"] },
          headers
        })
        expect((yield* owner.apiKeys.create({ payload: { name: "deploy" }, headers })).key).toBe(liveKey.key)
        expect(
          (yield* owner.webhooks.create({
            payload: { url: "https://hooks.example.com/x", events: ["task.completed"] },
            headers
          })).secret
        ).toBe(hook.secret)
        // a test key allowed to create keys and webhooks sends the same requests: its own, never the replay
        const testKey = yield* owner.apiKeys.create({
          payload: {
            name: "tester",
            environment: "test",
            permissions: { "api-keys:write": true, "webhooks:write": true }
          },
          headers: {}
        })
        const tester = yield* Client.make({ baseUrl, apiKey: testKey.key })
        const theirs = yield* tester.apiKeys.create({ payload: { name: "deploy" }, headers })
        expect(theirs.key).not.toBe(liveKey.key)
        expect(theirs.environment).toBe("test")
        expect(theirs.permissions).toEqual({ "api-keys:write": true, "webhooks:write": true })
        const theirHook = yield* tester.webhooks.create({
          payload: { url: "https://hooks.example.com/x", events: ["task.completed"] },
          headers
        })
        expect(theirHook.id).not.toBe(hook.id)
        expect(theirHook.secret).not.toBe(hook.secret)
        // a key without the permission gets the normal refusal
        const reader = yield* Client.make({
          baseUrl,
          apiKey: (yield* owner.apiKeys.create({
            payload: { name: "reader", permissions: { "tasks:read": true } },
            headers: {}
          }))
            .key
        })
        expect(yield* codeOf(reader.apiKeys.create({ payload: { name: "deploy" }, headers }))).toBe(
          "KEY_PERMISSION_DENIED"
        )
        expect(
          yield* codeOf(reader.webhooks.create({
            payload: { url: "https://hooks.example.com/x", events: ["task.completed"] },
            headers
          }))
        ).toBe("KEY_PERMISSION_DENIED")
      }).pipe(Effect.provide(FetchHttpClient.layer), Effect.scoped),
    { timeout: 60_000 }
  )
})
