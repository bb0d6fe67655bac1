#!/usr/bin/env node
/**
 * Builds the dashboard's static assets with esbuild: `ui/main.tsx` (Preact, TSX) and its CSS bundled, minified and
 * content-hashed into `dist/assets`, `index.html` written with their names (under `%ASSETS%`, which the server
 * replaces per request with a URL relative to the page), a gzip twin of each asset, and a size
 * report printed. Workspace packages are bundled from their TypeScript sources (the `@mediagate/source`
 * condition), so the build needs no other package built first. `node:net` and `node:crypto`, which two contract
 * modules import for the server side, are replaced by small browser shims (`ui/shims`).
 *
 * Usage: node packages/dashboard/scripts/build.mjs [--quiet]
 */
import * as esbuild from "esbuild"
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises"
import { basename, join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"

const root = fileURLToPath(new URL("..", import.meta.url))
const outdir = join(root, "dist", "assets")
const quiet = process.argv.includes("--quiet")

await rm(outdir, { recursive: true, force: true })
await mkdir(outdir, { recursive: true })

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { app: "ui/main.tsx" },
  outdir,
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
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
  logLevel: "warning"
})

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file))
const script = outputs.find((name) => name.endsWith(".js"))
const style = outputs.find((name) => name.endsWith(".css"))
if (script === undefined || style === undefined) {
  throw new Error(`dashboard build: missing outputs in ${outputs.join(", ")}`)
}

const template = await readFile(join(root, "ui", "index.html"), "utf8")
await writeFile(
  join(outdir, "index.html"),
  // `%ASSETS%` is filled in per request with a URL relative to the page (src/Dashboard.ts: any mount path works)
  template.replace("%SCRIPT%", `%ASSETS%/${script}`).replace("%STYLE%", `%ASSETS%/${style}`)
)

const report = []
for (const name of (await readdir(outdir)).sort()) {
  const body = await readFile(join(outdir, name))
  const gzip = gzipSync(body, { level: 9 })
  if (name !== "index.html" && body.length > 1024) await writeFile(join(outdir, `${name}.gz`), gzip)
  report.push({ name, bytes: body.length, gzip: gzip.length })
}
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`
if (!quiet) {
  console.log("dashboard: built packages/dashboard/dist/assets")
  for (const { bytes, gzip, name } of report) {
    console.log(`  ${name.padEnd(36)} ${kb(bytes).padStart(10)}  gzip ${kb(gzip).padStart(9)}`)
  }
  const total = report.filter((r) => r.name !== "index.html" && !r.name.endsWith(".txt"))
  console.log(
    `  ${"total (js + css)".padEnd(36)} ${kb(total.reduce((s, r) => s + r.bytes, 0)).padStart(10)}  gzip ${
      kb(total.reduce((s, r) => s + r.gzip, 0)).padStart(9)
    }`
  )
}
