import { assert, describe, expect, it } from "@effect/vitest"
import { Catalog, Examples } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { keys } from "./fakes.js"
import { send, TestServer } from "./harness.js"

describe("generation endpoints", () => {
  it.layer(TestServer)((it) => {
    it.effect("accept a minimal request for every endpoint and model (201, creation acknowledgement)", () =>
      Effect.gen(function*() {
        for (const { body, endpoint, model } of Examples.minimalRequests) {
          const answer = yield* send("POST", `/api/v1/${endpoint}`, { token: keys.live, json: body })
          assert.strictEqual(answer.status, 201, `${endpoint} ${model}: ${answer.text}`)
          const info = Catalog.endpoints[endpoint]
          expect(answer.body).toMatchObject({
            success: true,
            data: { status: "pending", type: info.operation, provider: info.family, model, estimated_seconds: 60 }
          })
          expect(answer.body.data.id).toMatch(/^task_/)
          expect(Date.parse(answer.body.data.created_at)).not.toBeNaN()
        }
      }))

    it.effect("store the normalized input (defaults filled in)", () =>
      Effect.gen(function*() {
        const created = yield* send("POST", "/api/v1/vendor1/text-to-video", {
          token: keys.live,
          json: { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 5 }, metadata: { order: 7 } }
        })
        const read = yield* send("GET", `/api/v1/tasks/${created.body.data.id}`, { token: keys.live })
        assert.strictEqual(read.status, 200)
        expect(read.body.data.input).toEqual({
          prompt: "p",
          duration: 5,
          resolution: "1080p",
          ratio: "16:9",
          camera_fixed: false,
          watermark: false,
          return_last_frame: false,
          service_tier: "default"
        })
        expect(read.body.data.metadata).toEqual({ order: 7 })
      }))

    const violations: ReadonlyArray<readonly [string, unknown, string]> = [
      ["vendor1/multimodal-video", { model: "vendor1-2", input: {} }, "input.prompt is required"],
      [
        "vendor1/multimodal-video",
        { model: "vendor1-2", input: { prompt: "p", reference_audio_urls: ["https://example.com/a.mp3"] } },
        "input.reference_audio_urls: audio references must be used with an image or video reference"
      ],
      [
        "vendor1/image-to-video",
        { model: "vendor1-1-5-pro", input: { image: "https://example.com/a.png", duration: 3 } },
        "input.duration: must be an integer from 4 to 12 for model vendor1-1-5-pro"
      ],
      [
        "vendor1/text-to-video",
        { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 5, generate_audio: true } },
        "input.generate_audio: is not supported by model vendor1-1-0-pro"
      ],
      [
        "vendor2/image-to-video",
        {
          model: "vendor2-v3",
          input: { image: "https://example.com/a.png", multi_prompt: [{ index: 1, prompt: "a" }] }
        },
        "input.multi_prompt"
      ],
      ["vendor2/text-to-video", { model: "vendor2-v2-6", input: { prompt: "p", duration: 7 } }, "input.duration"],
      ["vendor3/text-to-video", { model: "vendor3-3", input: { aspect_ratio: "16:9" } }, "input.prompt is required"],
      ["vendor4/text-to-image", { model: "vendor4-4-5", input: { prompt: "p", size: "1K" } }, "input.size"],
      ["vendor4/image-to-image", { model: "vendor4-4-0", input: { prompt: "p" } }, "input.image is required"],
      ["vendor5/image-to-video", { model: "vendor5q3-pro", input: { images: [] } }, "input.images"],
      ["vendor5/text-to-video", { model: "vendor5q3-turbo", input: { prompt: "p", duration: 17 } }, "input.duration"],
      ["vendor6/image-to-image", { model: "vendor6-2", input: { prompt: "p", resolution: "8K" } }, "input.resolution"],
      [
        "vendor7/text-to-video",
        { model: "vendor7-imagine/text-to-video", input: { prompt: "p", duration: 6 } },
        "input.duration"
      ],
      ["vendor8/text-to-video", { model: "vendor8/2-6-text-to-video", input: {} }, "input.prompt is required"],
      [
        "vendor8/image-to-video",
        {
          model: "vendor8/2-6-image-to-video",
          input: { prompt: "p", image_urls: ["https://a.example/1.png", "https://a.example/2.png"] }
        },
        "input.image_urls: must contain exactly one URL"
      ],
      [
        "vendor8/video-to-video",
        { model: "vendor8/2-6-video-to-video", input: { prompt: "p", video_urls: [] } },
        "input.video_urls: must contain 1 to 3 URLs"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor1-2", input: { prompt: "p" } },
        "model: must be one of vendor3-3, vendor3-3_fast"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p", tone: "dark" } },
        "input.tone: is not a known field"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p" }, priority: 1 },
        "priority: is not a known field"
      ],
      ["vendor3/text-to-video", { input: { prompt: "p" } }, "model is required"],
      ["vendor3/text-to-video", [1, 2], "body: "],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p" }, webhookUrl: "http://127.0.0.1:9/hook" },
        "webhookUrl: address 127.0.0.1 is not a public address"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p" }, webhookUrl: "ftp://example.com/hook" },
        "webhookUrl: must be an absolute http(s) URL"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p" }, metadata: { nested: { a: 1 } } },
        "metadata.nested"
      ],
      [
        "vendor3/text-to-video",
        {
          model: "vendor3-3",
          input: { prompt: "p" },
          metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]))
        },
        "metadata: must have at most 50 keys"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p" }, metadata: { ["k".repeat(41)]: 1 } },
        "metadata"
      ],
      [
        "vendor3/text-to-video",
        { model: "vendor3-3", input: { prompt: "p" }, metadata: { note: "x".repeat(501) } },
        "metadata.note"
      ],
      [
        "vendor8/image-to-video",
        { model: "vendor8/2-6-image-to-video", input: { prompt: "p", image_urls: ["http://169.254.169.254/latest"] } },
        "input.image_urls[0]: address 169.254.169.254 is not a public address"
      ]
    ]

    it.effect("refuse every violation with 400 VALIDATION_ERROR naming the field", () =>
      Effect.gen(function*() {
        for (const [endpoint, body, message] of violations) {
          const answer = yield* send("POST", `/api/v1/${endpoint}`, { token: keys.live, json: body })
          assert.strictEqual(answer.status, 400, `${endpoint} ${JSON.stringify(body)}: ${answer.text}`)
          assert.strictEqual(answer.body.success, false)
          assert.strictEqual(answer.body.error.code, "VALIDATION_ERROR")
          expect(answer.body.error.message, JSON.stringify(body)).toContain(message)
        }
      }))

    it.effect("authenticate before validating the body", () =>
      Effect.gen(function*() {
        const answer = yield* send("POST", "/api/v1/vendor3/text-to-video", { json: { nonsense: true } })
        assert.strictEqual(answer.status, 401)
        assert.strictEqual(answer.body.error.code, "AUTH_REQUIRED")
      }))

    it.effect("map the task service's refusals to their statuses", () =>
      Effect.gen(function*() {
        const body = { model: "vendor3-3", input: { prompt: "p" } }
        const poor = yield* send("POST", "/api/v1/vendor3/text-to-video", { token: keys.poor, json: body })
        assert.strictEqual(poor.status, 402)
        expect(poor.body).toEqual({
          success: false,
          error: { code: "INSUFFICIENT_BALANCE", message: "balance is too low for this request" }
        })
      }))

    it.effect("replay an Idempotency-Key with the same body and refuse it with another", () =>
      Effect.gen(function*() {
        const headers = { "idempotency-key": "order-42" }
        const first = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          headers,
          json: { model: "vendor3-3", input: { prompt: "p" } }
        })
        const again = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          headers,
          json: { model: "vendor3-3", input: { prompt: "p" } }
        })
        assert.strictEqual(again.status, 201)
        assert.strictEqual(again.body.data.id, first.body.data.id)
        const other = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          headers,
          json: { model: "vendor3-3", input: { prompt: "q" } }
        })
        assert.strictEqual(other.status, 409)
        assert.strictEqual(other.body.error.code, "IDEMPOTENCY_KEY_REUSED")
        const tooLong = yield* send("POST", "/api/v1/vendor3/text-to-video", {
          token: keys.live,
          headers: { "idempotency-key": "k".repeat(256) },
          json: { model: "vendor3-3", input: { prompt: "p" } }
        })
        assert.strictEqual(tooLong.status, 400)
        expect(tooLong.body.error.message).toContain("idempotency-key")
      }))
  })
})
