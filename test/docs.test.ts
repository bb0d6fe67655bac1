import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { render, target } from "../scripts/api-reference.js"
import * as PackageGraph from "../scripts/package-graph.js"

describe("docs", () => {
  it("docs/api-reference.md is what the OpenAPI document renders (run npm run docs:api)", () => {
    const reference = render()
    expect(reference).toContain("## POST /api/v1/vendor1/multimodal-video")
    expect(reference).toContain("## GET /api/v1/tasks/{id}")
    expect(readFileSync(target, "utf8")).toBe(reference)
  })

  it("docs/architecture.md shows the real package graph (run npm run docs:graph)", () => {
    const page = readFileSync(PackageGraph.target, "utf8")
    expect(PackageGraph.updated(page)).toBe(page)
    // the graph is read from the package manifests: the contract depends on no other package, the node package
    // on every runtime package
    const graph = new Map(PackageGraph.packages().map((p) => [p.name, p.dependsOn]))
    expect(graph.get("@mediagate/contract")).toEqual([])
    expect(graph.get("@mediagate/node")).toEqual(
      expect.arrayContaining(["@mediagate/engine", "@mediagate/server", "@mediagate/vendors"])
    )
  })
})
