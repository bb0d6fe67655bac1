/**
 * The self-hosted Mediagate server: every package composed into one Node process (see `Stack.ts`), on SQLite in
 * `./data` by default or PostgreSQL with `DATABASE_URL`. On first start with an empty database and no admin token,
 * it creates a first account with a live and a test key and prints them once (decisions.md §9).
 * SIGINT/SIGTERM stop it gracefully: the server stops accepting, workers hand back their leases.
 */
import { NodeRuntime } from "@effect/platform-node"
import * as Bootstrap from "@mediagate/accounts/Bootstrap"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Database from "./Database.js"
import * as Stack from "./Stack.js"

const main = Effect.gen(function*() {
  const where = yield* Database.location
  yield* Effect.logInfo(where._tag === "Postgres" ? "database: PostgreSQL" : `database: SQLite at ${where.file}`)
  const context = yield* Layer.build(Stack.Live.pipe(Layer.provide(Database.layerOf(where))))
  const adminToken = yield* Config.option(Config.string("MEDIAGATE_ADMIN_TOKEN"))
  if (Option.isNone(adminToken)) {
    const created = yield* Bootstrap.bootstrap().pipe(Effect.provide(context))
    if (Option.isSome(created)) {
      yield* Console.log(
        [
          "",
          "Mediagate created a first account (shown once; keep these keys):",
          `  account:  ${created.value.account.id}`,
          `  live key: ${created.value.live.key}`,
          `  test key: ${created.value.test.key}`,
          ""
        ].join("\n")
      )
    }
  }
  return yield* Effect.never
})

/** `MEDIAGATE_LOG_FORMAT=json` writes one JSON object per log line (for log collectors); the default is readable. */
const Logging = Layer.unwrapEffect(Effect.map(
  Config.literal("pretty", "json")("MEDIAGATE_LOG_FORMAT").pipe(Config.withDefault("pretty" as const)),
  (format) => format === "json" ? Logger.json : Layer.empty
))

NodeRuntime.runMain(Effect.scoped(main).pipe(Effect.provide(Logging)))
