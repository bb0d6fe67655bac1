/**
 * The service's `node:http` listener (`Http.nodeListener`, the direct path of server/src/internal/directPath.ts): the requests of the endpoints the envelope dispatches
 * start their fiber in the listener and are written by it; they must be answered exactly as the platform's listener
 * answers them (status, headers — the rate-limit fields of the pre-response handlers among them —, envelope).
 */
import { NodeHttpServer } from "@effect/platform-node"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Examples } from "@mediagate/contract"
import { Http } from "@mediagate/server"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { mkdtempSync } from "node:fs"
import { type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import * as AccessLog from "../src/AccessLog.js"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

const adminToken = "listener-test-admin-token"
const maxBodyBytes = 4096

/** What a request needs of an earlier answer: the account and keys of the stack, the first task created. */
interface State {
  readonly accountId: string
  readonly live: string
  readonly test: string
  task: string
}

interface Step {
  readonly method: "GET" | "HEAD" | "POST" | "PATCH"
  readonly path: (state: State) => string
  readonly token?: (state: State) => string
  readonly body?: string
  readonly headers?: Record<string, string>
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/**
 * A fresh stack (SQLite, no workers: tasks stay as the requests leave them) with its first account's keys; `settings`
 * are added to its environment.
 */
const stackWith = (settings: Record<string, string>) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Mediagate.layer({
      dataDir: mkdtempSync(join(tmpdir(), "mg-listener-")),
      fileSecret: "listener-test-secret",
      adminToken,
      workers: false,
      maxBodyBytes,
      settings: { MEDIAGATE_RATE_LIMIT_RPM: "30", ...settings }
    }))
    const service = Context.get(context, Mediagate.Mediagate)
    const keys = Option.getOrThrow(yield* service.bootstrap())
    return {
      context,
      service,
      state: { accountId: keys.account.id, live: keys.live.key, test: keys.test.key, task: "" }
    }
  })

const stack = stackWith({})

const send = (baseUrl: string, step: Step, state: State): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const headers: Record<string, string> = { ...step.headers }
    if (step.token !== undefined) headers.authorization = `Bearer ${step.token(state)}`
    if (step.body !== undefined) headers["content-type"] ??= "application/json"
    const response = await fetch(baseUrl + step.path(state), {
      method: step.method,
      headers,
      ...(step.body === undefined ? {} : { body: step.body })
    })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** What both listeners must answer alike (ids, keys and times normalized). */
const comparable = (answer: Answer) => ({
  status: answer.status,
  headers: Object.fromEntries(
    ["content-type", "content-length", "allow", "retry-after", "ratelimit", "ratelimit-policy"].map((name) => [
      name,
      // the window's reset (`t=`) depends on when the run started
      answer.headers.get(name)?.replace(/;t=\d+/g, ";t=N")
    ])
  ),
  requestId: /^[0-9a-f-]{36}$/.test(answer.headers.get("x-request-id") ?? ""),
  body: answer.text
    .replace(/\b(task|key|acct|wh|whd|chn)_[0-9A-Z]{26}\b/g, "$1_ID")
    .replace(/"request_id":"[^"]+"/g, "\"request_id\":\"ID\"")
    .replace(/"cursor":"[^"]+"/g, "\"cursor\":\"CURSOR\"")
    .replace(/"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"/g, "\"TIME\"")
    .replace(/"mg_(live|test)_[A-Za-z0-9]+"/g, "\"mg_$1_KEY\"")
    .replace(/"whsec_[A-Za-z0-9_-]+"/g, "\"whsec_SECRET\"")
})

const [first] = Examples.minimalRequests
const create = `/api/v1/${first!.endpoint}`
const body = JSON.stringify(first!.body)
const live = (state: State) => state.live
const admin = () => adminToken

