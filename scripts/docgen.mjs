// `npm run docs [-- [--lenient] [package ...]]`: API docs of the publishable packages with @effect/docgen.
//
// Each publishable package has a `docgen.json` (Effect's layout). docgen reads `package.json` from the directory it
// runs in and requires a `homepage` there, which our packages do not have; so each package is staged in
// `build/docgen/<package>/` (a package.json with its name and version, its docgen.json with `outDir` set, and `src`
// linked to the package's sources) and docgen runs there. The Markdown lands in `build/docs/<package>/`
// (`modules/*.md`, one page per module).
//
//   --lenient   do not require `@since` on every export (docgen's `enforceVersion: false`), to see the pages of a
//               package whose exports are not all tagged yet
//   package     short names (`client`, `outbound`, ...); default: every publishable package
//
// Exits non-zero when docgen failed for a package; its errors name exports that lack a tag (the first kind of
// declaration that fails in each module only: `npm run docs:missing` counts them all).
import { spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const args = process.argv.slice(2)
const lenient = args.includes("--lenient")
const wanted = args.filter((arg) => !arg.startsWith("--"))

const publishable = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .filter((name) => {
    const manifest = JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8"))
    return manifest.private !== true
  })
  .sort()

const unknown = wanted.filter((name) => !publishable.includes(name))
if (unknown.length > 0) {
  console.error(`docs: not a publishable package: ${unknown.join(", ")} (one of ${publishable.join(", ")})`)
  process.exit(2)
}

const bin = join(root, "node_modules", ".bin")
const failed = []
for (const name of wanted.length > 0 ? wanted : publishable) {
  const packageDir = join(root, "packages", name)
  const stage = join(root, "build", "docgen", name)
  const outDir = join(root, "build", "docs", name)
  const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"))
  const config = JSON.parse(readFileSync(join(packageDir, "docgen.json"), "utf8"))
  rmSync(stage, { recursive: true, force: true })
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(stage, { recursive: true })
  // docgen names each page after the module's path under its cwd: the staged `src` links to the package's sources
  symlinkSync(relative(stage, join(packageDir, config.srcDir ?? "src")), join(stage, "src"))
  writeFileSync(
    join(stage, "package.json"),
    JSON.stringify({ name: manifest.name, version: manifest.version, homepage: manifest.homepage ?? "" }, null, 2)
  )
  const staged = {
    ...config,
    $schema: relative(stage, join(root, "node_modules", "@effect", "docgen", "schema.json")),
    srcDir: "src",
    outDir: relative(stage, outDir),
    ...(lenient ? { enforceVersion: false } : {})
  }
  writeFileSync(join(stage, "docgen.json"), JSON.stringify(staged, null, 2))
  console.log(`docs: ${manifest.name}${lenient ? " (lenient)" : ""}`)
  const run = spawnSync(join(bin, "docgen"), [], {
    cwd: stage,
    stdio: "inherit",
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      // examples (`@example`) run with tsx: resolve @mediagate/* to their sources, as the tests do
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --conditions=@mediagate/source`.trim()
    }
  })
  if (run.status !== 0) failed.push(manifest.name)
  else frontMatter(join(outDir, "modules"))
}

/**
 * docgen 0.5.2 separates the lines of a module page's front matter with blank lines, and its prettier pass then
 * prints the opening `---` as a thematic break (`***`): put the front matter back together.
 */
function frontMatter(dir) {
  for (const file of readdirSync(dir)) {
    if (!file.endsWith(".md")) continue
    const path = join(dir, file)
    const text = readFileSync(path, "utf8")
    const fixed = text.replace(/^\*\*\*\n\n(title: .*\n(?:[a-z_]+: .*\n)*---\n)/, "---\n$1")
    if (fixed !== text) writeFileSync(path, fixed)
  }
}

if (failed.length > 0) {
  console.error(`docs: docgen failed for ${failed.join(", ")}`)
  process.exit(1)
}
console.log(`docs: written to ${relative(root, join(root, "build", "docs"))}/`)
