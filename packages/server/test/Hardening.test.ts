/**
 * What a client can send that once answered outside the envelope or with a 5xx (issue 13): bodies nested too deep,
 * NUL characters in body strings or the URL, non-canonical paths (which must never reach a route, the admin API
 * least of all). The checks themselves (`inspectJson`, `isCanonicalPath`) are tested on their own first.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Envelope } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as RequestBody from "../src/internal/requestBody.js"
import { keys } from "./fakes.js"
import { adminToken, send, TestServer } from "./harness.js"

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth)

describe("inspectJson", () => {
  it("refuses nesting beyond the limit, counting only brackets outside strings", () => {
    expect(RequestBody.inspectJson(nested(RequestBody.maxJsonDepth))).toBeUndefined()
    expect(RequestBody.inspectJson(nested(RequestBody.maxJsonDepth + 1))).toBe(RequestBody.tooDeepMessage)
    expect(RequestBody.inspectJson(`{"a":${nested(40)},"b":{"c":${nested(40)}}}`)).toBeUndefined()
    expect(RequestBody.inspectJson(`{"a":"${"[{".repeat(1000)}"}`)).toBeUndefined()
    expect(RequestBody.inspectJson(nested(100_000))).toBe(RequestBody.tooDeepMessage)
  })

  it("refuses a NUL in any string, keys included, and nothing that only looks like one", () => {
    expect(RequestBody.inspectJson(`{"name":"a\\u0000b"}`)).toBe(RequestBody.nulMessage)
    expect(RequestBody.inspectJson(`{"a\\u0000":1}`)).toBe(RequestBody.nulMessage)
    expect(RequestBody.inspectJson(`["x","y\\"\\\\","\\u0000"]`)).toBe(RequestBody.nulMessage)
    // an escaped backslash followed by the letters u0000 is six characters of text, not a NUL
    expect(RequestBody.inspectJson(`{"name":"a\\\\u0000b"}`)).toBeUndefined()
    expect(RequestBody.inspectJson(`{"name":"\\u00001"}`)).toBe(RequestBody.nulMessage)
    expect(RequestBody.inspectJson(`{"name":"\\u0001 \\n \\" [ {"}`)).toBeUndefined()
    // what JSON.parse makes of the texts agrees
    expect(JSON.parse(`{"name":"a\\\\u0000b"}`).name).not.toContain("\u0000")
    expect(JSON.parse(`{"name":"\\u00001"}`).name).toContain("\u0000")
  })

  it("refuses an unpaired surrogate escape in any string, and accepts pairs and raw astral characters", () => {
    const message = (escape: string) => RequestBody.surrogateMessage(escape)
    expect(RequestBody.inspectJson(`{"prompt":"\\ud800"}`)).toBe(message("\\ud800"))
    expect(RequestBody.inspectJson(`{"prompt":"a\\uDBFFb"}`)).toBe(message("\\uDBFF"))
    expect(RequestBody.inspectJson(`{"prompt":"\\udc00"}`)).toBe(message("\\udc00"))
    expect(RequestBody.inspectJson(`{"\\ud83d":1}`)).toBe(message("\\ud83d"))
    // a high half followed by a raw character, or by another high half, is unpaired too
    expect(RequestBody.inspectJson(`{"p":"\\ud83d😀"}`)).toBe(message("\\ud83d"))
    expect(RequestBody.inspectJson(`{"p":"\\ud83d\\ud83d\\ude00"}`)).toBe(message("\\ud83d"))
    // pairs, escaped or raw, are text; an escaped backslash before u-d-8-0-0 is text too
    expect(RequestBody.inspectJson(`{"p":"\\ud83d\\ude00 and 😀 and \\uD83D\\uDE00"}`)).toBeUndefined()
    expect(RequestBody.inspectJson(`{"p":"\\\\ud800"}`)).toBeUndefined()
    // what JSON.parse makes of them agrees: a lone surrogate is no well-formed text
    expect(JSON.parse(`{"p":"\\ud800"}`).p.isWellFormed()).toBe(false)
    expect(JSON.parse(`{"p":"\\ud83d\\ude00"}`).p.isWellFormed()).toBe(true)
  })

  it("leaves syntax errors to JSON.parse", () => {
    for (const text of ["", "{", "\"unterminated", "]]]", "{\"a\":\"\\"]) {
      expect(RequestBody.inspectJson(text)).toBeUndefined()
    }
  })
})

describe("isCanonicalPath", () => {
  it("accepts the paths as routes write them, with escapes only where needed", () => {
    for (
      const path of [
        "/",
        "/api/v1/tasks",
        "/api/v1/tasks/task_01ABC",
        "/files/a/b.png",
        "/api/v1/tasks/a%20b",
        "/x/%C3%A9"
      ]
    ) {
      assert.isTrue(Envelope.isCanonicalPath(path), path)
    }
  })

  it("refuses every variant that a lenient router would still route", () => {
    for (
      const path of [
        "",
        "admin/v1/accounts",
        "http://host/admin/v1/accounts",
        "//admin/v1/accounts",
        "/admin//v1/accounts",
        "/admin/v1/accounts/",
        "/admin/v1/./accounts",
        "/admin/v1/../admin/v1/accounts",
        "/admin/v1/accounts/..",
        "/admin%2Fv1/accounts",
        "/admin%2fv1/accounts",
        "/%61dmin/v1/accounts",
        "/admin/v1/%2e%2e/accounts",
        "/admin%5Cv1/accounts",
        "/admin\\v1/accounts",
        "/admin/v1/accounts;x",
        "/admin/v1/accounts#x",
        "/admin/v1/accounts/%zz",
        "/admin/v1/accounts/%4",
        "/api/v1/tasks/a%00b"
      ]
    ) assert.isFalse(Envelope.isCanonicalPath(path), path)
  })
})

describe("answers a client can cause", () => {
  it.layer(TestServer)((it) => {
    it.effect("a body nested 100,000 levels deep is 400 VALIDATION_ERROR naming the limit", () =>
      Effect.gen(function*() {
        for (const path of ["/api/v1/api-keys", "/api/v1/vendor3/text-to-video", "/api/v1/webhooks"]) {
          const answer = yield* send("POST", path, { token: keys.live, raw: nested(100_000) })
          assert.strictEqual(answer.status, 400, answer.text)
          expect(answer.body).toEqual({
            success: false,
            error: { code: "VALIDATION_ERROR", message: RequestBody.tooDeepMessage }
          })
        }
        // within the limit, the body is judged by its Schema as before
        const shallow = yield* send("POST", "/api/v1/api-keys", {
          token: keys.live,
          raw: nested(RequestBody.maxJsonDepth)
        })
        assert.strictEqual(shallow.status, 400)
        assert.notStrictEqual(shallow.body.error.message, RequestBody.tooDeepMessage)
      }))

    it.effect("a NUL in any body string is 400 VALIDATION_ERROR, on the public and the admin API", () =>
      Effect.gen(function*() {
        const cases = [
          ["/api/v1/api-keys", keys.live, { name: "a\u0000b" }],
          ["/api/v1/webhooks", keys.live, {
            url: "https://hooks.example.com/x",
            events: ["task.failed"],
            description: "x\u0000"
          }],
          ["/api/v1/vendor3/text-to-video", keys.live, { model: "vendor3-3", input: { prompt: "p\u0000" } }],
          ["/api/v1/vendor3/text-to-video", keys.live, {
            model: "vendor3-3",
            input: { prompt: "p" },
            metadata: { "k\u0000": 1 }
          }],
          ["/admin/v1/accounts", adminToken, { name: "acme\u0000" }]
        ] as const
        for (const [path, token, json] of cases) {
          const answer = yield* send("POST", path, { token, json })
          assert.strictEqual(answer.status, 400, `${path} ${answer.text}`)
          expect(answer.body).toEqual({
            success: false,
            error: { code: "VALIDATION_ERROR", message: RequestBody.nulMessage }
          })
        }
        // the six characters \u0000 as text are an ordinary name
        const text = yield* send("POST", "/api/v1/api-keys", { token: keys.live, json: { name: "a\\u0000b" } })
        assert.strictEqual(text.status, 201, text.text)
      }))

    it.effect("a NUL in the query is 400 VALIDATION_ERROR; in the path, no id has one: 404", () =>
      Effect.gen(function*() {
        for (const path of ["/api/v1/tasks?search=%00", "/api/v1/tasks?cursor=a%00b", "/api/v1/tasks?x%00=1"]) {
          const answer = yield* send("GET", path, { token: keys.live })
          assert.strictEqual(answer.status, 400, `${path} ${answer.text}`)
          expect(answer.body.error).toEqual({
            code: "VALIDATION_ERROR",
            message: "query: must not contain the NUL character (%00)"
          })
        }
        const path = yield* send("GET", "/api/v1/tasks/task%00", { token: keys.live })
        assert.strictEqual(path.status, 404, path.text)
        assert.strictEqual(path.body.error.code, "NOT_FOUND")
      }))

    // dot segments (`/./`, `/../`) are resolved by the client's URL parser before they are sent: the node package's
    // tests send them over a raw socket
    it.effect("a non-canonical path is 404 NOT_FOUND and never reaches a route", () =>
      Effect.gen(function*() {
        const canonical = yield* send("GET", "/admin/v1/accounts/acct_main", { token: adminToken })
        assert.strictEqual(canonical.status, 200, canonical.text)
        const variants = [
          "/ADMIN/V1/accounts/acct_main",
          "/Admin/v1/accounts/acct_main",
          "//admin/v1/accounts/acct_main",
          "/admin//v1/accounts/acct_main",
          "/admin/v1/accounts/acct_main/",
          "/admin%2Fv1/accounts/acct_main",
          "/admin/v1%2faccounts/acct_main",
          "/%61dmin/v1/accounts/acct_main",
          "/admin/v1/accounts/acct_main;x",
          "/API/V1/balance",
          "//api/v1/balance",
          "/api/v1/balance/"
        ]
        for (const path of variants) {
          const answer = yield* send("GET", path, {
            token: path.toLowerCase().includes("admin") ? adminToken : keys.live
          })
          assert.strictEqual(answer.status, 404, `${path} ${answer.text}`)
          assert.strictEqual(answer.body.error.code, "NOT_FOUND", path)
        }
        // a wrong method on a variant is a 404 too: the variant is no route at all
        const post = yield* send("POST", "/ADMIN/V1/accounts", { token: adminToken, json: { name: "x" } })
        assert.strictEqual(post.status, 404, post.text)
        // the canonical path with a wrong method is still 405 with Allow
        const method = yield* send("DELETE", "/admin/v1/accounts/acct_main", { token: adminToken })
        assert.strictEqual(method.status, 405)
        assert.strictEqual(method.headers["allow"], "GET, PATCH")
      }))
  })
})
