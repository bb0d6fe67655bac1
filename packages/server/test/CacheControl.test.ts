/**
 * `Cache-Control: no-store` on every answer under `/api/v1` and `/admin/v1` (keys, webhook secrets, balances and
 * tasks never sit in a cache): successes, errors of every kind and the OpenAPI documents, through the routes the
 * envelope dispatches itself and those `HttpApiBuilder` serves. Result files keep their own caching.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { fileFixtures, fileUrl, keys } from "./fakes.js"
import { adminToken, type Answer, send, TestServer } from "./harness.js"

const cacheControl = (answer: Answer) => answer.headers["cache-control"]

describe("Cache-Control", () => {
  it.layer(TestServer)((it) => {
    it.effect("no-store on /api/v1 answers: successes carrying a key, a secret, a balance, lists", () =>
      Effect.gen(function*() {
        const answers: ReadonlyArray<readonly [string, number, Answer]> = [
          [
            "POST /api/v1/api-keys",
            201,
            yield* send("POST", "/api/v1/api-keys", { token: keys.live, json: { name: "k" } })
          ],
          [
            "POST /api/v1/webhooks",
            201,
            yield* send("POST", "/api/v1/webhooks", {
              token: keys.live,
              json: { url: "https://hooks.example.org/in", events: ["task.completed"] }
            })
          ],
          ["GET /api/v1/balance", 200, yield* send("GET", "/api/v1/balance", { token: keys.live })],
          ["GET /api/v1/tasks", 200, yield* send("GET", "/api/v1/tasks?limit=5", { token: keys.live })],
          ["GET /api/v1/openapi.json", 200, yield* send("GET", "/api/v1/openapi.json")]
        ]
        for (const [request, status, answer] of answers) {
          assert.strictEqual(answer.status, status, `${request}: ${answer.text.slice(0, 200)}`)
          assert.strictEqual(cacheControl(answer), "no-store", request)
        }
      }))

    it.effect("no-store on /api/v1 errors: 400, 401, 404, 405", () =>
      Effect.gen(function*() {
        const answers: ReadonlyArray<readonly [number, Answer]> = [
          [400, yield* send("POST", "/api/v1/api-keys", { token: keys.live, raw: "{not json" })],
          [401, yield* send("GET", "/api/v1/balance")],
          [404, yield* send("GET", "/api/v1/tasks/task_01ARZ3NDEKTSV4RRFFQ69G5FAV", { token: keys.live })],
          [404, yield* send("GET", "/api/v1/no-such-route")],
          [405, yield* send("PUT", "/api/v1/balance", { token: keys.live })]
        ]
        for (const [status, answer] of answers) {
          assert.strictEqual(answer.status, status, answer.text)
          assert.strictEqual(answer.body.success, false)
          assert.strictEqual(cacheControl(answer), "no-store", `${status} ${answer.text}`)
        }
      }))

    it.effect("no-store on /admin/v1: an account, a wrong token, an unknown route, the document", () =>
      Effect.gen(function*() {
        const answers: ReadonlyArray<readonly [number, Answer]> = [
          [200, yield* send("GET", "/admin/v1/accounts/acct_main", { token: adminToken })],
          [401, yield* send("GET", "/admin/v1/accounts/acct_main", { token: "wrong-token" })],
          [404, yield* send("GET", "/admin/v1/no-such-route", { token: adminToken })],
          [200, yield* send("GET", "/admin/v1/openapi.json")]
        ]
        for (const [status, answer] of answers) {
          assert.strictEqual(answer.status, status, answer.text)
          assert.strictEqual(cacheControl(answer), "no-store", `${status} ${answer.text}`)
        }
      }))

    it.effect("result files and the docs page keep their own caching", () =>
      Effect.gen(function*() {
        const file = yield* send("GET", fileUrl(fileFixtures.text.key))
        assert.strictEqual(file.status, 200)
        assert.strictEqual(cacheControl(file), "private, max-age=60")
        const docs = yield* send("GET", "/docs")
        assert.strictEqual(docs.status, 200)
        assert.notStrictEqual(cacheControl(docs), "no-store")
      }))
  })
})
