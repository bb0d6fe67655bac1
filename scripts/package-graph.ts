/**
 * The package graph of the repository as a Mermaid diagram (`npm run docs:graph` writes it into
 * docs/architecture.md between the `package-graph` markers). Every edge is a `@mediagate/*` dependency in a
 * package.json; a test keeps the committed diagram equal to what this renders.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** The page holding the diagram. */
export const target = join(root, "docs", "architecture.md")

const begin = "<!-- package-graph:begin (npm run docs:graph) -->"
const end = "<!-- package-graph:end -->"

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly dependencies?: Record<string, string>
}

/** Every workspace package (published ones and the example server), with its `@mediagate/*` dependencies. */
export const packages = (): ReadonlyArray<{ readonly name: string; readonly dependsOn: ReadonlyArray<string> }> =>
  ["packages", "examples"].flatMap((folder) =>
    readdirSync(join(root, folder), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry): Manifest => JSON.parse(readFileSync(join(root, folder, entry.name, "package.json"), "utf8")))
      .filter((manifest) =>
        manifest.name !== "@mediagate/testing" && manifest.name !== "@mediagate/example-webhook-receiver"
      )
      .map((manifest) => ({
        name: manifest.name,
        dependsOn: Object.keys(manifest.dependencies ?? {}).filter((d) => d.startsWith("@mediagate/")).sort()
      }))
  ).sort((a, b) => a.name.localeCompare(b.name))

const id = (name: string) => name.replace("@mediagate/", "").replace(/-/g, "_")

/** The diagram block, markers included. */
export const render = (): string => {
  const lines = [begin, "", "```mermaid", "graph BT"]
  for (const pkg of packages()) {
    lines.push(`  ${id(pkg.name)}["${pkg.name}"]`)
  }
  for (const pkg of packages()) {
    for (const dependency of pkg.dependsOn) lines.push(`  ${id(pkg.name)} --> ${id(dependency)}`)
  }
  lines.push("```", "", end)
  return lines.join("\n")
}

/** The page with its diagram replaced by {@link render}'s. */
export const updated = (page: string): string => {
  const from = page.indexOf(begin)
  const to = page.indexOf(end)
  if (from < 0 || to < from) throw new Error(`${target}: the package-graph markers are missing`)
  return page.slice(0, from) + render() + page.slice(to + end.length)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(target, updated(readFileSync(target, "utf8")))
  console.log(`wrote the package graph into ${target}`)
}
