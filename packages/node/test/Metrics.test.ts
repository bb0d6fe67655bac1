/**
 * `GET /metrics` of a running stack on SQLite and PostgreSQL: after a small load (a task created and finished, its
 * webhook delivered, a 404, an error) the labelled counters and the HTTP histogram moved by what was done, the queue
 * gauges equal the database's counts (two nodes on one PostgreSQL report the same), the output passes
 * `promtool check metrics` and the alert rules `promtool check rules` and their unit tests (`promtool test rules`).
 * Also: request ids on every answer and in error envelopes, the admin token in front of `/metrics`, and the
 * access-log line.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type * as Database from "../src/Database.js"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

const adminToken = "metrics-test-admin-token"
const ci = process.env.CI === "true"
const promtool = spawnSync("promtool", ["--version"]).status === 0
if (!promtool) console.warn(`promtool is not installed: the promtool checks ${ci ? "fail (CI)" : "are skipped"}`)
const { runPostgres } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

// -----------------------------------------------------------------------------------------------------------------
// the Prometheus text format, as far as the tests read it
// -----------------------------------------------------------------------------------------------------------------

interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const parse = (text: string): ReadonlyArray<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

/** The value of the sample `name` whose labels include `labels` (0 when absent: a series not recorded yet). */
const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}): number =>
  samples.find((sample) =>
    sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  )?.value ?? 0

const checkWithPromtool = (args: ReadonlyArray<string>, input?: string) => {
  const run = spawnSync("promtool", args, { input, encoding: "utf8" })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}

// -----------------------------------------------------------------------------------------------------------------
// a running stack
// -----------------------------------------------------------------------------------------------------------------

/** A local webhook receiver: answers 200 and keeps the bodies. */
const receiver = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly bodies: Array<string>; readonly close: () => void }>((resume) => {
    const bodies: Array<string> = []
    const server = createServer((request, response) => {
      let body = ""
      request.on("data", (chunk) => (body += chunk))
      request.on("end", () => {
        bodies.push(body)
        response.writeHead(200).end("ok")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        bodies,
        close: () => server.close()
      })))
  }),
  (running) => Effect.sync(running.close)
)

/** A stack with metrics on, served on a free port, its first account bootstrapped. */
const start = (database: Database.Database, options: Mediagate.Options = {}, withAdminToken = true) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Mediagate.layer({
      database,
      dataDir: mkdtempSync(join(tmpdir(), "mg-metrics-")),
      fileSecret: "metrics-test-secret",
      ...(withAdminToken ? { adminToken } : {}),
      metrics: true,
      allowPrivateAddresses: true,
      settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01" },
      ...options
    }))
    const service = Context.get(context, Mediagate.Mediagate)
    const server = yield* Server.listen(yield* NodeHttpServer.makeHandler(service.httpApp), {
      port: 0,
      host: "127.0.0.1"
    })
    const keys = yield* service.bootstrap()
    return { baseUrl: Server.urlOf(server), keys: Option.getOrUndefined(keys), service }
  })

const request = (baseUrl: string, path: string, init: RequestInit & { readonly token?: string } = {}) =>
  Effect.promise(async () => {
    const headers = new Headers(init.headers)
    if (init.token !== undefined) headers.set("authorization", `Bearer ${init.token}`)
    if (init.body !== undefined) headers.set("content-type", "application/json")
    const response = await fetch(`${baseUrl}${path}`, { ...init, headers })
    const text = await response.text()
    let body: any = undefined
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers, text, body }
  })

const scrape = (baseUrl: string) =>
  Effect.map(request(baseUrl, "/metrics", { token: adminToken }), (answer) => {
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    return answer.text
  })

const createTask = (baseUrl: string, key: string, webhookUrl?: string) =>
  Effect.map(
    request(baseUrl, "/api/v1/vendor4/text-to-image", {
      method: "POST",
      token: key,
      body: JSON.stringify({
        model: "vendor4-4-0",
        input: { prompt: "a red kite", size: "1K" },
        ...(webhookUrl === undefined ? {} : { webhookUrl })
      })
    }),
    (answer) => {
      expect(answer.status, answer.text).toBe(201)
      return answer.body.data.id as string
    }
  )

