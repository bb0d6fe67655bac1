/**
 * Integrations that are off by default live in optional packages (docs/configuration.md "Optional packages"):
 * configured while their package is not installed, they stop the start with an error that names the package and
 * its install line, and never break a stack that does not use them. The package is made "not installed" by
 * replacing the importer (`OptionalPackage.CurrentImporter`); the configured paths with the packages installed run
 * in Traces.test.ts and the vendors' FileStoreConformance.test.ts (S3 on s3rver).
 */
import { describe, expect, it } from "@effect/vitest"
import { OptionalPackage } from "@mediagate/contract"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
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
})
