/**
 * The production server's log writer (`Logging.stdoutLines`): the lines of one turn of the event loop go to stdout in
 * one write (at most 64 KiB wait), in order, without ANSI escape sequences when stdout is not a terminal, and what
 * is left is written when the process exits.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Logging from "../src/Logging.js"

/** Runs `body` with stdout's writes recorded instead of written; the writes once the turn's lines went out. */
const recording = async (body: () => Promise<void>) => {
  const writes: Array<string> = []
  const original = process.stdout.write
  process.stdout.write = ((chunk: string | Uint8Array) => {
    writes.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"))
    return true
  }) as typeof process.stdout.write
  try {
    await body()
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.stdout.write = original
  }
  return writes
}

const text = Logging.layer({ format: "text", level: LogLevel.Info }, Logging.stdoutLines)

describe("Logging.stdoutLines", () => {
  it("writes the lines of one turn together, in order, without escape sequences", async () => {
    const writes = await recording(() =>
      Effect.runPromise(
        Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          (i) => Effect.logInfo(i === 7 ? "\x1b[31mred\x1b[0m" : `line ${i}`),
          { discard: true }
        ).pipe(Effect.provide(text))
      )
    )
    expect(writes).toHaveLength(1)
    const lines = writes[0]!.trimEnd().split("\n")
    expect(lines).toHaveLength(200)
    expect(lines[0]).toMatch(/level=INFO .*message="line 0"/)
    expect(lines[199]).toMatch(/message="line 199"/)
    expect(lines[7]).toMatch(/message=red/)
    expect(writes[0]).not.toContain("\x1b")
  })

  it("writes a burst over 64 KiB in parts of about 64 KiB", async () => {
    const writes = await recording(() =>
      Effect.runPromise(
        Effect.forEach(Array.from({ length: 400 }, (_, i) => i), (i) => Effect.logInfo(`${i} ${"x".repeat(500)}`), {
          discard: true
        }).pipe(Effect.provide(text))
      )
    )
    const lines = writes.join("").trimEnd().split("\n")
    expect(lines).toHaveLength(400)
    expect(lines.map((line) => Number(/message="(\d+) /.exec(line)?.[1]))).toEqual([...Array(400).keys()])
    expect(writes.length).toBeGreaterThanOrEqual(3)
    for (const write of writes.slice(0, -1)) {
      expect(write.length).toBeGreaterThanOrEqual(64 * 1024)
      expect(write.length).toBeLessThan(64 * 1024 + 1024)
    }
  })

  it("writes what is left when the process exits", () => {
    const module = fileURLToPath(new URL("../src/Logging.ts", import.meta.url))
    const script = [
      `import * as Effect from "effect/Effect"`,
      `import * as LogLevel from "effect/LogLevel"`,
      `import * as Logging from ${JSON.stringify(module)}`,
      `const layer = Logging.layer({ format: "json", level: LogLevel.Info }, Logging.stdoutLines)`,
      `Effect.runSync(Effect.logInfo("before exit").pipe(Effect.provide(layer)))`,
      `process.exit(3)`
    ].join("\n")
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 60_000
    })
    expect(run.status, run.stderr).toBe(3)
    expect(JSON.parse(run.stdout.trim())).toMatchObject({ message: "before exit", logLevel: "INFO" })
  })
})