/** The corpus: successes, replays, every kind of refusal, routes the envelope does not dispatch, a rate limit reached. */
const steps: ReadonlyArray<Step> = [
  {
    method: "POST",
    path: (s) => `/admin/v1/accounts/${s.accountId}/credits`,
    token: admin,
    body: JSON.stringify({ amount: 50 })
  },
  { method: "POST", path: () => create, token: live, body },
  { method: "POST", path: () => create, token: live, body, headers: { "idempotency-key": "k-1" } },
  { method: "POST", path: () => create, token: live, body, headers: { "idempotency-key": "k-1" } },
  { method: "GET", path: (s) => `/api/v1/tasks/${s.task}`, token: live },
  { method: "HEAD", path: (s) => `/api/v1/tasks/${s.task}`, token: live },
  { method: "GET", path: (s) => `/api/v1/tasks/${s.task}` },
  { method: "GET", path: () => "/api/v1/tasks/not-a-task-id", token: live },
  { method: "POST", path: () => create, token: live, body: "{not json" },
  { method: "POST", path: () => create, token: live, body: "" },
  { method: "POST", path: () => create, token: live, body, headers: { "content-type": "text/plain" } },
  // a JSON type the envelope accepts and the dispatch leaves to HttpApiBuilder's decoding (the router, in the fiber)
  {
    method: "POST",
    path: () => create,
    token: live,
    body,
    headers: { "content-type": "application/merge-patch+json" }
  },
  { method: "POST", path: () => create, token: live, body: JSON.stringify({ model: "no-such-model", input: {} }) },
  { method: "POST", path: () => create, token: live, body: JSON.stringify({ pad: "x".repeat(maxBodyBytes) }) },
  { method: "POST", path: () => create, token: (s) => s.test, body },
  { method: "POST", path: (s) => `/api/v1/tasks/${s.task}/cancel`, token: live },
  { method: "POST", path: (s) => `/api/v1/tasks/${s.task}/retry`, token: live },
  { method: "GET", path: () => "/api/v1/balance", token: live },
  { method: "GET", path: () => "/api/v1/tasks?limit=1", token: live },
  { method: "GET", path: () => "/api/v1/no-such-route", token: live },
  { method: "POST", path: () => "/api/v1/webhooks", token: live, body: JSON.stringify({ url: 42 }) },
  {
    method: "PATCH",
    path: (s) => `/admin/v1/accounts/${s.accountId}`,
    token: admin,
    body: JSON.stringify({ name: "renamed" })
  },
  {
    method: "POST",
    path: () => "/admin/v1/accounts",
    token: () => "wrong-admin-token",
    body: JSON.stringify({ name: "x" })
  },
  // the key's 30 requests per minute run out: the last answers are 429 with Retry-After
  ...Array.from({ length: 24 }, (): Step => ({ method: "GET", path: () => "/api/v1/balance", token: live }))
]

/** The steps' answers from a fresh stack served by `listenerOf(served)`. */
const answersOf = (
  listenerOf: (served: Http.Served) => Effect.Effect<(request: IncomingMessage, response: ServerResponse) => void>
) =>
  Effect.gen(function*() {
    const { context, state } = yield* stack
    const served = yield* Effect.provide(Http.makeServed, context)
    return yield* answersFrom(yield* listenerOf(served), state)
  })

/** The steps' answers from `listener`, serving a stack whose first account `state` holds. */
const answersFrom = (listener: (request: IncomingMessage, response: ServerResponse) => void, state: State) =>
  Effect.gen(function*() {
    const server = yield* Server.listen(listener, { port: 0, host: "127.0.0.1" })
    const baseUrl = Server.urlOf(server)
    const answers: Array<Answer> = []
    for (const step of steps) {
      const answer = yield* send(baseUrl, step, state)
      if (state.task === "" && answer.status === 201 && answer.text.includes("\"task_")) {
        state.task = (JSON.parse(answer.text) as { data: { id: string } }).data.id
      }
      answers.push(answer)
    }
    return answers
  })

