#!/usr/bin/env node
/**
 * Before `npm start`: builds the server with `tsc -b <project>` when TypeScript is installed (incremental: quick
 * when nothing changed). Without TypeScript (`npm ci --omit=dev`) it checks that the build is there and says how
 * to make it otherwise.
 *
 *   node scripts/ensure-built.mjs <tsconfig> <file the build must produce>
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"

const [project, output] = process.argv.slice(2)
if (project === undefined || output === undefined) {
  console.error("usage: ensure-built.mjs <tsconfig> <output file>")
  process.exit(2)
}
let tsc
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
} catch {
  tsc = undefined
}
if (tsc !== undefined) {
  const result = spawnSync(process.execPath, [tsc, "-b", project], { stdio: "inherit" })
  process.exit(result.status ?? 1)
}
if (!existsSync(output)) {
  console.error(`${output} is missing and TypeScript is not installed: run "npm ci && npm run build" first`)
  process.exit(1)
}
