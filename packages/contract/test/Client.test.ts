/**
 * The Effect client (`Client.make`) against the contract: a method for every endpoint of the HttpApi, optional
 * headers really optional (no `headers: {}` and no `ParseError` about `idempotency-key`), and the key sent.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api, Client } from "../src/index.js"

const task = {
  id: "task_01JX0000000000000000000000",
  original_task_id: "task_01JX0000000000000000000001",
  status: "pending",
  type: "video",
  operation: "text-to-video",
  provider: "vendor3",
  model: "vendor3-3_fast",
  created_at: "2026-11-24T00:00:00.000Z",
  estimated_seconds: 30
}

/** An HttpClient that records requests and answers every one with a success envelope of `data`. */
const recording = (answer: unknown, status = 201) => {
  const seen: Array<HttpClientRequest.HttpClientRequest> = []
  const layer = Layer.succeed(
    HttpClient.HttpClient,
    HttpClient.make((request) => {
      seen.push(request)
      return Effect.succeed(HttpClientResponse.fromWeb(
        request,
        new Response(
          JSON.stringify({ success: true, data: typeof answer === "function" ? answer(request.url) : answer }),
          { status, headers: { "content-type": "application/json" } }
        )
      ))
    })
  )
  return { seen, layer }
}

describe("Client (Effect)", () => {
  it.effect("has a method for every endpoint of the contract's HttpApi", () =>
    Effect.gen(function*() {
      const { layer } = recording({})
      const client = yield* Client.make({ baseUrl: "http://api.test" }).pipe(Effect.provide(layer))
      const endpoints: Array<string> = []
      HttpApi.reflect(Api.MediagateApi, {
        onGroup() {},
        onEndpoint({ endpoint, group }) {
          endpoints.push(`${group.identifier}.${endpoint.name}`)
        }
      })
      assert.isAbove(endpoints.length, 30)
      const methods = client as unknown as Record<string, Record<string, unknown>>
      for (const id of endpoints) {
        const [group, name] = id.split(".") as [string, string]
        assert.strictEqual(typeof methods[group]?.[name], "function", id)
      }
    }))

  it.effect("calls an endpoint with an idempotency header without `headers` (no ParseError)", () =>
    Effect.gen(function*() {
      const ack = { ...task, type: "text-to-video" }
      const { layer, seen } = recording((url: string) => url.endsWith("/retry") ? task : ack)
      const client = yield* Client.make({ baseUrl: "http://api.test", apiKey: "mg_test_x" }).pipe(Effect.provide(layer))
      const retried = yield* client.tasks.retry({ path: { id: "task_1" } })
      assert.strictEqual(retried.original_task_id, task.original_task_id)
      assert.strictEqual(seen[0]!.headers["idempotency-key"], undefined)
      assert.strictEqual(seen[0]!.headers["authorization"], "Bearer mg_test_x")
      assert.strictEqual(seen[0]!.url, "http://api.test/api/v1/tasks/task_1/retry")
      // a generation request without headers too
      const created = yield* client.generation.vendor3TextToVideo({
        payload: { model: "vendor3-3_fast", input: { prompt: "a lighthouse" } }
      })
      assert.strictEqual(created.type, "text-to-video")
      assert.strictEqual(seen[1]!.headers["idempotency-key"], undefined)
    }))

  it.effect("sends the Idempotency-Key when given", () =>
    Effect.gen(function*() {
      const { layer, seen } = recording(task)
      const client = yield* Client.make({ baseUrl: "http://api.test" }).pipe(Effect.provide(layer))
      yield* client.tasks.retry({ path: { id: "task_1" }, headers: { "idempotency-key": "k-1" } })
      assert.strictEqual(seen[0]!.headers["idempotency-key"], "k-1")
    }))

  it.effect("calls an endpoint without any request (balance)", () =>
    Effect.gen(function*() {
      const balance = {
        balance: 1.5,
        billingMode: "prepaid" as const,
        monthlySpendLimit: null,
        autoTopUpEnabled: false,
        autoTopUpThreshold: null,
        autoTopUpAmount: null,
        currency: "USD" as const,
        monthToDateSpend: 0
      }
      const { layer, seen } = recording(balance, 200)
      const client = yield* Client.make({ baseUrl: "http://api.test" }).pipe(Effect.provide(layer))
      const answer = yield* client.balance.get()
      assert.deepStrictEqual(answer, balance)
      assert.strictEqual(seen[0]!.url, "http://api.test/api/v1/balance")
    }))
})
