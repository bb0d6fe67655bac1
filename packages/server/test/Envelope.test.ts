import { NodeHttpServer } from "@effect/platform-node"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Api, Services, type Task, type Voice } from "@mediagate/contract"
import { Envelope, Health, Http, ServerConfig } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { keys, PortsFake } from "./fakes.js"
import { send, TestServer } from "./harness.js"

describe("envelope", () => {
  it.layer(TestServer)((it) => {
    it.effect("unknown routes are 404 NOT_FOUND and wrong methods 405 with Allow", () =>
      Effect.gen(function*() {
        const unknown = yield* send("GET", "/api/v1/nothing/here", { token: keys.live })
        assert.strictEqual(unknown.status, 404)
        expect(unknown.body).toEqual({
          success: false,
          error: { code: "NOT_FOUND", message: "no route for GET /api/v1/nothing/here" }
        })
        const root = yield* send("GET", "/")
        assert.strictEqual(root.status, 404)
        assert.strictEqual(root.body.error.code, "NOT_FOUND")
        const method = yield* send("PUT", "/api/v1/tasks/task_1", { token: keys.live })
        assert.strictEqual(method.status, 405)
        assert.strictEqual(method.body.error.code, "METHOD_NOT_ALLOWED")
        assert.strictEqual(method.headers["allow"], "GET")
        const post = yield* send("GET", "/api/v1/vendor3/text-to-video", { token: keys.live })
        assert.strictEqual(post.status, 405)
        assert.strictEqual(post.headers["allow"], "POST")
      }))

    it.effect("malformed JSON, empty bodies and other content types are 400 VALIDATION_ERROR", () =>
      Effect.gen(function*() {
        for (const raw of ["{", "{\"model\": }", "not json"]) {
          const answer = yield* send("POST", "/api/v1/vendor3/text-to-video", { token: keys.live, raw })
          assert.strictEqual(answer.status, 400, raw)
          expect(answer.body).toEqual({
            success: false,
            error: { code: "VALIDATION_ERROR", message: "body: must be valid JSON" }
          })
        }
        const text = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          raw: "prompt=cat",
          headers: { "content-type": "application/x-www-form-urlencoded" }
        })
        assert.strictEqual(text.status, 400)
        expect(text.body.error.message).toBe("body: Content-Type must be application/json")
      }))

    it.effect("bodies over the limit are 413 PAYLOAD_TOO_LARGE", () =>
      Effect.gen(function*() {
        const prompt = "x".repeat(1024 * 1024 + 10)
        const answer = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          json: { model: "vendor3-3", input: { prompt } }
        })
        assert.strictEqual(answer.status, 413)
        assert.strictEqual(answer.body.error.code, "PAYLOAD_TOO_LARGE")
        // the connection stays usable for the next request
        const next = yield* send("GET", "/api/v1/balance", { token: keys.live })
        assert.strictEqual(next.status, 200)
      }))

    it.effect("a chunked body over the limit is 413 PAYLOAD_TOO_LARGE, answered before the connection closes", () =>
      Effect.gen(function*() {
        const client = yield* HttpClient.HttpClient
        const chunk = new TextEncoder().encode("x".repeat(64 * 1024))
        const body = Stream.concat(
          Stream.make(new TextEncoder().encode("{\"model\":\"vendor3-3\",\"input\":{\"prompt\":\"")),
          Stream.repeatValue(chunk).pipe(Stream.take(20))
        )
        const request = HttpClientRequest.post("/api/v1/vendor3/text-to-video").pipe(
          HttpClientRequest.bearerToken(keys.live),
          HttpClientRequest.bodyStream(body, { contentType: "application/json" })
        )
        const answer = yield* client.execute(request).pipe(
          Effect.flatMap((r) => Effect.map(r.json, (body) => [r.status, body] as const)),
          Effect.scoped
        )
        expect(answer).toEqual([413, {
          success: false,
          error: {
            code: "PAYLOAD_TOO_LARGE",
            message: "request body is larger than 1048576 bytes",
            request_id: expect.any(String)
          }
        }])
      }))

    it.effect("a defect is 500 INTERNAL_ERROR without internals", () =>
      Effect.gen(function*() {
        const answer = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.defect,
          json: { model: "vendor3-3", input: { prompt: "p" } }
        })
        assert.strictEqual(answer.status, 500)
        expect(answer.body).toEqual({ success: false, error: { code: "INTERNAL_ERROR", message: "internal error" } })
        expect(answer.text).not.toContain("SELECT")
      }))

    it.effect("answers /healthz and /readyz without a key", () =>
      Effect.gen(function*() {
        const health = yield* send("GET", "/healthz")
        expect([health.status, health.body]).toEqual([200, { status: "ok" }])
        const ready = yield* send("GET", "/readyz")
        expect([ready.status, ready.body]).toEqual([200, { status: "ready" }])
        expect((yield* send("POST", "/healthz")).status).toBe(405)
      }))

    it.effect("serves the OpenAPI document and the docs page without a key", () =>
      Effect.gen(function*() {
        const spec = yield* send("GET", "/api/v1/openapi.json")
        assert.strictEqual(spec.status, 200)
        assert.strictEqual(spec.body.openapi, "3.1.0")
        const docs = yield* send("GET", "/docs")
        assert.strictEqual(docs.status, 200)
        expect(docs.text).toContain("<html")
      }))
  })

  // `layer`, not `it.layer`: `it.layer` above rebinds the shared `it`, which would nest this block in that one
  layer(
    Http.layer.pipe(
      Layer.provideMerge(NodeHttpServer.layerTest),
      Layer.provideMerge(
        Layer.mergeAll(PortsFake, Layer.succeed(Health.Readiness, { check: Effect.fail("database down") }))
      ),
      Layer.provide(ServerConfig.layer())
    )
  )("without an admin token", (it) => {
    it.effect("is not ready while its readiness check fails", () =>
      Effect.gen(function*() {
        const ready = yield* send("GET", "/readyz")
        expect(ready.status).toBe(503)
        expect(ready.body.error.code).toBe("SERVICE_UNAVAILABLE")
      }))

    it.effect("the admin API does not exist", () =>
      Effect.gen(function*() {
        const answer = yield* send("GET", "/admin/v1/accounts/acct_main", { token: "anything" })
        assert.strictEqual(answer.status, 404, answer.text)
        assert.strictEqual(answer.body.error.code, "NOT_FOUND")
      }))
  })

  describe("encodedOnce", () => {
    const task: Task.Task = {
      id: "task_1",
      type: "video",
      operation: "text-to-video",
      status: "running",
      provider: "vendor3",
      model: "vendor3-3",
      progress: 40,
      cost: 3.2,
      input: { prompt: "a cat" },
      metadata: { order: 7 },
      webhookUrl: null,
      original_task_id: null,
      estimated_seconds: 90,
      created_at: "2026-11-24T10:00:00.000Z",
      started_at: "2026-11-24T10:00:01.000Z",
      completed_at: null
    }
    const bodyOf = (answer: unknown) => {
      assert.isTrue(HttpServerResponse.isServerResponse(answer))
      const body = (answer as HttpServerResponse.HttpServerResponse).body
      assert.strictEqual(body._tag, "Uint8Array")
      return {
        status: (answer as HttpServerResponse.HttpServerResponse).status,
        text: new TextDecoder().decode(body._tag === "Uint8Array" ? body.body : undefined)
      }
    }

    it("answers what the success Schema encodes, once per value", () => {
      const answerOf = Envelope.encodedOnce(Api.TaskResponse)
      const first = answerOf(task)
      expect(bodyOf(first)).toEqual({ status: 200, text: JSON.stringify(Schema.encodeSync(Api.TaskResponse)(task)) })
      expect(JSON.parse(bodyOf(first).text)).toEqual({ success: true, data: task })
      // the same value: the same answer, not encoded again
      assert.strictEqual(answerOf(task), first)
      // another value (a new state of the task): its own answer
      const later = { ...task, status: "succeeded" as const, progress: 100 }
      const second = answerOf(later)
      assert.notStrictEqual(second, first)
      expect(JSON.parse(bodyOf(second).text).data).toEqual(later)
    })

    it("answers a value that fails to encode as it is (for the HttpApi to report)", () => {
      const answerOf = Envelope.encodedOnce(Api.TaskResponse)
      const broken = { ...task, progress: "half" } as unknown as Task.Task
      assert.strictEqual(answerOf(broken), broken)
    })
  })

  // a task read twice unchanged (the same view), then changed
  describe("a task read again", () => {
    let current: Task.Task | undefined
    const Reads = Layer.effect(
      Services.TaskService,
      Effect.map(Services.TaskService, (tasks) => ({
        ...tasks,
        get: (principal: Parameters<typeof tasks.get>[0], id: string) =>
          current === undefined ? tasks.get(principal, id) : Effect.succeed(current)
      }))
    ).pipe(Layer.provide(PortsFake))
    layer(
      Http.layer.pipe(
        Layer.provideMerge(NodeHttpServer.layerTest),
        Layer.provideMerge(Layer.mergeAll(PortsFake, Reads)),
        Layer.provide(ServerConfig.layer())
      )
    )((it) => {
      it.effect("answers the same body while unchanged, the new state once changed, and a broken one as a 500", () =>
        Effect.gen(function*() {
          const created = yield* send("POST", "/api/v1/vendor3/text-to-video", {
            token: keys.live,
            json: { model: "vendor3-3", input: { prompt: "a cat" } }
          })
          assert.strictEqual(created.status, 201, created.text)
          const id: string = created.body.data.id
          const first = yield* send("GET", `/api/v1/tasks/${id}`, { token: keys.live })
          const again = yield* send("GET", `/api/v1/tasks/${id}`, { token: keys.live })
          assert.strictEqual(first.status, 200, first.text)
          assert.strictEqual(again.text, first.text)
          assert.strictEqual(again.headers["content-type"], "application/json")
          assert.notStrictEqual(again.headers["x-request-id"], first.headers["x-request-id"])
          assert.strictEqual(first.body.data.id, id)
          current = { ...first.body.data, status: "running", progress: 50 }
          const changed = yield* send("GET", `/api/v1/tasks/${id}`, { token: keys.live })
          expect(changed.body).toEqual({ success: true, data: current })
          current = { ...first.body.data, progress: "half" }
          const broken = yield* send("GET", `/api/v1/tasks/${id}`, { token: keys.live })
          assert.strictEqual(broken.status, 500, broken.text)
          expect(broken.body).toEqual({ success: false, error: { code: "INTERNAL_ERROR", message: "internal error" } })
          current = undefined
        }))
    })
  })

  // a port answering what its Schema refuses: the answer cannot be encoded
  const BrokenVoices = Layer.succeed(Services.VoiceService, {
    list: () => Effect.succeed({ voices: [{ voice_id: 7 }], total: "two" } as unknown as Voice.VoiceList)
  })

  layer(
    Http.layer.pipe(
      Layer.provideMerge(NodeHttpServer.layerTest),
      Layer.provideMerge(Layer.mergeAll(PortsFake, BrokenVoices)),
      Layer.provide(ServerConfig.layer())
    )
  )("an answer that fails to encode", (it) => {
    it.effect("is a 500 INTERNAL_ERROR once the handler ran, while a bad request to the same route stays a 400", () =>
      Effect.gen(function*() {
        const broken = yield* send("GET", "/api/v1/vendor9/voices", { token: keys.live })
        assert.strictEqual(broken.status, 500, broken.text)
        expect(broken.body).toEqual({ success: false, error: { code: "INTERNAL_ERROR", message: "internal error" } })
        const invalid = yield* send("GET", `/api/v1/vendor9/voices?name=${"x".repeat(500)}`, { token: keys.live })
        assert.strictEqual(invalid.status, 400, invalid.text)
        assert.strictEqual(invalid.body.error.code, "VALIDATION_ERROR")
      }))
  })
})
