#!/usr/bin/env node
/**
 * Bundles the built server (`dist/main.js`, tsc's output, and everything it imports) into one file,
 * `dist/server.js`, which `npm start` runs: Node then loads one module instead of about 1,100 (Effect's, ours and
 * their dependencies), and a start costs half the CPU.
 *
 * - What the bundle leaves out, loaded from `node_modules` as before: the native SQLite driver (`better-sqlite3`),
 *   the PostgreSQL driver (`pg`, with its optional native binding), and the optional AWS SDK and OpenTelemetry
 *   packages. None of them imports `effect`, so one copy of Effect runs.
 * - Each bundled module keeps its own `import.meta.url` (rewritten relative to the bundle), so what it finds beside
 *   itself (the dashboard's assets, the video encoder's thread, package versions) is found where it was built.
 * - `dist/server.js.map` maps it back to the built files (`node --enable-source-maps`).
 * - The bundle is ASCII only. V8 keeps a script's source in the heap for the life of the process, and in each
 *   thread: one byte a character only when every character is ASCII. esbuild escapes the non-ASCII text of code
 *   (its default `charset`) but not of the comments it keeps, so those characters are escaped here; one `§` would
 *   otherwise double the 5.9 MB that each thread holds.
 *
 * Without esbuild (installed with `--omit=dev` after a build) the bundle already built is kept.
 *
 *   node scripts/bundle.mjs
 */
import { existsSync } from "node:fs"
import { readFile, writeFile } from "node:fs/promises"
import { dirname, relative, sep } from "node:path"
import { fileURLToPath } from "node:url"

const dist = fileURLToPath(new URL("../dist/", import.meta.url))
const outfile = `${dist}server.js`

let esbuild
try {
  esbuild = await import("esbuild")
} catch {
  // installed without dev dependencies (`npm ci --omit=dev` after a build): the bundle built before is run
  if (existsSync(outfile)) process.exit(0)
  console.error(`${outfile} is missing and esbuild is not installed: run "npm ci && npm run build" first`)
  process.exit(1)
}

/** Replaces `import.meta.url` in each module with the module's own URL, relative to the bundle. */
const ownUrls = {
  name: "own-import-meta-url",
  setup(build) {
    build.onLoad({ filter: /\.m?js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8")
      if (!source.includes("import.meta.url")) return undefined
      const path = relative(dirname(outfile), args.path).split(sep).join("/")
      const own = `new URL(${JSON.stringify(path)}, import.meta.url).href`
      return { contents: source.replaceAll("import.meta.url", own), loader: "js", resolveDir: dirname(args.path) }
    })
  }
}

await esbuild.build({
  entryPoints: [`${dist}main.js`],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  external: ["better-sqlite3", "pg", "@aws-sdk/*", "@opentelemetry/*"],
  // the CommonJS packages inside (jsonata, ws, pg) require Node's own modules
  banner: {
    js:
      "import { createRequire as __mediagateRequire } from \"node:module\"\nconst require = __mediagateRequire(import.meta.url)"
  },
  plugins: [ownUrls],
  logLevel: "warning"
})

// the comments esbuild kept: each non-ASCII UTF-16 unit as a `\uXXXX` escape (in code esbuild has escaped them all)
const text = await readFile(outfile, "utf8")
const ascii = text.replace(/[\u0080-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)
if (ascii !== text) await writeFile(outfile, ascii)
