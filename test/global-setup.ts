/**
 * Before the end-to-end suites: build every package and the example server (`tsc -b tsconfig.build.json` with the
 * compiler of `scripts/tsc.mjs`, and the server's bundle: what `npm run build` runs after the dashboard; quick when
 * nothing changed), so that they run the JavaScript a user runs. The build runs beside the suites rather than before
 * them: the package suites run from the sources and fill the cores meanwhile, and what needs the build waits for it
 * (`built` in `build.ts`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, renameSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { TestProject } from "vitest/node"
// the key it provides, `mediagateBuild`, is declared with the reader (vitest itself cannot be imported here)
import type {} from "./build.js"

export default function setup(project: TestProject) {
  const root = fileURLToPath(new URL("..", import.meta.url))
  const status = join(mkdtempSync(join(tmpdir(), "mediagate-build-")), "status.json")
  project.provide("mediagateBuild", status)
  let output = ""
  // written whole, then renamed into place: a reader never sees half of it
  const done = (code: number | null, text: string) => {
    writeFileSync(`${status}.part`, JSON.stringify({ code, output: text }))
    renameSync(`${status}.part`, status)
  }
  let child: ChildProcess
  /** Runs one step of the build; `next` once it succeeded. */
  const step = (args: ReadonlyArray<string>, next: () => void) => {
    child = spawn(process.execPath, args, { cwd: root, stdio: "pipe" })
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.on("error", (error) => done(null, String(error)))
    child.on("exit", (code) => code === 0 ? next() : done(code, output))
  }
  // the packages and the example server, then the server's bundle (`npm start` runs it)
  step(
    ["scripts/tsc.mjs", "-b", "tsconfig.build.json"],
    () => step(["examples/server/scripts/bundle.mjs"], () => done(0, output))
  )
  return () => {
    if (child.exitCode === null) child.kill("SIGTERM")
  }
}
