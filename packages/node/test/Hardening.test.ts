/**
 * Every answer a client can cause is an envelope with a 4xx (issue 13), through the production server
 * (`Server.listen`: Node's HTTP parser, the `clientError` answer, the envelope middleware) on SQLite and on
 * PostgreSQL (when it runs; always under `CI=true`):
 *
 * - regressions, each through real HTTP (a raw socket where a client library would tidy the request up): a body
 *   nested 100,000 levels deep, NUL characters in stored strings, a chunked body over the limit, headers over
 *   16 KB, a malformed request, a 416 without `Content-Range`, non-canonical paths reaching the admin API;
 * - a fuzz run over every route of the HttpApi: random path parameters, query strings, headers, bodies (Schema-
 *   derived, arbitrary JSON, NUL-laden, deep), tokens and path variants, with not a single 5xx.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import { afterAll, assert, describe, expect, it } from "@effect/vitest"
import { Api, Catalog, Examples } from "@mediagate/contract"
import * as Databases from "@mediagate/testing/databases"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { mkdtempSync } from "node:fs"
import { Agent, request as httpRequest } from "node:http"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Database from "../src/Database.js"
import { servedStacks } from "./served.js"

const { postgres, runPostgres, sqlite } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

const adminToken = "hardening-test-admin-token"
/** The fuzz's seed: a new one each run (printed in the test's name); `FUZZ_SEED` runs a failing one again. */
const seed = Number(process.env["FUZZ_SEED"] ?? Date.now())

// -----------------------------------------------------------------------------------------------------------------
// a production server on a database, and raw HTTP
// -----------------------------------------------------------------------------------------------------------------

interface Running {
  readonly port: number
  readonly liveKey: string
  readonly testKey: string
  readonly accountId: string
}

const serve = servedStacks()

/** The stack on `database`, served by `Server.listen` on a free port, with an account, a live and a test key. */
const start = (database: Database.Database) =>
  Effect.gen(function*() {
    const port = yield* serve({
      database,
      dataDir: mkdtempSync(join(tmpdir(), "mg-hardening-")),
      adminToken,
      fileSecret: "hardening-test-secret",
      settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01" }
    })
    const admin = (method: string, path: string, body: unknown) =>
      Effect.promise(() => send(port, { method, path, token: adminToken, body: JSON.stringify(body) }))
    const account = yield* admin("POST", "/admin/v1/accounts", { name: "fuzz", balance: 0 })
    const accountId = JSON.parse(account.text).data.id as string
    const live = yield* admin("POST", `/admin/v1/accounts/${accountId}/api-keys`, { name: "live" })
    const test = yield* admin("POST", `/admin/v1/accounts/${accountId}/api-keys`, { name: "test", environment: "test" })
    return {
      port,
      accountId,
      liveKey: JSON.parse(live.text).data.key as string,
      testKey: JSON.parse(test.text).data.key as string
    } satisfies Running
  })

const databases: ReadonlyArray<readonly [string, () => Database.Database]> = [
  ["SQLite", () => ({ layer: sqlite() })],
  ...(runPostgres ? [["PostgreSQL", () => ({ layer: postgres() })] as const] : [])
]

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 })
afterAll(() => agent.destroy())

/** A request through `node:http` (the path is sent exactly as given). */
const send = (
  port: number,
  options: {
    readonly method: string
    readonly path: string
    readonly token?: string | undefined
    readonly headers?: Record<string, string>
    readonly body?: string | undefined
  }
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers
    }
    const req = httpRequest(
      { host: "127.0.0.1", port, method: options.method, path: options.path, headers, agent },
      (res) => {
        // an event stream answers at once and may not end (an account's): its head is the answer
        if (res.headers["content-type"] === "text/event-stream") {
          res.destroy()
          return resolve({ status: res.statusCode ?? 0, headers: res.headers, text: "" })
        }
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(options.body)
  })

/** Bytes written to a fresh TCP connection as they are; the whole answer until the server closes or `timeout`. */
const raw = (port: number, bytes: string, timeout = 5_000): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    let answer = ""
    const timer = setTimeout(() => socket.destroy(), timeout)
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => {
      answer += chunk
      // one answer is enough: a keep-alive connection would otherwise wait for the timeout
      const [head, body = ""] = answer.split("\r\n\r\n", 2)
      const length = /content-length: (\d+)/i.exec(head ?? "")
      if (length !== null && Buffer.byteLength(body) >= Number(length[1])) socket.end()
    })
    socket.on("close", () => {
      clearTimeout(timer)
      resolve(answer)
    })
    socket.on("error", reject)
    socket.write(bytes)
  })

