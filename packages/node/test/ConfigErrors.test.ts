/**
 * A setting out of its range is refused with the variable's name: the operator reads
 * `invalid configuration: (Invalid data at MEDIAGATE_WORKER_CONCURRENCY: "must be 0 or more")`, not a message
 * without the name (a range check after the default loses the path); the server's start names only that value
 * (`ConfigErrors.describe`), not the missing-value alternatives of the setting's default.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Ledger from "@mediagate/billing/Ledger"
import * as Admission from "@mediagate/engine/Admission"
import * as Worker from "@mediagate/engine/Worker"
import * as ServerConfig from "@mediagate/server/ServerConfig"
import * as UrlSigner from "@mediagate/vendors/UrlSigner"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Database from "../src/Database.js"
import * as ConfigErrors from "../src/internal/configErrors.js"
import * as Tracing from "../src/internal/tracing.js"

const provider = (variables: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(variables)))

const cases: ReadonlyArray<{
  readonly name: string
  readonly value: string
  readonly read: Effect.Effect<unknown, unknown>
  readonly extra?: Record<string, string>
}> = [
  { name: "MEDIAGATE_WORKER_CONCURRENCY", value: "-1", read: Worker.config },
  { name: "MEDIAGATE_WORKER_LEASE", value: "10ms", read: Worker.config },
  { name: "MEDIAGATE_ADMISSION_MAX_WAIT_MS", value: "999999", read: Admission.config },
  { name: "MEDIAGATE_ADMISSION_MAX_UTILIZATION", value: "2", read: Admission.config },
  { name: "MEDIAGATE_DEFAULT_CREDIT_LIMIT", value: "-5", read: Ledger.defaultCreditLimitConfig },
  { name: "MEDIAGATE_RATE_LIMIT_RPM", value: "-1", read: ServerConfig.config },
  {
    name: "MEDIAGATE_PUBLIC_BASE_URL",
    value: "ftp://files.example",
    read: Effect.asVoid(Effect.scoped(Layer.build(UrlSigner.layerConfig)))
  },
  { name: "OTEL_TRACES_EXPORTER", value: "zipkin", read: Tracing.config },
  {
    name: "MEDIAGATE_DB_MAX_CONNECTIONS",
    value: "1",
    read: Database.config,
    extra: { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test" }
  },
  { name: "MEDIAGATE_SQLITE_SYNCHRONOUS", value: "sometimes", read: Database.config }
]

describe("a setting out of its range", () => {
  for (const { extra, name, read, value } of cases) {
    it.effect(`${name}=${value} is refused with the variable's name`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(
          Effect.withConfigProvider(read as Config.Config<unknown>, provider({ ...extra, [name]: value }))
        )
        assert.include(String(error), `Invalid data at ${name}:`)
        // as the server's start reports it: the wrong value only
        const described = ConfigErrors.describe(error as never)
        assert.match(described, new RegExp(`^${name}: `))
        assert.notInclude(described, "provided map")
      }))
  }

  it.effect("a setting that is missing is named as missing; two wrong values are both named", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(
        Effect.withConfigProvider(Config.string("MEDIAGATE_SOMETHING"), provider({}))
      )
      assert.strictEqual(
        ConfigErrors.describe(missing),
        "MEDIAGATE_SOMETHING: Expected MEDIAGATE_SOMETHING to exist in the provided map"
      )
      const both = yield* Effect.flip(Effect.withConfigProvider(
        Config.all([Config.integer("A").pipe(Config.withDefault(1)), Config.integer("B").pipe(Config.withDefault(2))]),
        provider({ A: "x", B: "y" })
      ))
      assert.strictEqual(
        ConfigErrors.describe(both),
        "A: Expected an integer value but received \"x\"; B: Expected an integer value but received \"y\""
      )
    }))
})
