/**
 * The framework floor: a bare Effect `HttpApi` server with the two benchmarked routes, the same bearer security
 * middleware shape as Mediagate's and the contract's Schemas (the task encoded by `Task`, the request decoded by
 * the `vendor3/text-to-video` Schema), and no SQL: the key is compared with a constant and the task is in memory.
 * What Mediagate could reach if its own work cost nothing. Run with plain `node` (the contract from `dist/`).
 *
 *   PORT=... KEY=mg_live_... TASK_ID=task_... node bench/servers/floor.mjs
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as HttpServer from "@effect/platform/HttpServer"
import { Envelope, Errors, Generation, Task } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createServer } from "node:http"

const key = process.env.KEY ?? "mg_live_floorfloorfloorfloorfloorfloor00"
const taskId = process.env.TASK_ID ?? "task_01M85BHVW6MYRNYCKYM1WCNDN3"

class Principal extends Context.Tag("floor/Principal")() {}

class Auth extends HttpApiMiddleware.Tag()("floor/Auth", {
  failure: Schema.Union(Errors.AuthRequired.wire, Errors.AuthInvalidToken.wire),
  provides: Principal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const Ack = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  type: Schema.String,
  provider: Schema.String,
  model: Schema.String,
  created_at: Schema.String,
  estimated_seconds: Schema.Number
})

const api = HttpApi.make("floor").add(
  HttpApiGroup.make("floor")
    .add(
      HttpApiEndpoint.get("get", "/tasks/:id")
        .setPath(Schema.Struct({ id: Schema.String }))
        .addSuccess(Envelope.success(Task.Task))
        .addError(Errors.TaskNotFound.wire)
    )
    .add(
      HttpApiEndpoint.post("create", "/vendor3/text-to-video")
        .setPayload(Generation.requests["vendor3/text-to-video"])
        .addSuccess(Envelope.success(Ack), { status: 201 })
    )
    .middleware(Auth)
    .prefix("/api/v1")
)

const task = {
  id: taskId,
  type: "video",
  operation: "text-to-video",
  status: "pending",
  provider: "vendor3",
  model: "vendor3-3",
  progress: 0,
  cost: 3.2,
  input: { prompt: "a cat", aspect_ratio: "16:9" },
  metadata: {},
  webhookUrl: null,
  original_task_id: null,
  estimated_seconds: 90,
  created_at: "2026-11-23T23:23:41.830Z",
  started_at: null,
  completed_at: null
}

const AuthLive = Layer.succeed(Auth, {
  bearer: (token) =>
    Redacted.value(token) === key
      ? Effect.succeed({ accountId: "acct_floor" })
      : Effect.fail(new Errors.AuthInvalidToken({ message: "invalid API key" }))
})

const decoded = Schema.decodeUnknownSync(Task.Task)(task)
let n = 0
const handlers = HttpApiBuilder.group(api, "floor", (h) =>
  h
    .handle("get", ({ path }) =>
      path.id === taskId
        ? Effect.succeed(decoded)
        : Effect.fail(new Errors.TaskNotFound({ message: `task ${path.id} not found` })))
    .handle("create", ({ payload }) =>
      Effect.succeed({
        id: `task_floor${(n++).toString(36)}`,
        status: "pending",
        type: "text-to-video",
        provider: "vendor3",
        model: payload.model,
        created_at: new Date().toISOString(),
        estimated_seconds: 90
      })))

HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(api)),
  Layer.provide(handlers),
  Layer.provide(AuthLive),
  HttpServer.withLogAddress,
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT ?? 0), host: "127.0.0.1" })),
  Layer.launch,
  NodeRuntime.runMain
)
