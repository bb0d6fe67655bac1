#!/usr/bin/env node
/**
 * Builds the dashboard's static assets with esbuild into `dist/assets`, minified and content-hashed: the entry
 * `ui/boot.tsx` (Preact, TSX: the sign-in form, drawn at once) with its CSS, the app it loads (`ui/app.tsx`: the
 * typed client, Effect, the views) and the operator console (`ui/views/Operator.tsx`), each imported dynamically
 * and so split into chunks of their own; `index.html` written with their names (under `%ASSETS%`, which the server
 * replaces per request with a URL relative to the page; the entry's static chunks preloaded), a gzip twin of each
 * asset, and a size report printed. Files are replaced whole, each asset's twin before it and `index.html` last, so
 * that a server reading the folder while a build runs serves a complete build. Workspace packages are bundled from their TypeScript sources (the
 * `@mediagate/source` condition), so the build needs no other package built first. `node:net` and `node:crypto`,
 * which two contract modules import for the server side, are replaced by small browser shims (`ui/shims`).
 *
 * Usage: node packages/dashboard/scripts/build.mjs [--quiet]
 */
import * as esbuild from "esbuild"
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { basename, join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"

const root = fileURLToPath(new URL("..", import.meta.url))
const outdir = join(root, "dist", "assets")
const quiet = process.argv.includes("--quiet")

await mkdir(outdir, { recursive: true })

/**
 * Writes a file whole or not at all (a temporary file, outside the assets folder, renamed over it): a server that
 * starts while a build runs (`npm pack`'s prepack beside a running test suite) reads the former file or the new one,
 * never a part, and never lists a temporary file.
 */
const staging = join(root, "dist", `.staging-${process.pid}`)
await mkdir(staging, { recursive: true })
const writeWhole = async (path, contents) => {
  const temporary = join(staging, basename(path))
  await writeFile(temporary, contents)
  await rename(temporary, path)
}

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { app: "ui/boot.tsx" },
  outdir,
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  // the operator console (views/Operator.tsx, imported dynamically) is a chunk of its own, as is what it shares
  chunkNames: "chunk-[hash]",
  splitting: true,
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  conditions: ["@mediagate/source"],
  alias: { "node:net": "./ui/shims/net.ts", "node:crypto": "./ui/shims/crypto.ts" },
  define: { "process.env.NODE_ENV": "\"production\"" },
  legalComments: "linked",
  metafile: true,
  write: false,
  logLevel: "warning"
})

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file))
const entry = Object.entries(result.metafile.outputs).find(([, output]) => output.entryPoint === "ui/boot.tsx")
const script = entry === undefined ? undefined : basename(entry[0])
const style = entry?.[1].cssBundle === undefined ? undefined : basename(entry[1].cssBundle)
if (script === undefined || style === undefined) {
  throw new Error(`dashboard build: missing outputs in ${outputs.join(", ")}`)
}

// the chunks the entry imports statically load with it (preloaded: no second round trip); the others on demand
const statics = entry[1].imports.filter((i) => i.kind === "import-statement").map((i) => basename(i.path))
const preloads = statics.map((name) => `<link rel="modulepreload" href="%ASSETS%/${name}">\n    `).join("")
const operatorOutput = Object.entries(result.metafile.outputs)
  .find(([, output]) => output.entryPoint === "ui/views/Operator.tsx")
const operator = operatorOutput === undefined ? undefined : basename(operatorOutput[0])
// what was built, for the browser suite (not served: outside dist/assets)
await writeWhole(
  join(root, "dist", "build.json"),
  JSON.stringify({ entry: script, style, preloaded: statics, operator }, null, 2)
)
const template = await readFile(join(root, "ui", "index.html"), "utf8")
const page = new TextEncoder().encode(
  // `%ASSETS%` is filled in per request with a URL relative to the page (src/Dashboard.ts: any mount path works)
  template.replace("%STYLE%", `%ASSETS%/${style}`).replace(
    "<script type=\"module\" src=\"%SCRIPT%\"></script>",
    `${preloads}<script type="module" src="%ASSETS%/${script}"></script>`
  )
)

// each asset's gzip twin before it, `index.html` (which names them) last, then what the former build left: a server
// that reads the folder meanwhile finds every asset it lists with its twin
const files = [...result.outputFiles.map((file) => ({ name: basename(file.path), body: file.contents }))]
  .sort((a, b) => a.name.localeCompare(b.name))
  .concat([{ name: "index.html", body: page }])
const report = []
const written = new Set()
for (const { body, name } of files) {
  const gzip = gzipSync(body, { level: 9 })
  if (name !== "index.html" && body.length > 1024) {
    await writeWhole(join(outdir, `${name}.gz`), gzip)
    written.add(`${name}.gz`)
  }
  await writeWhole(join(outdir, name), body)
  written.add(name)
  report.push({ name, bytes: body.length, gzip: gzip.length })
}
for (const name of await readdir(outdir)) {
  if (!written.has(name)) await rm(join(outdir, name), { force: true })
}
await rm(staging, { recursive: true, force: true })
report.sort((a, b) => a.name.localeCompare(b.name))
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`
if (!quiet) {
  console.log("dashboard: built packages/dashboard/dist/assets")
  for (const { bytes, gzip, name } of report) {
    console.log(`  ${name.padEnd(36)} ${kb(bytes).padStart(10)}  gzip ${kb(gzip).padStart(9)}`)
  }
  const line = (label, rows) =>
    console.log(
      `  ${label.padEnd(36)} ${kb(rows.reduce((s, r) => s + r.bytes, 0)).padStart(10)}  gzip ${
        kb(rows.reduce((s, r) => s + r.gzip, 0)).padStart(9)
      }`
    )
  const code = report.filter((r) => r.name !== "index.html" && !r.name.endsWith(".txt"))
  line("total (js + css)", code)
  // the sign-in form: the entry, its static chunks and the CSS; an account's console: all but the operator's chunk
  line("sign-in form (js + css)", code.filter((r) => [script, style, ...statics].includes(r.name)))
  // an account's console: what the entry loads, statically and dynamically, but the chunks loaded on first use only
  // (the operator console's, the playground's, the typed client that checks an operator's token) and what only
  // they import
  const outputs = result.metafile.outputs
  const onFirstUse = new Set(["ui/views/Operator.tsx", "ui/views/Playground.tsx", "ui/api.ts"])
  const reached = (from) => {
    const seen = new Set()
    const walk = (path) => {
      if (seen.has(path)) return
      seen.add(path)
      const output = outputs[path]
      if (output?.cssBundle !== undefined) seen.add(output.cssBundle)
      for (const next of output?.imports ?? []) {
        if (next.external === true) continue
        if (
          next.kind === "dynamic-import" && onFirstUse.has(outputs[next.path]?.entryPoint) && !from.includes(next.path)
        ) {
          continue
        }
        walk(next.path)
      }
    }
    for (const path of from) walk(path)
    return new Set([...seen].map((path) => basename(path)))
  }
  const entryPath = entry[0]
  const account = reached([entryPath])
  line("account console (js + css)", code.filter((r) => account.has(r.name)))
  const playgroundPath = Object.keys(outputs).find((path) => outputs[path].entryPoint === "ui/views/Playground.tsx")
  if (playgroundPath !== undefined) {
    const extra = reached([entryPath, playgroundPath])
    line("playground, on first use (js)", code.filter((r) => extra.has(r.name) && !account.has(r.name)))
  }
}
