/**
 * Embedding Mediagate into an existing Effect HTTP app: the app keeps its own routes and mounts Mediagate's
 * `httpApp` (from `Mediagate.layer`) under `/media`, where it serves its API, files, docs and dashboard
 * (`/media/api/v1/...`, `/media/dashboard`). `HttpRouter.mountApp` strips the prefix, as Mediagate expects.
 *
 *   npm run embed:effect --workspace=@mediagate/example-server      (PORT, default 3100; SQLite in memory)
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Mediagate } from "@mediagate/node"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { createServer } from "node:http"

/** Where the app mounts Mediagate. */
export const prefix = "/media"

/** Mediagate for this app; `options` override the example's settings. */
export const MediagateLive = (options: Mediagate.Options = {}) =>
  Mediagate.layer({
    database: { sqlite: ":memory:" },
    dataDir: "./data/effect-app",
    publicBaseUrl: `http://localhost:3100${prefix}`,
    ...options
  })

/** The host app: its own routes, with Mediagate mounted under {@link prefix}. */
export const HostApp = Layer.unwrapEffect(
  Effect.map(Mediagate.Mediagate, (mediagate) =>
    HttpServer.serve(HttpRouter.empty.pipe(
      HttpRouter.get("/", HttpServerResponse.text("the host app")),
      HttpRouter.mountApp(prefix, mediagate.httpApp)
    )))
)

/** On a new database: the first account's test key, printed. */
const PrintKeys = Layer.effectDiscard(Effect.gen(function*() {
  const keys = yield* (yield* Mediagate.Mediagate).bootstrap()
  if (Option.isSome(keys)) yield* Console.log(`test key: ${keys.value.test.key}`)
}))

if (import.meta.url === `file://${process.argv[1]}`) {
  Layer.merge(HostApp, PrintKeys).pipe(
    HttpServer.withLogAddress,
    Layer.provide(MediagateLive()),
    Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env["PORT"] ?? "3100") })),
    Layer.launch,
    NodeRuntime.runMain
  )
}