/** The status and envelope of a raw answer. */
const parseRaw = (answer: string) => {
  const [head = "", body = ""] = answer.split("\r\n\r\n", 2)
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
  let json: any
  try {
    json = JSON.parse(body)
  } catch {
    json = undefined
  }
  return { status, head, json }
}

/**
 * The error of an envelope as the spec writes it (`{ code, message }`): the `request_id` the stack adds is checked
 * against the answer's `X-Request-Id` and left out (answers of Node's parser, before the stack, have none).
 */
const envelopeOf = (answer: Answer): { readonly code: string; readonly message: string } | undefined => {
  let body: any
  try {
    body = JSON.parse(answer.text)
  } catch {
    return undefined
  }
  if (body.success !== false || typeof body.error?.code !== "string") return undefined
  const { request_id, ...error } = body.error
  if (request_id !== undefined && request_id !== answer.headers["x-request-id"]) {
    throw new Error(`error.request_id ${request_id} is not the answer's X-Request-Id ${answer.headers["x-request-id"]}`)
  }
  return error
}

// -----------------------------------------------------------------------------------------------------------------
// regressions
// -----------------------------------------------------------------------------------------------------------------

for (const [name, database] of databases) {
  describe(`the production server on ${name}`, () => {
    let running: Running
    it.live("starts", () => Effect.map(start(database()), (r) => void (running = r)), { timeout: 60_000 })

    it.live("a body nested 100,000 levels deep is 400 VALIDATION_ERROR", () =>
      Effect.promise(async () => {
        const body = "[".repeat(100_000) + "]".repeat(100_000)
        for (
          const [path, token] of [["/api/v1/api-keys", running.liveKey], ["/admin/v1/accounts", adminToken]] as const
        ) {
          const answer = await send(running.port, { method: "POST", path, token, body })
          expect([answer.status, envelopeOf(answer)?.code]).toEqual([400, "VALIDATION_ERROR"])
          expect(envelopeOf(answer)?.message).toContain("deeper than 64 levels")
        }
      }))

    it.live("a NUL in a key name, an account name or a webhook description is 400, and nothing is stored", () =>
      Effect.promise(async () => {
        const cases = [
          ["/api/v1/api-keys", running.liveKey, { name: "a\u0000b" }],
          ["/admin/v1/accounts", adminToken, { name: "acme\u0000" }],
          ["/admin/v1/accounts/" + running.accountId, adminToken, { name: "acme\u0000" }],
          ["/admin/v1/accounts/" + running.accountId + "/api-keys", adminToken, { name: "\u0000" }],
          ["/api/v1/webhooks", running.liveKey, {
            url: "https://hooks.example.com/a",
            events: ["task.failed"],
            description: "d\u0000"
          }],
          ["/api/v1/vendor3/text-to-video", running.testKey, { model: "vendor3-3", input: { prompt: "p\u0000" } }]
        ] as const
        for (const [path, token, json] of cases) {
          const method = path === "/admin/v1/accounts/" + running.accountId ? "PATCH" : "POST"
          const answer = await send(running.port, { method, path, token, body: JSON.stringify(json) })
          expect([path, answer.status, envelopeOf(answer)]).toEqual([path, 400, {
            code: "VALIDATION_ERROR",
            message: "body: strings must not contain the NUL character (\\u0000)"
          }])
        }
        const list = await send(running.port, { method: "GET", path: "/api/v1/api-keys", token: running.liveKey })
        expect(list.text).not.toContain("\\u0000")
        const hooks = await send(running.port, { method: "GET", path: "/api/v1/webhooks", token: running.liveKey })
        expect(JSON.parse(hooks.text).data).toEqual([])
      }))

    it.live("a chunked body over the limit is 413 PAYLOAD_TOO_LARGE before the connection closes", () =>
      Effect.promise(() =>
        new Promise<void>((resolve, reject) => {
          const req = httpRequest({
            host: "127.0.0.1",
            port: running.port,
            method: "POST",
            path: "/api/v1/api-keys",
            headers: {
              authorization: `Bearer ${running.liveKey}`,
              "content-type": "application/json",
              "transfer-encoding": "chunked"
            }
          }, (res) => {
            let text = ""
            res.on("data", (chunk) => (text += chunk))
            res.on("end", () => {
              try {
                expect([res.statusCode, JSON.parse(text).error.code]).toEqual([413, "PAYLOAD_TOO_LARGE"])
                resolve()
              } catch (error) {
                reject(error)
              }
            })
          })
          req.on("error", reject)
          // 3 MB in 16 KB chunks, written as fast as the server takes them
          const chunk = Buffer.alloc(16 * 1024, 97)
          let sent = 0
          const pump = () => {
            while (sent < 3 * 1024 * 1024) {
              sent += chunk.length
              if (!req.write(chunk)) return void req.once("drain", pump)
            }
            req.end()
          }
          req.write("{\"name\":\"")
          pump()
        })
      ))

    it.live("headers over 16 KB are 431 in the envelope; a malformed request is 400 in the envelope", () =>
      Effect.promise(async () => {
        const big = parseRaw(
          await raw(running.port, `GET /api/v1/balance HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
        )
        expect([big.status, big.json?.error?.code]).toEqual([431, "REQUEST_HEADERS_TOO_LARGE"])
        expect(big.head).toMatch(/content-type: application\/json/i)
        const malformed = parseRaw(
          await raw(running.port, "GET /api/v1/balance HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        )
        expect([malformed.status, malformed.json?.error?.code]).toEqual([400, "VALIDATION_ERROR"])
        const nul = parseRaw(
          await raw(running.port, "GET /api/v1/balance HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n")
        )
        expect([nul.status, nul.json?.error?.code]).toEqual([400, "VALIDATION_ERROR"])
      }))

    it.live("non-canonical paths are 404 NOT_FOUND and never reach the admin API", () =>
      Effect.promise(async () => {
        const id = running.accountId
        const get = (path: string) =>
          raw(running.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminToken}\r\n\r\n`).then(
            parseRaw
          )
        expect((await get(`/admin/v1/accounts/${id}`)).status).toBe(200)
        for (
          const path of [
            `/ADMIN/V1/accounts/${id}`,
            `//admin/v1/accounts/${id}`,
            `/admin/v1/../admin/v1/accounts/${id}`,
            `/admin/v1/./accounts/${id}`,
            `/admin/v1/accounts/${id}/`,
            `/admin%2Fv1/accounts/${id}`,
            `/admin/v1%2Faccounts/${id}`,
            `/%61dmin/v1/accounts/${id}`,
            `/admin/v1/%2e%2e/v1/accounts/${id}`,
            `/admin/v1/accounts/${id};x`,
            `http://x/admin/v1/accounts/${id}`
          ]
        ) {
          const answer = await get(path)
          expect([path, answer.status, answer.json?.error?.code]).toEqual([path, 404, "NOT_FOUND"])
        }
      }))

    it.live(
      "a range past the end of a result file is 416 with Content-Range: bytes */size",
      () =>
        Effect.promise(async () => {
          const created = await send(running.port, {
            method: "POST",
            path: "/api/v1/vendor4/text-to-image",
            token: running.testKey,
            body: JSON.stringify({ model: "vendor4-4-0", input: { prompt: "a red kite", size: "1K" } })
          })
          const id = JSON.parse(created.text).data.id as string
          let task: any
          for (let i = 0; i < 200; i++) {
            task = JSON.parse(
              (await send(running.port, { method: "GET", path: `/api/v1/tasks/${id}`, token: running.testKey })).text
            ).data
            if (task.status === "succeeded" || task.status === "failed") break
            await new Promise((r) => setTimeout(r, 50))
          }
          expect(task.status).toBe("succeeded")
          const url = new URL(task.result[0].url)
          const size = task.result[0].size_bytes as number
          const answer = await send(running.port, {
            method: "GET",
            path: url.pathname + url.search,
            headers: { range: `bytes=${size}-` }
          })
          expect([answer.status, envelopeOf(answer)?.code, answer.headers["content-range"]]).toEqual([
            416,
            "RANGE_NOT_SATISFIABLE",
            `bytes */${size}`
          ])
        }),
      { timeout: 30_000 }
    )

    it.live(
      `fuzz: random requests to every route answer no 5xx, and every error is an envelope (seed ${seed})`,
      () => Effect.promise(() => fuzz(running)),
      { timeout: 240_000 }
    )
  })
}

// -----------------------------------------------------------------------------------------------------------------
// the fuzz run
// -----------------------------------------------------------------------------------------------------------------

interface Route {
  readonly method: string
  readonly path: string
  readonly payload: Option.Option<Schema.Schema<any, any, never>>
  readonly query: ReadonlyArray<string>
}

const routes: ReadonlyArray<Route> = []
HttpApi.reflect(Api.MediagateApi, {
  onGroup() {},
  onEndpoint({ endpoint }) {
    const query = Option.match(endpoint.urlParamsSchema, {
      onNone: () => [],
      onSome: (schema) => {
        const ast = Schema.encodedSchema(schema).ast
        return ast._tag === "TypeLiteral" ? ast.propertySignatures.map((p) => String(p.name)) : []
      }
    })
    ;(routes as Array<Route>).push({
      method: endpoint.method,
      path: endpoint.path,
      payload: endpoint.payloadSchema as unknown as Option.Option<Schema.Schema<any, any, never>>,
      query
    })
  }
})

const fc = FastCheck

/** Strings of every kind: printable, any code point (NUL and lone surrogates included), long, numeric. */
const anyString = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.fullUnicodeString({ maxLength: 12 }),
  fc.constantFrom(
    "\u0000",
    "a\u0000",
    "\ud800",
    "..",
    ".",
    "%",
    "%00",
    "/",
    "\\",
    "0",
    "-1",
    "1e400",
    "9".repeat(30),
    "null"
  ),
  fc.string({ minLength: 300, maxLength: 3000 })
)

