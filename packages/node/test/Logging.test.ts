/**
 * The production server's log writer (`Logging.stdoutLines`): the lines of 20 ms go to stdout in
 * one write (at most 64 KiB wait), in order, without ANSI escape sequences when stdout is not a terminal, and what
 * is left is written when the process exits.
 */
import { describe, expect, it } from "@effect/vitest"
import { run } from "@mediagate/testing/processes"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
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
    await new Promise((resolve) => setTimeout(resolve, 100))
  } finally {
    process.stdout.write = original
  }
  return writes
}

const text = Logging.layer({ format: "text", level: LogLevel.Info }, Logging.stdoutLines)

describe("Logging.stdoutLines", () => {
  it("writes the lines of a moment together, in order, without escape sequences", async () => {
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

  it("writes what is left when the process exits", async () => {
    const module = fileURLToPath(new URL("../src/Logging.ts", import.meta.url))
    const script = [
      `import * as Effect from "effect/Effect"`,
      `import * as LogLevel from "effect/LogLevel"`,
      `import * as Logging from ${JSON.stringify(module)}`,
      `const layer = Logging.layer({ format: "json", level: LogLevel.Info }, Logging.stdoutLines)`,
      `Effect.runSync(Effect.logInfo("before exit").pipe(Effect.provide(layer)))`,
      `process.exit(3)`
    ].join("\n")
    const ran = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      timeoutMs: 60_000
    })
    expect(ran.status, ran.stderr).toBe(3)
    expect(JSON.parse(ran.stdout.trim())).toMatchObject({ message: "before exit", logLevel: "INFO" })
  }, 90_000)
})

