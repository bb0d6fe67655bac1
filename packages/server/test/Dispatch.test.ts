import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Catalog, Examples, Families } from "@mediagate/contract"
import { Http, ServerConfig } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Dispatch from "../src/internal/directPath.js"
import { keys, PortsFake } from "./fakes.js"
import { adminToken, type Answer, send } from "./harness.js"

/** The API over fresh fakes, served with the envelope's own dispatch or with `HttpApiBuilder`'s router only. */
const serverWith = (dispatch: boolean) =>
  Http.layerFor(Families.registry, { dispatch }).pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(PortsFake),
    Layer.provide(ServerConfig.layer({ adminToken: Option.some(Redacted.make(adminToken)) }))
  )

/** The registry of endpoints the envelope dispatches, as `Http.apiFor` builds it over the fakes. */
const registryOf = (options?: Http.Options) =>
  Effect.flatMap(
    Layer.build(
      Http.apiFor(Families.registry, options).pipe(
        Layer.provide(PortsFake),
        Layer.provide(ServerConfig.layer({ adminToken: Option.some(Redacted.make(adminToken)) }))
      )
    ),
    (context) => Effect.provide(Dispatch.Dispatcher, context)
  )

type Request = readonly [method: "GET" | "POST" | "DELETE" | "PATCH", path: string, options: Parameters<typeof send>[2]]

/** What two servers must answer alike: the status, the error envelope, the success's shape (ids and times differ). */
const comparable = (answer: Answer) => ({
  status: answer.status,
  contentType: answer.headers["content-type"],
  requestId: typeof answer.headers["x-request-id"] === "string",
  body: JSON.parse(
    answer.text
      .replace(/"(task|key|acct|wh|whd|chn)_[0-9A-Z]{26}"/g, "\"$1_ID\"")
      .replace(/"request_id":"[^"]+"/g, "\"request_id\":\"ID\"")
      .replace(/"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"/g, "\"TIME\"")
      .replace(/"mg_(live|test)_[A-Za-z0-9]+"/g, "\"mg_$1_KEY\"") || "null"
  )
})

describe("the envelope's own dispatch (internal/directPath.ts)", () => {
  it.scoped("registers the endpoints of the shapes it serves, and leaves the others to HttpApiBuilder", () =>
    Effect.gen(function*() {
      const registry = yield* registryOf()
      // every generation endpoint (JSON payload, idempotency header, bearer key) and a task's read by id
      for (const info of Catalog.endpointList) {
        assert.isDefined(registry.find("POST", `/api/v1${info.path}`), info.path)
      }
      const found = registry.find("GET", "/api/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2")
      assert.deepStrictEqual(found?.params, { id: "task_01M88SEB9S0C48KEE36HBM5QR2" })
      assert.isDefined(registry.find("POST", "/admin/v1/accounts"))
      // the lists (a query-string Schema) stay with HttpApiBuilder's decoding of query parameters
      assert.isUndefined(registry.find("GET", "/api/v1/tasks"))
      assert.isUndefined(registry.find("GET", "/admin/v1/accounts"))
      // matched as the envelope's route table matches: exactly
      assert.isUndefined(registry.find("GET", "/API/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2"))
      assert.isUndefined(registry.find("POST", "/api/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2"))
    }))

  it.scoped("a disabled registry registers nothing (every request through HttpApiBuilder)", () =>
    Effect.gen(function*() {
      const registry = yield* registryOf({ dispatch: false })
      assert.isFalse(registry.enabled)
      assert.isUndefined(registry.find("POST", "/api/v1/vendor3/text-to-video"))
    }))

  it.scoped(
    "answers every request as HttpApiBuilder's router does (status, headers, envelope, messages)",
    () =>
      Effect.gen(function*() {
        const [first] = Examples.minimalRequests
        assert.isDefined(first)
        const create: Request = ["POST", `/api/v1/${first!.endpoint}`, { token: keys.live, json: first!.body }]
        const requests: ReadonlyArray<Request> = [
          create,
          ["POST", `/api/v1/${first!.endpoint}`, {
            token: keys.live,
            json: first!.body,
            headers: { "idempotency-key": "same-key-1" }
          }],
          ["POST", `/api/v1/${first!.endpoint}`, {
            token: keys.live,
            json: first!.body,
            headers: { "idempotency-key": "same-key-1" }
          }],
          ["POST", `/api/v1/${first!.endpoint}`, {
            token: keys.live,
            json: first!.body,
            headers: { "idempotency-key": "" }
          }],
          ["POST", `/api/v1/${first!.endpoint}`, { json: first!.body }],
          ["POST", `/api/v1/${first!.endpoint}`, {
            token: "mg_live_notakeynotakeynotakeynotakey00",
            json: first!.body
          }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.live, json: { model: "no-such-model", input: {} } }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.live, json: { ...first!.body as object, model: 42 } }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.live, json: [1, 2, 3] }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.live, raw: "{not json" }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.live, raw: "" }],
          ["POST", `/api/v1/${first!.endpoint}`, {
            token: keys.live,
            json: first!.body,
            headers: { "content-type": "text/plain" }
          }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.test, json: first!.body }],
          ["POST", "/api/v1/vendor3/text-to-video", {
            token: keys.live,
            json: { model: "vendor3-3", input: { prompt: "p", duration: 999 } }
          }],
          ["GET", "/api/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2", { token: keys.live }],
          ["GET", "/api/v1/tasks/not-a-task-id", { token: keys.live }],
          ["GET", "/api/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2", {}],
          ["POST", "/api/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2/cancel", { token: keys.live }],
          ["POST", "/api/v1/tasks/task_01M88SEB9S0C48KEE36HBM5QR2/retry", { token: keys.live }],
          ["GET", "/api/v1/balance", { token: keys.live }],
          ["GET", "/api/v1/balance", { token: keys.readOnly }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.readOnly, json: first!.body }],
          ["POST", `/api/v1/${first!.endpoint}`, { token: keys.poor, json: first!.body }],
          ["POST", "/api/v1/webhooks", {
            token: keys.live,
            json: { url: "http://127.0.0.1/hook", events: ["task.succeeded"] }
          }],
          ["POST", "/api/v1/webhooks", { token: keys.live, json: { url: 42 } }],
          ["POST", "/admin/v1/accounts", { token: adminToken, json: { name: "parity" } }],
          ["POST", "/admin/v1/accounts", { token: "wrong-admin-token", json: { name: "parity" } }],
          ["POST", "/admin/v1/accounts", { token: adminToken, json: { name: 7 } }],
          ["GET", "/admin/v1/system", { token: adminToken }]
        ]
        const answers = (dispatch: boolean) =>
          Effect.flatMap(Layer.build(serverWith(dispatch)), (context) =>
            Effect.forEach(requests, ([method, path, options]) =>
              Effect.provide(send(method, path, options), context)))
        const dispatched = yield* answers(true)
        const routed = yield* answers(false)
        requests.forEach(([method, path, options], i) => {
          assert.deepStrictEqual(
            comparable(dispatched[i]!),
            comparable(routed[i]!),
            `${method} ${path} ${JSON.stringify(options)}`
          )
        })
        // the corpus reaches successes and failures alike, so the comparison is not vacuous
        const statuses = new Set(dispatched.map((answer) =>
          answer.status
        ))
        for (const status of [200, 201, 400, 401, 404]) {
          assert.isTrue(statuses.has(status), JSON.stringify([...statuses]))
        }
      }),
    60_000
  )
})