/** JSON-ish values the Schemas did not ask for: deep, NUL-laden, huge numbers, arbitrary JSON. */
const oddBody = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.integer({ min: 60, max: 5000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
  fc.dictionary(
    fc.constantFrom("name", "model", "input", "url", "events", "description", "balance", "amount"),
    anyString
  )
    .map((value) => JSON.stringify(value)),
  fc.constantFrom(
    "",
    "{",
    "null",
    "[]",
    "1e400",
    "{\"name\":\"a\\u0000\"}",
    "{\"amount\":1e308}",
    "{\"balance\":-1e308}",
    "{\"name\":\"x\",\"spendLimit\":99999999999999999999}",
    "{\"__proto__\":{\"x\":1}}"
  )
)

/** Valid bodies of the routes with a payload (generation: the contract's minimal request of every model). */
const validBodies: Record<string, ReadonlyArray<Record<string, unknown>>> = {
  "POST /api/v1/api-keys": [
    { name: "k" },
    { name: "k", permissions: { "tasks:read": true }, spendLimit: 5, ipWhitelist: ["203.0.113.0/24"] }
  ],
  "POST /api/v1/webhooks": [{ url: "https://hooks.example.com/x", events: ["task.completed"], description: "d" }],
  "POST /admin/v1/accounts": [{ name: "a", balance: 1 }],
  "PATCH /admin/v1/accounts/:id": [{ name: "b" }, { monthlySpendLimit: 10 }],
  "POST /admin/v1/accounts/:id/credits": [{ amount: 1 }],
  "POST /admin/v1/accounts/:id/api-keys": [{ name: "k", environment: "test" }]
}
for (const { body, endpoint } of Examples.minimalRequests) {
  const key = `POST /api/v1${Catalog.endpoints[endpoint].path}`
  validBodies[key] = [...(validBodies[key] ?? []), body]
}

/** Odd values for a field of a valid body: strings of every kind, huge or negative numbers, deep or wrong shapes. */
const oddValue = fc.oneof(
  anyString,
  fc.constantFrom(1e308, -1e308, 2 ** 63, -1, 0.1234567, 1e20, null, true, [], {}),
  fc.jsonValue({ maxDepth: 3 })
)

/** A valid body with one field (top level or under `input`) replaced by an odd value, or added. */
const mutated = (body: Record<string, unknown>) =>
  fc.tuple(
    fc.constantFrom(
      ...Object.keys(body),
      ...Object.keys((body["input"] ?? {}) as object).map((k) => `input.${k}`),
      "extra"
    ),
    oddValue
  ).map(([field, value]) => {
    const copy: Record<string, any> = JSON.parse(JSON.stringify(body))
    if (field.startsWith("input.")) copy["input"][field.slice(6)] = value
    else copy[field] = value
    return JSON.stringify(copy)
  })

/**
 * Bodies for a route: valid ones, valid ones with one odd field (what reaches the database with strange strings),
 * and structurally plausible ones from its payload Schema that break its rules at random (the encoded side without
 * refinements: `Arbitrary` of the type side would spin on the refinements).
 */
const schemaBody = (route: Route) => {
  const valid = validBodies[`${route.method} ${route.path}`] ?? []
  const plausible = Option.match(route.payload, {
    onNone: () => oddBody,
    onSome: (schema) => Arbitrary.make(Schema.encodedSchema(schema)).map((value) => JSON.stringify(value))
  })
  return valid.length === 0 ? plausible : fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...valid).map((body) => JSON.stringify(body)) },
    { weight: 3, arbitrary: fc.constantFrom(...valid).chain(mutated) },
    { weight: 2, arbitrary: plausible }
  )
}