describe("Logging.FieldsMessage", () => {
  /** The lines `effect` writes through `Logging.layer` in `format`. */
  const written = async (format: "text" | "json", effect: Effect.Effect<void>) => {
    const lines: Array<string> = []
    await Effect.runPromise(
      effect.pipe(Effect.provide(Logging.layer({ format, level: LogLevel.Info }, (line) => lines.push(line))))
    )
    return lines
  }
  /** A logfmt line's fields but the timestamp, the fiber and the span's time, which differ between two lines. */
  const logfmtFields = (line: string) =>
    Object.fromEntries(
      [...line.matchAll(/(\S+?)=("(?:[^"\\]|\\.)*"|\S*)/g)]
        .map(([, name, value]) => [name!, value!] as const)
        .filter(([name]) => name !== "timestamp" && name !== "fiber" && name !== "handler")
    )
  const fields = [
    ["http.method", "GET"],
    ["http.path", "/a b=\"c\""],
    ["http.status", 200],
    ["http.ms", 1.5],
    ["request_id", "r1"]
  ] as const
  /** The line of a `FieldsMessage`, and the same message logged with its fields as annotations. */
  const both = (format: "text" | "json") =>
    Effect.all([
      Effect.promise(() =>
        written(
          format,
          Effect.logInfo(new Logging.FieldsMessage("GET /a 200 1.5ms", fields)).pipe(
            Effect.annotateLogs({ tenant: "t 1", request_id: "from the fiber" }),
            Effect.withLogSpan("handler")
          )
        )
      ),
      Effect.promise(() =>
        written(
          format,
          // the inner annotations (the fields) win over the outer ones (the fiber's)
          Effect.logInfo("GET /a 200 1.5ms").pipe(
            Effect.annotateLogs(Object.fromEntries(fields)),
            Effect.annotateLogs({ tenant: "t 1", request_id: "from the fiber" }),
            Effect.withLogSpan("handler")
          )
        )
      )
    ])

  it.effect("writes in logfmt what the logger writes for the text with the fields as annotations", () =>
    Effect.gen(function*() {
      const [[fast], [plain]] = yield* both("text")
      expect(fast).toMatch(/^timestamp=\S+ level=INFO fiber=#\d+ message="GET \/a 200 1.5ms" handler=\d+ms /)
      expect(logfmtFields(fast!)).toEqual(logfmtFields(plain!))
      // the message's field wins over the fiber's annotation of the same name
      expect(logfmtFields(fast!)["request_id"]).toBe("r1")
      expect(logfmtFields(fast!)["http.path"]).toBe(JSON.stringify("/a b=\"c\""))
    }))

  it.effect("writes in JSON what the logger writes for the text with the fields as annotations", () =>
    Effect.gen(function*() {
      const [[fast], [plain]] = yield* both("json")
      const { fiberId: _f, spans: spansA, timestamp: _t, ...a } = JSON.parse(fast!) as Record<string, object>
      const { fiberId: _g, spans: spansB, timestamp: _u, ...b } = JSON.parse(plain!) as Record<string, object>
      expect(a).toEqual(b)
      expect(Object.keys(spansA!)).toEqual(Object.keys(spansB!))
      expect(a).toMatchObject({ message: "GET /a 200 1.5ms", annotations: { request_id: "r1", tenant: "t 1" } })
    }))

  it.effect("a line with a cause is the logger's own, the fields left to the text", () =>
    Effect.gen(function*() {
      const [line] = yield* Effect.promise(() =>
        written("text", Effect.logError(new Logging.FieldsMessage("failed", fields), Cause.fail("boom")))
      )
      expect(line).toMatch(/message=failed cause=/)
    }))

  it.effect("a line logged in a span is an event of it: the text, the fields as attributes", () =>
    Effect.gen(function*() {
      const span = yield* Effect.gen(function*() {
        yield* Effect.logInfo(new Logging.FieldsMessage("GET /a 200 1.5ms", fields))
        return yield* Effect.currentSpan
      }).pipe(
        Effect.withSpan("request"),
        Effect.provide(Logging.layer({ format: "text", level: LogLevel.Info }, () => undefined))
      )
      const events = (span as unknown as { events: Array<[string, bigint, Record<string, unknown>]> }).events
      expect(events).toHaveLength(1)
      expect(events[0]![0]).toBe("GET /a 200 1.5ms")
      expect(events[0]![2]).toMatchObject({ "http.method": "GET", "http.status": 200, request_id: "r1" })
    }))

  /** What `writeInfoLine` does on a fiber under `layer`, and the line it wrote, if any. */
  const direct = (
    layer: (write: (line: string) => void) => Layer.Layer<never>,
    wrap: (effect: Effect.Effect<boolean>) => Effect.Effect<boolean> = (effect) => effect
  ) =>
    Effect.promise(async () => {
      const lines: Array<string> = []
      const wrote = await Effect.runPromise(
        wrap(Effect.withFiberRuntime((fiber) =>
          Effect.succeed(Logging.writeInfoLine(fiber, new Date(), "GET /a 200 1.5ms", fields))
        )).pipe(Effect.provide(layer((line) =>
          lines.push(line)
        )))
      )
      return { wrote, lines }
    })

  it.effect("writeInfoLine writes the line logging it would, or leaves it to the logging where that differs", () =>
    Effect.gen(function*() {
      for (const format of ["text", "json"] as const) {
        const layer = (write: (line: string) => void) => Logging.layer({ format, level: LogLevel.Info }, write)
        const [plain] = yield* Effect.promise(() =>
          written(format, Logging.logInfoWithFields("GET /a 200 1.5ms", fields))
        )
        const { lines, wrote } = yield* direct(layer)
        expect(wrote).toBe(true)
        expect(lines).toHaveLength(1)
        if (format === "text") expect(logfmtFields(lines[0]!)).toEqual(logfmtFields(plain!))
        else {
          const { fiberId: _f, timestamp: _t, ...a } = JSON.parse(lines[0]!) as Record<string, unknown>
          const { fiberId: _g, timestamp: _u, ...b } = JSON.parse(plain!) as Record<string, unknown>
          expect(a).toEqual(b)
        }
        // what the loggers would add (annotations, log spans, a span's ids and event): left to the logging
        for (
          const wrap of [
            Effect.annotateLogs({ tenant: "t" }),
            Effect.withLogSpan("handler"),
            Effect.withSpan("request")
          ] as const
        ) {
          expect(yield* direct(layer, wrap)).toEqual({ wrote: false, lines: [] })
        }
        // under a minimum level above Info: dealt with, nothing written
        const quiet = (write: (line: string) => void) => Logging.layer({ format, level: LogLevel.Warning }, write)
        expect(yield* direct(quiet)).toEqual({ wrote: true, lines: [] })
      }
      // without a writer of its own (the console, pretty lines), or beside a logger of the app's: left to the logging
      expect((yield* direct(() => Logging.layer({ format: "text", level: LogLevel.Info }))).wrote).toBe(false)
      expect((yield* direct(() => Logging.layer({ format: "pretty", level: LogLevel.Info }))).wrote).toBe(false)
      const beside = (write: (line: string) => void) =>
        Layer.merge(
          Logging.layer({ format: "text", level: LogLevel.Info }, write),
          Logger.add(Logger.make(() => undefined))
        )
      expect(yield* direct(beside)).toEqual({ wrote: false, lines: [] })
    }))
})
