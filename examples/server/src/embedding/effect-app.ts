/**
 * Embedding Mediagate into an existing Effect HTTP app: the app keeps its own routes and mounts Mediagate's
 * (`/api/v1/...`, `/admin/v1/...`, `/files/...`, `/docs`) next to them, from `Mediagate.layer`.
 *
 *   npm run embed:effect --workspace=@mediagate/example-server      (PORT, default 3100; SQLite in memory)
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Mediagate } from "@mediagate/node"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { createServer } from "node:http"

/** The host app: its own routes, with Mediagate mounted under its paths. */
export const HostApp = Layer.unwrapScoped(Effect.gen(function*() {
  const mediagate = yield* Mediagate.Mediagate
  const keys = yield* mediagate.bootstrap()
  if (Option.isSome(keys)) yield* Console.log(`test key: ${keys.value.test.key}`)
  const router = HttpRouter.empty.pipe(
    HttpRouter.get("/", HttpServerResponse.text("the host app")),
    HttpRouter.mountApp("/api", mediagate.httpApp, { includePrefix: true }),
    HttpRouter.mountApp("/files", mediagate.httpApp, { includePrefix: true }),
    HttpRouter.mountApp("/docs", mediagate.httpApp, { includePrefix: true })
  )
  return HttpServer.serve(router)
})).pipe(Layer.provide(Mediagate.layer({ database: { sqlite: ":memory:" }, dataDir: "./data/effect-app" })))

if (import.meta.url === `file://${process.argv[1]}`) {
  HostApp.pipe(
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env["PORT"] ?? "3100") })),
    Layer.launch,
    NodeRuntime.runMain
  )
}