const waitFor = <A>(effect: Effect.Effect<A>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep(50)
    }
    return yield* Effect.dieMessage("timed out")
  })

/** Tasks per status, counted in the database. */
const countByStatus = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<
    { status: string; n: number | string }
  >`SELECT status, COUNT(*) AS n FROM mediagate_tasks GROUP BY status`
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)])) as Record<string, number>
})

// -----------------------------------------------------------------------------------------------------------------
// the suites
// -----------------------------------------------------------------------------------------------------------------

/** A database of each kind: what the stacks are given, and a client of it for the counts. */
interface Backend {
  readonly name: string
  readonly make: Effect.Effect<
    {
      readonly database: () => Database.Database
      readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
    },
    unknown,
    Scope.Scope
  >
}

const backends: ReadonlyArray<Backend> = [
  {
    name: "sqlite",
    make: Effect.sync(() => {
      const file = join(mkdtempSync(join(tmpdir(), "mg-metrics-db-")), "mediagate.db")
      return { database: () => ({ sqlite: file }), client: SqliteClient.layer({ filename: file }) }
    })
  },
  ...(runPostgres
    ? [{
      name: "postgres",
      make: Effect.map(Databases.pgSchema, (schema) => ({
        database: () => ({ layer: Databases.pgClient(schema, 4) }),
        client: Databases.pgClient(schema, 1)
      }))
    }]
    : [])
]

