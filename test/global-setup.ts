/**
 * Before the end-to-end suites: build every package and the example server (`npm run build`, `tsc -b`; quick
 * when nothing changed), so that they run the JavaScript a user runs, once, before any suite starts.
 */
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

export default function setup() {
  const root = fileURLToPath(new URL("..", import.meta.url))
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
  const result = spawnSync(process.execPath, [tsc, "-b", "tsconfig.build.json"], { cwd: root, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`npm run build failed:\n${result.stdout}${result.stderr}`)
}
