/**
 * Integrations that are off by default live in optional packages (docs/configuration.md "Optional packages"):
 * configured while their package is not installed, they stop the start with an error that names the package and
 * its install line, and never break a stack that does not use them. The package is made "not installed" by
 * replacing the importer (`OptionalPackage.CurrentImporter`), or for the `mediagate` command's own process by a
 * resolve hook; the configured paths with the packages installed run in Traces.test.ts, Cli.test.ts and the
 * vendors' FileStoreConformance.test.ts (S3 on s3rver).
 */
import { describe, expect, it } from "@effect/vitest"
import { OptionalPackage } from "@mediagate/contract"
import { run } from "@mediagate/testing/processes"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Tracing from "../src/internal/tracing.js"
import * as Mediagate from "../src/Mediagate.js"

/** An importer for which `names` are not installed (rejects as Node's `import()` does). */
const without = (...names: ReadonlyArray<string>): OptionalPackage.Importer => (spec, load) =>
  names.includes(spec.name)
    ? Promise.reject(Object.assign(new Error(`Cannot find package '${spec.name}'`), { code: "ERR_MODULE_NOT_FOUND" }))
    : load()

const otlp = ConfigProvider.fromMap(new Map([["OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"]]))
const tracerEnabled = FiberRef.get(FiberRef.currentTracerEnabled)

describe("optional packages", () => {
  it.scoped("MEDIAGATE_FILE_STORE=s3 without @aws-sdk/client-s3: a start error, not retried, naming the install", () =>
    Effect.gen(function*() {
      const stack = Mediagate.layer({
        dataDir: mkdtempSync(join(tmpdir(), "mg-optional-")),
        settings: { MEDIAGATE_FILE_STORE: "s3", MEDIAGATE_S3_BUCKET: "media" }
      })
      const error = yield* Effect.flip(Layer.build(stack)).pipe(
        Effect.provideService(OptionalPackage.CurrentImporter, without("@aws-sdk/client-s3"))
      )
      expect(error).toBeInstanceOf(Mediagate.StartError)
      expect(error.retryable).toBe(false)
      expect(error.message).toBe(
        "MEDIAGATE_FILE_STORE=s3 needs the package @aws-sdk/client-s3, which is not installed: " +
          "npm install @aws-sdk/client-s3@^3"
      )
    }))

  it.scoped("the local file store starts without @aws-sdk/client-s3 and @effect/opentelemetry", () =>
    Effect.gen(function*() {
      const stack = Mediagate.layer({ dataDir: mkdtempSync(join(tmpdir(), "mg-optional-")) })
      const context = yield* Layer.build(stack).pipe(
        Effect.provideService(OptionalPackage.CurrentImporter, without("@aws-sdk/client-s3", "@effect/opentelemetry"))
      )
      const service = yield* Effect.provide(Mediagate.Mediagate, Layer.succeedContext(context))
      expect((yield* service.bootstrap())._tag).toBe("Some")
    }))

  it.effect("an OTLP endpoint without @effect/opentelemetry: the server stops with the install line", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Tracing.apply(tracerEnabled)).pipe(
        Effect.withConfigProvider(otlp),
        Effect.provideService(OptionalPackage.CurrentImporter, without("@effect/opentelemetry"))
      )
      expect(error).toBeInstanceOf(OptionalPackage.MissingPackage)
      expect(error.message).toBe(
        "Trace export (OTEL_EXPORTER_OTLP_ENDPOINT) needs the package @effect/opentelemetry, which is not installed: " +
          "npm install @effect/opentelemetry@^0.64"
      )
    }))

  it.scoped("an OTLP endpoint without @effect/opentelemetry: Mediagate.make logs it and runs untraced", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const logger = Logger.make(({ message }) => void logs.push(String(message)))
      const enabled = yield* Tracing.applyScoped(tracerEnabled, otlp).pipe(
        Effect.provideService(OptionalPackage.CurrentImporter, without("@effect/opentelemetry")),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      expect(enabled).toBe(false)
      expect(logs).toEqual([
        "tracing stays off: Trace export (OTEL_EXPORTER_OTLP_ENDPOINT) needs the package @effect/opentelemetry, " +
        "which is not installed: npm install @effect/opentelemetry@^0.64"
      ])
    }))

  it.scoped("with the package installed, the endpoint turns the tracer on", () =>
    Effect.gen(function*() {
      expect(yield* Effect.scoped(Tracing.apply(tracerEnabled)).pipe(Effect.withConfigProvider(otlp))).toBe(true)
      expect(yield* Tracing.applyScoped(tracerEnabled, otlp)).toBe(true)
    }))

  it("the mediagate command without @effect/cli: exit code 1 and the install line", async () => {
    // the command's own process, with a resolve hook that finds no @effect/cli (as in an app that did not install it)
    const dir = mkdtempSync(join(tmpdir(), "mg-optional-"))
    writeFileSync(
      join(dir, "hooks.mjs"),
      [
        "export async function resolve(specifier, context, next) {",
        "  if (specifier === \"@effect/cli\" || specifier.startsWith(\"@effect/cli/\")) {",
        "    throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: \"ERR_MODULE_NOT_FOUND\" })",
        "  }",
        "  return next(specifier, context)",
        "}"
      ].join("\n")
    )
    writeFileSync(
      join(dir, "register.mjs"),
      `import { register } from "node:module"\nregister(${
        JSON.stringify(pathToFileURL(join(dir, "hooks.mjs")).href)
      })\n`
    )
    const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
    const ran = await run(process.execPath, [
      "--conditions=@mediagate/source",
      "--import",
      "tsx",
      "--import",
      pathToFileURL(join(dir, "register.mjs")).href,
      bin,
      "accounts",
      "show",
      "acct_1"
    ], { env: { ...process.env, MEDIAGATE_DATA_DIR: dir }, timeoutMs: 60_000 })
    expect(ran.status, ran.stdout + ran.stderr).toBe(1)
    expect(ran.stdout + ran.stderr).toContain(
      "The mediagate command needs the package @effect/cli, which is not installed: npm install @effect/cli@^0.77"
    )
  }, 90_000)
})