for (const backend of backends) {
  describe(`metrics on ${backend.name}`, () => {
    it.scopedLive(
      "a small load moves the counters and the HTTP histogram; the output passes promtool",
      () =>
        Effect.gen(function*() {
          const db = yield* backend.make
          const hooks = yield* receiver
          const { baseUrl, keys } = yield* start(db.database())
          const before = parse(yield* scrape(baseUrl))

          // a task with a webhook, run to its end
          const id = yield* createTask(baseUrl, keys!.test.key, hooks.url)
          yield* waitFor(
            request(baseUrl, `/api/v1/tasks/${id}`, { token: keys!.test.key }),
            (a) => a.body.data.status === "succeeded"
          )
          yield* waitFor(Effect.sync(() => hooks.bodies.length), (n) => n >= 1)
          // a 404 of no route, an API error of a route, a bad request
          expect((yield* request(baseUrl, "/api/v1/nothing/here")).status).toBe(404)
          expect((yield* request(baseUrl, "/api/v1/tasks/task_nope", { token: keys!.test.key })).status).toBe(404)
          expect(
            (yield* request(baseUrl, "/api/v1/vendor4/text-to-image", {
              method: "POST",
              token: keys!.test.key,
              body: "{"
            })).status
          )
            .toBe(400)
          // the delivery is recorded once its attempt is settled
          const text = yield* waitFor(scrape(baseUrl), (text) =>
            valueOf(parse(text), "mediagate_webhook_deliveries_total", { outcome: "delivered", attempt: "1" }) >
              valueOf(before, "mediagate_webhook_deliveries_total", { outcome: "delivered", attempt: "1" }))
          const after = parse(text)
          const delta = (name: string, labels: Record<string, string> = {}) =>
            valueOf(after, name, labels) - valueOf(before, name, labels)

          const task = { family: "vendor4", model: "vendor4-4-0" }
          expect(delta("mediagate_tasks_created_total", task)).toBe(1)
          expect(delta("mediagate_tasks_finished_total", { ...task, state: "succeeded" })).toBe(1)
          expect(delta("mediagate_task_claim_delay_seconds_count", { family: "vendor4" })).toBe(1)
          expect(delta("mediagate_upstream_request_duration_seconds_count", { family: "vendor4", call: "submit" }))
            .toBe(1)
          expect(delta("mediagate_webhook_deliveries_total", { outcome: "delivered", attempt: "1" })).toBe(1)
          expect(delta("mediagate_webhook_delivery_duration_seconds_count", { outcome: "delivered" })).toBe(1)
          // the HTTP histogram counts each request under its route template (never the raw path)
          const http = "mediagate_http_request_duration_seconds_count"
          expect(delta(http, { method: "POST", route: "/api/v1/vendor4/text-to-image", status: "201" })).toBe(1)
          expect(delta(http, { method: "POST", route: "/api/v1/vendor4/text-to-image", status: "400" })).toBe(1)
          expect(delta(http, { method: "GET", route: "unmatched", status: "404" })).toBe(1)
          expect(delta(http, { method: "GET", route: "/api/v1/tasks/:id", status: "404" })).toBe(1)
          expect(delta(http, { method: "GET", route: "/api/v1/tasks/:id", status: "200" })).toBeGreaterThanOrEqual(1)
          expect(after.some((sample) =>
            sample.labels.route?.includes("task_")
          )).toBe(false)
          // the buckets are cumulative and end in +Inf = _count
          const routeLabels = { method: "GET", route: "unmatched", status: "404" }
          expect(valueOf(after, "mediagate_http_request_duration_seconds_bucket", { ...routeLabels, le: "+Inf" }))
            .toBe(valueOf(after, http, routeLabels))
          // the gauges of the moment
          expect(valueOf(after, "mediagate_tasks", { state: "succeeded" })).toBe(
            (yield* Effect.provide(countByStatus, db.client)).succeeded
          )
          expect(valueOf(after, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000)

          if (promtool || ci) {
            const metrics = checkWithPromtool(["check", "metrics"], text)
            expect(metrics.status, metrics.output).toBe(0)
            const rules = checkWithPromtool([
              "check",
              "rules",
              fileURLToPath(new URL("../../../deploy/prometheus/alerts.yml", import.meta.url))
            ])
            expect(rules.status, rules.output).toBe(0)
          }
        }),
      { timeout: 60_000 }
    )

    it.scopedLive(
      "queue gauges come from the database: the pending count, the same on two nodes",
      () =>
        Effect.gen(function*() {
          const db = yield* backend.make
          // nodes without workers: the tasks stay pending
          const one = yield* start(db.database(), { workers: false })
          const two = yield* start(db.database(), { workers: false })
          const keys = one.keys!
          for (let i = 0; i < 3; i++) yield* createTask(one.baseUrl, keys.test.key)
          const counts = yield* Effect.provide(countByStatus, db.client)
          expect(counts.pending).toBe(3)
          const first = parse(yield* scrape(one.baseUrl))
          const second = parse(yield* scrape(two.baseUrl))
          for (const samples of [first, second]) {
            expect(valueOf(samples, "mediagate_queue_depth")).toBe(3)
            expect(valueOf(samples, "mediagate_tasks", { state: "pending" })).toBe(3)
            expect(valueOf(samples, "mediagate_tasks_due")).toBe(3)
            expect(valueOf(samples, "mediagate_upstream_jobs_in_flight")).toBe(0)
          }
        }),
      { timeout: 60_000 }
    )
  })
}

describe.skipIf(!promtool && !ci)("the shipped alert rules", () => {
  it("pass promtool check rules and their unit tests (deploy/prometheus/alerts.test.yml)", () => {
    const file = (name: string) => fileURLToPath(new URL(`../../../deploy/prometheus/${name}`, import.meta.url))
    const checked = checkWithPromtool(["check", "rules", file("alerts.yml")])
    expect(checked.status, checked.output).toBe(0)
    const tested = checkWithPromtool(["test", "rules", file("alerts.test.yml")])
    expect(tested.status, tested.output).toBe(0)
    expect(tested.output).toContain("SUCCESS")
  })
})

describe("request ids, the access log and /metrics protection", () => {
  it.scopedLive("X-Request-Id: a valid one is echoed, anything else replaced; errors carry it in error.request_id", () =>
    Effect.gen(function*() {
      const { baseUrl, keys } = yield* start({ sqlite: join(mkdtempSync(join(tmpdir(), "mg-rid-")), "m.db") })
      const given = yield* request(baseUrl, "/api/v1/tasks/task_nope", {
        token: keys!.test.key,
        headers: { "x-request-id": "lb-7f3a:01J.x_y+z=/@" }
      })
      expect(given.headers.get("x-request-id")).toBe("lb-7f3a:01J.x_y+z=/@")
      expect(given.body.error).toEqual({
        code: "TASK_NOT_FOUND",
        message: "task task_nope not found",
        request_id: "lb-7f3a:01J.x_y+z=/@"
      })
      for (const bad of ["has space", "x".repeat(129), "quote\"d", ""]) {
        const answer = yield* request(baseUrl, "/api/v1/nothing", { headers: { "x-request-id": bad } })
        const id = answer.headers.get("x-request-id")
        expect(id).toMatch(/^[0-9a-f-]{36}$/)
        expect(answer.body.error.request_id).toBe(id)
      }
      // every kind of answer carries one: success, health, docs, the OpenAPI document, 401, /metrics
      for (const path of ["/healthz", "/readyz", "/api/v1/openapi.json", "/api/v1/balance", "/metrics"]) {
        expect((yield* request(baseUrl, path)).headers.get("x-request-id"), path).toMatch(/^[0-9a-f-]{36}$/)
      }
      const ok = yield* request(baseUrl, "/api/v1/balance", { token: keys!.test.key })
      expect(ok.status).toBe(200)
      expect(ok.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    }))

  it.scopedLive("/metrics needs the admin token (401), or answers 404 without one configured, unless open", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "mg-auth-"))
      const guarded = yield* start({ sqlite: join(dir, "a.db") })
      const missing = yield* request(guarded.baseUrl, "/metrics")
      expect([missing.status, missing.body.error.code]).toEqual([401, "AUTH_REQUIRED"])
      const wrong = yield* request(guarded.baseUrl, "/metrics", { token: "nope" })
      expect([wrong.status, wrong.body.error.code]).toEqual([401, "AUTH_INVALID_TOKEN"])
      const post = yield* request(guarded.baseUrl, "/metrics", { method: "POST", token: adminToken })
      expect([post.status, post.headers.get("allow")]).toEqual([405, "GET"])

      const tokenless = yield* start({ sqlite: join(dir, "b.db") }, {}, false)
      expect((yield* request(tokenless.baseUrl, "/metrics")).status).toBe(404)
      const open = yield* start({ sqlite: join(dir, "c.db") }, { settings: { MEDIAGATE_METRICS_OPEN: "true" } })
      const scraped = yield* request(open.baseUrl, "/metrics")
      expect(scraped.status).toBe(200)
      expect(scraped.text).toContain("# TYPE mediagate_http_request_duration_seconds histogram")
      // metrics off: no /metrics route (the API's 404)
      const off = yield* start({ sqlite: join(dir, "d.db") }, { metrics: false })
      expect((yield* request(off.baseUrl, "/metrics", { token: adminToken })).status).toBe(404)
      expect(off.service.metrics).toBeUndefined()
    }))

  it.scopedLive("one access-log line per request: method, route, status, duration, account and request id", () =>
    Effect.gen(function*() {
      const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make(({ annotations, message }) => {
        lines.push({ message, annotations: Object.fromEntries(annotations) })
      })
      yield* Effect.gen(function*() {
        const { baseUrl, keys } = yield* start({ sqlite: join(mkdtempSync(join(tmpdir(), "mg-log-")), "m.db") }, {
          accessLog: true
        })
        const answer = yield* request(baseUrl, "/api/v1/tasks/task_nope?x=secret", {
          token: keys!.test.key,
          headers: { "x-request-id": "req-42" }
        })
        expect(answer.status).toBe(404)
        const line = yield* waitFor(
          Effect.sync(() =>
            lines.find((line) => line.annotations.request_id === "req-42" && "http.status" in line.annotations)
          ),
          (found) => found !== undefined
        )
        expect(line!.annotations).toMatchObject({
          "http.method": "GET",
          "http.route": "/api/v1/tasks/:id",
          "http.path": "/api/v1/tasks/task_nope",
          "http.status": 404,
          account_id: keys!.account.id,
          request_id: "req-42"
        })
        expect(typeof line!.annotations["http.ms"]).toBe("number")
        expect(String(line!.message)).not.toContain("secret")
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    }))
})
