import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { render, target } from "../scripts/api-reference.js"

describe("docs", () => {
  it("docs/api-reference.md is what the OpenAPI document renders (run npm run docs:api)", () => {
    const reference = render()
    expect(reference).toContain("## POST /api/v1/vendor1/multimodal-video")
    expect(reference).toContain("## GET /api/v1/tasks/{id}")
    expect(readFileSync(target, "utf8")).toBe(reference)
  })
})
