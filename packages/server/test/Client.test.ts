import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, expect, it } from "@effect/vitest"
import { Client, Errors } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { keys, SeededTasks } from "./fakes.js"
import { adminToken, TestServer } from "./harness.js"

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

const client = (apiKey: string) =>
  Effect.flatMap(baseUrl, (url) => Client.make({ baseUrl: url, apiKey })).pipe(Effect.provide(FetchHttpClient.layer))

describe("typed client derived from the HttpApi", () => {
  it.layer(TestServer)((it) => {
    it.effect("creates, reads, lists and retries tasks with typed answers", () =>
      Effect.gen(function*() {
        const api = yield* client(keys.live)
        const seeded = yield* SeededTasks
        const ack = yield* api.generation.vendor3TextToVideo({
          payload: { model: "vendor3-3", input: { prompt: "a lighthouse" }, metadata: { ref: "abc" } },
          headers: {}
        })
        expect(ack).toMatchObject({ status: "pending", type: "text-to-video", provider: "vendor3", model: "vendor3-3" })
        const task = yield* api.tasks.get({ path: { id: ack.id } })
        expect(task.input).toEqual({ prompt: "a lighthouse", aspect_ratio: "16:9" })
        expect(task.metadata).toEqual({ ref: "abc" })
        const page = yield* api.tasks.list({ urlParams: { limit: 2 } })
        assert.strictEqual(page.data.length, 2)
        assert.isTrue(page.pagination.hasMore)
        const retry = yield* api.tasks.retry({ path: { id: seeded.failed }, headers: {} })
        assert.strictEqual(retry.original_task_id, seeded.failed)
        const balance = yield* api.balance.get()
        assert.strictEqual(balance.billingMode, "prepaid")
      }).pipe(Effect.provide(FetchHttpClient.layer)))

    it.effect("decodes error envelopes into the tagged errors", () =>
      Effect.gen(function*() {
        const api = yield* client(keys.live)
        const missing = yield* Effect.flip(api.tasks.get({ path: { id: "task_unknown" } }))
        assert.instanceOf(missing, Errors.TaskNotFound)
        assert.strictEqual((missing as Errors.TaskNotFound).code, "TASK_NOT_FOUND")
        const poor = yield* client(keys.poor)
        const refused = yield* Effect.flip(
          poor.generation.vendor3TextToVideo({ payload: { model: "vendor3-3", input: { prompt: "p" } }, headers: {} })
        )
        assert.instanceOf(refused, Errors.InsufficientBalance)
        const anonymous = yield* client("mg_live_nope")
        const unauthorized = yield* Effect.flip(anonymous.balance.get())
        assert.instanceOf(unauthorized, Errors.AuthInvalidToken)
      }).pipe(Effect.provide(FetchHttpClient.layer)))

    it.effect("reaches the admin API with the admin token", () =>
      Effect.gen(function*() {
        const admin = yield* client(adminToken)
        const account = yield* admin.admin.createAccount({ payload: { name: "Acme", balance: 3 } })
        assert.strictEqual(account.name, "Acme")
        assert.strictEqual(account.balance, 3)
      }).pipe(Effect.provide(FetchHttpClient.layer)))
  })
})
