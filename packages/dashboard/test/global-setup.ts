/**
 * Before the dashboard's suites: builds its assets (`scripts/build.mjs`, about a second), once, so that every suite
 * serves what a user gets.
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export default function setup() {
  const script = fileURLToPath(new URL("../scripts/build.mjs", import.meta.url))
  const result = spawnSync(process.execPath, [script], { encoding: "utf8" })
  if (result.status !== 0) throw new Error(`dashboard build failed:\n${result.stdout}${result.stderr}`)
  process.stdout.write(result.stdout)
}
