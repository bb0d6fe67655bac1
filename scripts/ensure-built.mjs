#!/usr/bin/env node
/**
 * Before `npm start`: builds the server with `tsc -b <project>` (the compiler `tsc.mjs` names) when TypeScript is
 * installed (incremental: quick when nothing changed; again with `--force` when the output file is missing though its
 * build info is there), and
 * the dashboard's assets (packages/dashboard/scripts/build.mjs, esbuild) when they are missing and esbuild is
 * installed. Without TypeScript (`npm ci --omit=dev`) it checks that the build is there and
 * says how to make it otherwise.
 *
 *   node scripts/ensure-built.mjs <tsconfig> <file the build must produce>
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { compiler } from "./tsc.mjs"

const [project, output] = process.argv.slice(2)
if (project === undefined || output === undefined) {
  console.error("usage: ensure-built.mjs <tsconfig> <output file>")
  process.exit(2)
}
const tsc = compiler()
// the dashboard's assets (the server answers /dashboard with 503 and how to build them while they are missing)
const dashboard = fileURLToPath(new URL("../packages/dashboard/", import.meta.url))
if (existsSync(`${dashboard}scripts/build.mjs`) && !existsSync(`${dashboard}dist/assets/index.html`)) {
  let esbuild
  try {
    esbuild = createRequire(`${dashboard}package.json`).resolve("esbuild")
  } catch {
    esbuild = undefined
  }
  if (esbuild !== undefined) {
    const built = spawnSync(process.execPath, [`${dashboard}scripts/build.mjs`], { stdio: "inherit" })
    if (built.status !== 0) process.exit(built.status ?? 1)
  } else {
    console.error(
      "the dashboard's assets are missing and esbuild is not installed: run \"npm ci && npm run build\" first"
    )
  }
}
if (tsc !== undefined) {
  const result = spawnSync(process.execPath, [tsc, "-b", project], { stdio: "inherit" })
  if (result.status !== 0 || existsSync(output)) process.exit(result.status ?? 1)
  // the output was deleted but the build info still says it is built (tsc -b then does nothing): build it afresh
  console.error(`${output} is missing though its build is recorded as up to date: building again (tsc -b --force)`)
  const forced = spawnSync(process.execPath, [tsc, "-b", "--force", project], { stdio: "inherit" })
  process.exit(forced.status ?? 1)
}
if (!existsSync(output)) {
  console.error(`${output} is missing and TypeScript is not installed: run "npm ci && npm run build" first`)
  process.exit(1)
}
