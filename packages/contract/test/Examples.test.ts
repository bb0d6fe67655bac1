import { describe, expect, it } from "@effect/vitest"
import { endpointList } from "../src/Catalog.js"
import { minimalRequests } from "../src/Examples.js"
import { requestSchema } from "../src/Generation.js"
import { valid } from "./helpers.js"

describe("Examples.minimalRequests", () => {
  it("covers every model of every endpoint", () => {
    const expected = endpointList.flatMap((e) => e.models.map((m) => `${e.key} ${m}`)).sort()
    expect(minimalRequests.map((r) => `${r.endpoint} ${r.model}`).sort()).toEqual(expected)
    expect(minimalRequests.length).toBe(31)
  })

  it.each(minimalRequests.map((r) => [r.endpoint, r.model, r] as const))("%s %s decodes", (_e, _m, r) => {
    const decoded = valid(requestSchema(r.endpoint), r.body)
    expect(decoded.model).toBe(r.model)
    // normalization only adds fields: everything sent is kept as sent
    expect(decoded.input).toMatchObject(r.body.input)
  })
})