/** Path variants a lenient router would still route (none is canonical), by index. */
const variants: ReadonlyArray<(path: string) => string> = [
  (path) => path.toUpperCase(),
  (path) => `/${path}`,
  (path) => `${path}/`,
  (path) => path.replace("/v1/", "//v1/"),
  (path) => path.replace("/v1/", "/v1/./"),
  (path) => path.replace(/^\/(\w+)\/v1\//, "/$1/v1/../v1/"),
  (path) => path.replace("/v1/", "%2Fv1/"),
  (path) => path.replace(/^\/a/, "/%61"),
  (path) => `${path};x`
]

/** Lone surrogates as U+FFFD: `encodeURIComponent` refuses them. */
const wellFormed = (text: string) =>
  text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

const fuzz = async (running: Running) => {
  const ids = fc.oneof(
    anyString.map((text) => encodeURIComponent(wellFormed(text))),
    fc.constantFrom(
      running.accountId,
      "acct_x",
      "task_01J0000000000000000000000",
      "key_01J0000000000000000000000",
      "wh_1",
      "dlv_1"
    )
  )
  const statuses = new Map<number, number>()
  const failures: Array<string> = []
  let n = 0
  for (const route of routes) {
    const request = fc.record({
      params: fc.array(ids, { minLength: 3, maxLength: 3 }),
      query: fc.array(
        fc.tuple(fc.oneof(fc.constantFrom(...route.query, "x"), fc.string({ maxLength: 8 })), anyString),
        {
          maxLength: 4
        }
      ),
      body: fc.oneof({ weight: 3, arbitrary: schemaBody(route) }, { weight: 1, arbitrary: oddBody }),
      // mostly a token the route takes, sometimes none, a wrong or the other API's
      token: fc.oneof(
        {
          weight: 6,
          arbitrary: route.path.startsWith("/admin/")
            ? fc.constant(adminToken)
            : fc.constantFrom(running.liveKey, running.testKey)
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom(undefined, "mg_live_" + "x".repeat(32), "garbage", adminToken, running.liveKey)
        }
      ),
      headers: fc.record({
        "idempotency-key": fc.string({ maxLength: 300 }),
        "content-type": fc.constantFrom(
          "application/json",
          "application/json; charset=utf-8",
          "application/vnd.x+json"
        ),
        "x-forwarded-for": fc.constantFrom("203.0.113.9", "unknown", "", "[2001:db8::1]:443"),
        range: fc.constantFrom("bytes=0-1", "bytes=99999999-", "bytes=-0", "items=1-2")
      }, { requiredKeys: [] }),
      // one request in eight on a path variant
      variant: fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, {
        weight: 1,
        arbitrary: fc.nat(variants.length - 1)
      })
    })
    const samples = FastCheck.sample(request, { numRuns: 20, seed: seed + route.path.length + route.method.length })
    for (const sample of samples) {
      let index = 0
      const concrete = route.path.replace(/:\w+/g, () => sample.params[index++]!)
      const query = sample.query.length === 0 ? "" : `?${new URLSearchParams(sample.query).toString()}`
      const mutated = sample.variant === null ? concrete : variants[sample.variant]!(concrete)
      const path = mutated + query
      const hasBody = route.method !== "GET" && route.method !== "DELETE"
      const headers = Object.fromEntries(
        Object.entries(sample.headers).filter(([, value]) => /^[\x20-\x7e]*$/.test(value as string))
      ) as Record<string, string>
      const answer = await send(running.port, {
        method: route.method,
        path,
        token: sample.token,
        headers,
        body: hasBody ? sample.body : undefined
      })
      n++
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      const where = `${route.method} ${path.slice(0, 200)} body=${hasBody ? sample.body.slice(0, 200) : "-"}`
      if (answer.status >= 500) failures.push(`${answer.status} ${where}: ${answer.text.slice(0, 300)}`)
      if (answer.status >= 400 && envelopeOf(answer) === undefined) {
        failures.push(`not an envelope: ${answer.status} ${where}`)
      }
      if (mutated !== concrete && answer.status !== 404) {
        failures.push(`a path variant was routed: ${answer.status} ${where}`)
      }
    }
  }
  assert.deepStrictEqual(failures, [], `seed ${seed}, statuses ${JSON.stringify([...statuses])}`)
  // the run reached successes and refusals of several kinds, so it is not vacuous
  assert.isTrue(n > 600)
  assert.isTrue([...statuses.keys()].some((s) => s < 300), JSON.stringify([...statuses]))
  for (const status of [201, 400, 401, 404]) assert.isTrue(statuses.has(status), JSON.stringify([...statuses]))
}
