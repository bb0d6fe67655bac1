import { describe, expect, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { render, target } from "../scripts/api-reference.js"
import * as PackageGraph from "../scripts/package-graph.js"

const root = resolve(import.meta.dirname, "..")

/** The lines of a Markdown file outside fenced code blocks, with their numbers. */
const proseLines = (file: string): Array<readonly [number, string]> => {
  let fenced = false
  const lines: Array<readonly [number, string]> = []
  readFileSync(file, "utf8").split("\n").forEach((line, i) => {
    if (line.startsWith("```")) fenced = !fenced
    else if (!fenced) lines.push([i + 1, line])
  })
  return lines
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")

/** The anchors of a Markdown file: its headings' (a repeated one numbered as GitHub does) and its `<a id>`s. */
const anchorsOf = (file: string): ReadonlySet<string> => {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const [, line] of proseLines(file)) {
    for (const id of line.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(id[1]!)
    const heading = /^#{1,6}\s+(.*)$/.exec(line)
    if (heading === null) continue
    const base = slug(heading[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

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

  it("every relative link of the README and docs/ reaches a file, and its #anchor a heading or an anchor there", () => {
    const docs = readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".md"))
    const files = [join(root, "README.md"), ...docs.map((f) => join(root, "docs", f))]
    const broken: Array<string> = []
    for (const file of files) {
      for (const [n, line] of proseLines(file)) {
        // links in inline code are text
        for (const link of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = link[1]!
          if (/^[a-z][a-z+.-]*:/.test(target)) continue
          const [path, anchor] = target.split("#")
          const resolved = path === "" ? file : resolve(dirname(file), path!)
          const at = `${relative(root, file)}:${n}: ${target}`
          if (!existsSync(resolved)) broken.push(`${at} (no such file)`)
          else if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor)) {
            broken.push(`${at} (no such heading)`)
          }
        }
      }
    }
    expect(files.length).toBeGreaterThan(10)
    expect(broken).toEqual([])
  })
})
