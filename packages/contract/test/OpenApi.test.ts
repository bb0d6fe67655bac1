/**
 * The OpenAPI document as third-party generators read it (internal/openApi.ts): every query parameter declared,
 * request bodies without `default` on optional fields (generators would make them required). The end-to-end check
 * with openapi-typescript and openapi-fetch against a server is test/client-sdk.test.ts.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { describe, expect, it } from "@effect/vitest"
import * as AST from "effect/SchemaAST"
import { Api } from "../src/index.js"

type Json = Record<string, any>

const spec = OpenApi.fromApi(Api.MediagateApi) as unknown as Json

describe("OpenAPI document for generators", () => {
  it("declares every field of every endpoint's query Schema as a query parameter", () => {
    let checked = 0
    HttpApi.reflect(Api.MediagateApi, {
      onGroup() {},
      onEndpoint({ endpoint }) {
        if (endpoint.urlParamsSchema._tag === "None") return
        const path = endpoint.path.replace(/:(\w+)\??/g, "{$1}")
        const operation = spec.paths[path][endpoint.method.toLowerCase()] as Json
        const declared = (operation.parameters as Array<Json>).filter((p) => p.in === "query").map((p) => p.name)
        const fields = AST.getPropertySignatures(endpoint.urlParamsSchema.value.ast).map((ps) => String(ps.name))
        expect(declared, `${endpoint.method} ${path}`).toEqual(fields)
        checked++
      }
    })
    expect(checked).toBeGreaterThanOrEqual(5)
  })

  it("describes GET /api/v1/tasks: filters, an integer limit with its bounds, the cursor", () => {
    const parameters = spec.paths["/api/v1/tasks"].get.parameters as Array<Json>
    const byName = Object.fromEntries(parameters.map((p) => [p.name, p]))
    expect(Object.keys(byName)).toEqual([
      "status",
      "provider",
      "model",
      "created_after",
      "created_before",
      "search",
      "limit",
      "cursor"
    ])
    expect(byName["status"]).toMatchObject({
      in: "query",
      required: false,
      schema: { enum: expect.arrayContaining(["succeeded"]) }
    })
    expect(byName["limit"]).toMatchObject({
      required: false,
      schema: { type: "integer", minimum: 1, maximum: 100, default: 20 }
    })
    expect(byName["cursor"]).toMatchObject({ required: false, schema: { type: "string" } })
  })

  it("keeps `default` out of request bodies: a field with a server-side default is optional, the default described", () => {
    const input = spec.components.schemas.Vendor3TextToVideoInput as Json
    expect(input.required).toEqual(["prompt"])
    expect(input.properties.aspect_ratio.default).toBeUndefined()
    expect(input.properties.aspect_ratio.description).toContain("Default: \"16:9\".")
    const withDefault: Array<string> = []
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`))
      if (typeof node !== "object" || node === null) return
      const properties = (node as Json).properties
      if (typeof properties === "object" && properties !== null) {
        for (const [name, property] of Object.entries(properties as Json)) {
          if (typeof property === "object" && property !== null && "default" in property) {
            withDefault.push(`${at}.${name}`)
          }
        }
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${at}/${key}`)
    }
    const requestSchemas = Object.entries(spec.components.schemas as Json)
      .filter(([name]) => /Input$|Request$|Create$/.test(name))
    for (const [name, schema] of requestSchemas) walk(schema, name)
    for (const item of Object.values(spec.paths as Json)) {
      for (const operation of Object.values(item as Json)) walk((operation as Json).requestBody, "requestBody")
    }
    expect(requestSchemas.length).toBeGreaterThan(15)
    expect(withDefault).toEqual([])
  })
})

describe("the public and the operator documents (Api.documents)", () => {
  const { admin, public: publicDocument } = Api.documents(Api.MediagateApi, {
    serverUrl: "https://gateway.test/media/"
  })
  const documents = [publicDocument, admin] as unknown as ReadonlyArray<Json>

  it("split the paths by prefix, each with its own title, the server given and the license", () => {
    expect(Object.keys(publicDocument.paths).every((path) => path.startsWith("/api/v1/"))).toBe(true)
    expect(Object.keys(admin.paths).every((path) => path.startsWith("/admin/v1/"))).toBe(true)
    expect(Object.keys(publicDocument.paths).length + Object.keys(admin.paths).length)
      .toBe(Object.keys(spec.paths).length)
    expect([publicDocument.info.title, admin.info.title]).toEqual(["Mediagate API", "Mediagate admin API"])
    for (const document of documents) {
      expect(document.servers).toEqual([{ url: "https://gateway.test/media" }])
      expect(document.info.license).toEqual({ name: "MIT", url: "https://opensource.org/licenses/MIT" })
    }
    expect(Api.documents(Api.MediagateApi).public.servers).toEqual([{ url: "/" }])
  })

  it("hold only the components their operations use, and tags with descriptions", () => {
    for (const document of documents) {
      const text = JSON.stringify({ paths: document.paths, schemas: document.components.schemas })
      for (const name of Object.keys(document.components.schemas)) {
        expect(text, name).toContain(`"#/components/schemas/${name}"`)
      }
      for (const tag of document.tags as Array<Json>) expect(tag.description, tag.name).toBeTypeOf("string")
    }
  })

  it("state one lower bound where a refinement of a refinement gave two (PositiveUsd of Usd)", () => {
    const amount = admin.components.schemas["CreditRequest"] as Json
    expect(amount.properties.amount).toMatchObject({ exclusiveMinimum: 0, maximum: 1_000_000_000 })
    expect(amount.properties.amount.minimum).toBeUndefined()
  })
})
