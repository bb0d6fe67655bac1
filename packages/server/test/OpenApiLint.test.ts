/**
 * Both OpenAPI documents as the server serves them (`/api/v1/openapi.json`, `/admin/v1/openapi.json`) pass
 * Redocly's lint with its recommended ruleset (the repository's `redocly.yaml`): no error, no warning. Redocly CLI
 * runs as a child process on the documents written to a temporary directory.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { send, TestServer } from "./harness.js"

const require = createRequire(import.meta.url)

/** Redocly CLI's entry point (a root devDependency). */
const redocly = (() => {
  const manifest = require.resolve("@redocly/cli/package.json")
  const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin: Record<string, string> }).bin["redocly"]!
  return join(dirname(manifest), bin)
})()

/** The repository's Redocly configuration. */
const config = fileURLToPath(new URL("../../../redocly.yaml", import.meta.url))

/** One problem as `redocly lint --format=json` reports it. */
interface Problem {
  readonly ruleId: string
  readonly severity: string
  readonly message: string
  readonly location: ReadonlyArray<{ readonly pointer: string }>
}

/** Lints a document file; answers the totals and problems of Redocly's JSON report. */
const lint = (file: string) =>
  Effect.async<{ totals: { errors: number; warnings: number }; problems: ReadonlyArray<Problem> }, Error>((resume) => {
    execFile(
      process.execPath,
      [redocly, "lint", "--config", config, "--format=json", file],
      {
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
        maxBuffer: 64 * 1024 * 1024
      },
      (_error, stdout, stderr) => {
        // the exit code is 1 with errors: the report says which
        try {
          resume(Effect.succeed(JSON.parse(stdout)))
        } catch {
          resume(Effect.fail(new Error(`redocly lint gave no JSON report:\n${stdout}\n${stderr}`)))
        }
      }
    )
  })

describe("OpenAPI documents under Redocly's recommended rules", () => {
  it.layer(TestServer)((it) => {
    it.effect("/api/v1/openapi.json and /admin/v1/openapi.json: 0 errors, 0 warnings", () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "mg-redocly-"))
        for (const [name, path] of [["public", "/api/v1/openapi.json"], ["admin", "/admin/v1/openapi.json"]] as const) {
          const answer = yield* send("GET", path)
          assert.strictEqual(answer.status, 200, path)
          const file = join(dir, `${name}.json`)
          writeFileSync(file, answer.text)
          const report = yield* lint(file)
          const problems = report.problems
            .map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)
          expect(problems, path).toEqual([])
          expect(report.totals, path).toMatchObject({ errors: 0, warnings: 0 })
        }
      }), { timeout: 60_000 })
  })
})
