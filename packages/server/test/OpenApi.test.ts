import SwaggerParser from "@apidevtools/swagger-parser"
import { assert, describe, expect, it } from "@effect/vitest"
import { Catalog } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { send, TestServer } from "./harness.js"

describe("OpenAPI document", () => {
  it.layer(TestServer)((it) => {
    it.effect("is a valid OpenAPI 3.1 document (third-party validator)", () =>
      Effect.gen(function*() {
        const spec = yield* send("GET", "/api/v1/openapi.json")
        assert.strictEqual(spec.status, 200)
        const validated = yield* Effect.promise(() => SwaggerParser.validate(structuredClone(spec.body)))
        expect(validated.info.title).toBe("Mediagate API")
      }))

    it.effect("describes every endpoint with its success status and the error envelope", () =>
      Effect.gen(function*() {
        const { body: spec } = yield* send("GET", "/api/v1/openapi.json")
        for (const info of Catalog.endpointList) {
          const operation = spec.paths[`/api/v1${info.path}`]?.post
          assert.isDefined(operation, info.path)
          assert.isDefined(operation.responses["201"], `${info.path} 201`)
          assert.isDefined(operation.responses["400"], `${info.path} 400`)
          assert.isDefined(operation.responses["402"], `${info.path} 402`)
          assert.isDefined(operation.requestBody, `${info.path} body`)
        }
        for (
          const [path, method] of [
            ["/api/v1/tasks", "get"],
            ["/api/v1/tasks/{id}", "get"],
            ["/api/v1/tasks/{id}/retry", "post"],
            ["/api/v1/tasks/{id}/cancel", "post"],
            ["/api/v1/vendor9/voices", "get"],
            ["/api/v1/balance", "get"],
            ["/api/v1/api-keys", "post"],
            ["/api/v1/api-keys", "get"],
            ["/api/v1/api-keys/{id}", "delete"],
            ["/api/v1/webhooks", "post"],
            ["/api/v1/webhooks", "get"],
            ["/api/v1/webhooks/{id}", "delete"],
            ["/api/v1/webhooks/{id}/test", "post"],
            ["/api/v1/webhooks/{id}/deliveries", "get"],
            ["/api/v1/webhooks/{id}/deliveries/{deliveryId}/replay", "post"]
          ] as const
        ) {
          assert.isDefined(spec.paths[path]?.[method], `${method} ${path}`)
        }
        // the decode-failure schema is our envelope, not the platform's own shape
        expect(spec.components.schemas.HttpApiDecodeError.properties.error).toBeDefined()
        expect(Object.keys(spec.components.securitySchemes)).toEqual(["bearer"])
        // the operator API is a document of its own
        expect(Object.keys(spec.paths).filter((path) => !path.startsWith("/api/v1/"))).toEqual([])
      }))

    it.effect("describes the operator API in /admin/v1/openapi.json, a valid document of its own", () =>
      Effect.gen(function*() {
        const answer = yield* send("GET", "/admin/v1/openapi.json")
        assert.strictEqual(answer.status, 200)
        const spec = answer.body
        const validated = yield* Effect.promise(() => SwaggerParser.validate(structuredClone(spec)))
        expect(validated.info.title).toBe("Mediagate admin API")
        for (
          const [path, method] of [
            ["/admin/v1/accounts", "post"],
            ["/admin/v1/accounts/{id}", "get"],
            ["/admin/v1/accounts/{id}", "patch"],
            ["/admin/v1/accounts/{id}/credits", "post"],
            ["/admin/v1/accounts/{id}/api-keys", "post"],
            ["/admin/v1/system", "get"],
            ["/admin/v1/channels", "get"]
          ] as const
        ) {
          assert.isDefined(spec.paths[path]?.[method], `${method} ${path}`)
        }
        expect(Object.keys(spec.paths).filter((path) => !path.startsWith("/admin/v1/"))).toEqual([])
        expect(Object.keys(spec.components.securitySchemes)).toEqual(["adminToken"])
        expect(spec.tags.map((tag: { name: string }) => tag.name)).toEqual(["Admin", "Channels"])
        // only the schemas its operations use: none of the generation requests
        expect(Object.keys(spec.components.schemas).filter((name) => name.startsWith("Vendor"))).toEqual([])
      }))

    it.effect("/docs shows both documents (Scalar's sources)", () =>
      Effect.gen(function*() {
        const page = yield* send("GET", "/docs")
        assert.strictEqual(page.status, 200)
        expect(page.headers["content-type"]).toContain("text/html")
        // Scalar mounted with one source per document, each with its content (the browser test:
        // packages/node/test/Docs.test.ts)
        const mounted = /Scalar\.createApiReference\("#api-reference-app", \{ _integration: "html", sources: (.*) \}\)/
          .exec(page.text)
        assert.isNotNull(mounted)
        const sources = JSON.parse(mounted![1]!) as Array<{ title: string; slug: string; content: object }>
        const { body: publicSpec } = yield* send("GET", "/api/v1/openapi.json")
        const { body: adminSpec } = yield* send("GET", "/admin/v1/openapi.json")
        expect(sources.map((s) => [s.title, s.slug]))
          .toEqual([["Mediagate API", "api"], ["Mediagate admin API", "admin"]])
        expect(sources.map((s) => s.content)).toEqual([publicSpec, adminSpec])
      }))

    it.effect("carries field rules and descriptions into the request Schemas", () =>
      Effect.gen(function*() {
        const { body: spec } = yield* send("GET", "/api/v1/openapi.json")
        const input = spec.components.schemas.Vendor1MultimodalVideoInput
        expect(input.required).toContain("prompt")
        expect(input.additionalProperties).toBe(false)
        expect(input.properties.duration).toMatchObject({ minimum: 4, maximum: 15 })
        expect(input.properties.resolution.enum).toEqual(["480p", "720p", "1080p"])
        expect(input.properties.first_frame_url.description).toBeTypeOf("string")
        expect(JSON.stringify(spec.components.schemas.Vendor3TextToVideoInput.properties.prompt)).toContain(
          "What to generate"
        )
      }))
  })
})