/** The platform's services, and the tracer off for the requests (as the server runs with tracing off). */
const platformServices = <A, E>(effect: Effect.Effect<A, E, any>) =>
  HttpMiddleware.withTracerDisabledWhenEffect(
    Effect.provide(effect, NodeHttpServer.layerContext),
    () => true
  ) as Effect.Effect<A, E>

/** The service's listener over `app`, answering directly what `direct` answers (no access log). */
const directListener = <R>(
  app: HttpApp.Default<never, R>,
  direct: (request: HttpServerRequest.HttpServerRequest) => HttpApp.Default<never, R> | undefined
) =>
  Effect.flatMap(
    NodeHttpServer.makeHandler(app),
    (platform) =>
      Http.nodeListener(platform, direct, (answer) => AccessLog.middleware(answer, { log: false, metrics: false }))
  )

describe("the service's listener (Http.nodeListener)", () => {
  it.scoped(
    "answers the dispatched requests itself, exactly as the platform's listener answers them",
    () =>
      Effect.gen(function*() {
        const lean: Array<string> = []
        const leanAnswers = yield* answersOf((served) =>
          platformServices(directListener(served.httpApp, (request) => {
            const answer = served.dispatched(request)
            if (answer !== undefined) lean.push(`${request.method} ${request.url}`)
            return answer
          }))
        )
        const platformAnswers = yield* answersOf((served) =>
          platformServices(NodeHttpServer.makeHandler(served.httpApp))
        )

        steps.forEach((step, i) => {
          expect(
            comparable(leanAnswers[i]!),
            `${step.method} ${step.path({ accountId: "A", live: "", test: "", task: "T" })}`
          )
            .toStrictEqual(comparable(platformAnswers[i]!))
        })
        // the corpus reaches successes, refusals and the rate limit, so the comparison is not vacuous
        const statuses = new Set(leanAnswers.map((answer) => answer.status))
        for (const status of [200, 201, 400, 401, 404, 413, 429]) {
          expect(statuses, JSON.stringify([...statuses])).toContain(status)
        }
        expect(leanAnswers.at(-1)!.headers.get("retry-after")).toMatch(/^\d+$/)
        expect(leanAnswers[4]!.headers.get("ratelimit")).toMatch(/^"key";r=\d+;t=\d+$/)
        // every request but HEAD, the list (a query-string Schema) and the unknown route was answered by the listener
        expect(lean).toHaveLength(steps.length - 3)
        expect(
          lean.some((line) => line.startsWith("HEAD ") || line.includes("?limit") || line.includes("no-such-route"))
        ).toBe(false)
      }),
    120_000
  )

  it.scoped(
    "MEDIAGATE_HTTP_DISPATCH=false: the service dispatches nothing itself and answers every request alike",
    () =>
      Effect.gen(function*() {
        const on = yield* stackWith({})
        const off = yield* stackWith({ MEDIAGATE_HTTP_DISPATCH: "false" })
        const onAnswers = yield* answersFrom(yield* on.service.listener, on.state)
        const offAnswers = yield* answersFrom(yield* off.service.listener, off.state)
        steps.forEach((step, i) => {
          expect(
            comparable(offAnswers[i]!),
            `${step.method} ${step.path({ accountId: "A", live: "", test: "", task: "T" })}`
          )
            .toStrictEqual(comparable(onAnswers[i]!))
        })
        expect(new Set(offAnswers.map((answer) => answer.status))).toContain(201)
        // the switch reaches the registry: a create request has no answer of the envelope's own
        const request = HttpServerRequest.fromWeb(new Request(`http://localhost${create}`, { method: "POST", body }))
        const dispatchedBy = (settings: boolean) =>
          Effect.map(
            Effect.provide(Http.makeServedWith({ dispatch: settings }), on.context),
            (served) => served.dispatched(request)
          )
        expect(yield* dispatchedBy(true)).toBeDefined()
        expect(yield* dispatchedBy(false)).toBeUndefined()
      }),
    120_000
  )

  it.scoped("writes what an answer holds (cookies, text, streams, no body for HEAD) or a 500; the platform's listener the rest", () =>
    Effect.gen(function*() {
      const answer = (request: HttpServerRequest.HttpServerRequest) => {
        if (request.url === "/throws") throw new Error("a bug while finding the answer")
        if (!request.url.startsWith("/lean/")) return undefined
        const headers = { "x-kind": request.url.slice(6) }
        const response = request.url === "/lean/stream"
          ? HttpServerResponse.stream(Stream.make("chunk-1 ", "chunk-2").pipe(Stream.encodeText), {
            headers,
            contentType: "text/plain"
          })
          : request.url === "/lean/node-stream"
          ? HttpServerResponse.raw(Readable.from(["node ", "stream"]), { headers })
          : request.url === "/lean/cookie"
          ? HttpServerResponse.unsafeSetCookie(
            HttpServerResponse.text("with a cookie", { headers }),
            "session",
            "abc",
            { httpOnly: true }
          )
          : request.url === "/lean/bad-header"
          ? HttpServerResponse.text("never sent", { headers: { "x-bad": "line\r\nbreak" } })
          : HttpServerResponse.text(`answered ${request.method} ${request.url}`, { status: 202, headers })
        return Effect.succeed(response)
      }
      const app = Effect.succeed(HttpServerResponse.text("the platform's", { status: 203 }))
      const listener = yield* platformServices(directListener(app, answer))
      const baseUrl = Server.urlOf(yield* Server.listen(listener, { port: 0, host: "127.0.0.1" }))
      const get = (path: string, method = "GET") =>
        Effect.promise(async () => {
          const response = await fetch(baseUrl + path, { method })
          return { status: response.status, headers: response.headers, text: await response.text() }
        })

      expect(yield* get("/lean/text")).toMatchObject({ status: 202, text: "answered GET /lean/text" })
      const stream = yield* get("/lean/stream")
      expect(stream).toMatchObject({ status: 200, text: "chunk-1 chunk-2" })
      expect(stream.headers.get("content-type")).toBe("text/plain")
      expect(stream.headers.get("x-kind")).toBe("stream")
      const cookie = yield* get("/lean/cookie")
      expect(cookie.headers.get("set-cookie")).toBe("session=abc; HttpOnly")
      expect(cookie.text).toBe("with a cookie")
      const head = yield* get("/lean/text", "HEAD")
      expect(head).toMatchObject({ status: 202, text: "" })
      expect(yield* get("/lean/node-stream")).toMatchObject({ status: 200, text: "node stream" })
      // a header Node refuses: a 500, not a client left waiting
      expect(yield* get("/lean/bad-header")).toMatchObject({ status: 500, text: "" })
      expect(yield* get("/elsewhere")).toMatchObject({ status: 203, text: "the platform's" })
      // a throw while finding the answer leaves the request to the platform's listener
      expect(yield* get("/throws")).toMatchObject({ status: 203, text: "the platform's" })
    }))

  it.scoped("a client that goes away mid-body leaves the server answering", () =>
    Effect.gen(function*() {
      const { context, state } = yield* stack
      const served = yield* Effect.provide(Http.makeServed, context)
      const listener = yield* platformServices(
        directListener(served.httpApp, served.dispatched)
      )
      const server = yield* Server.listen(listener, { port: 0, host: "127.0.0.1" })
      const address = server.address() as { port: number }
      // half a body, then the connection is gone
      yield* Effect.async<void>((resume) => {
        const request = httpRequest({
          host: "127.0.0.1",
          port: address.port,
          method: "POST",
          path: create,
          headers: {
            authorization: `Bearer ${state.live}`,
            "content-type": "application/json",
            "content-length": "200"
          }
        })
        request.on("error", () => resume(Effect.void))
        request.write(body.slice(0, 10), () => setTimeout(() => request.destroy(), 50))
        request.on("close", () => resume(Effect.void))
      })
      const after = yield* send(
        Server.urlOf(server),
        { method: "GET", path: () => "/api/v1/balance", token: live },
        state
      )
      expect(after.status).toBe(200)
    }))
})
