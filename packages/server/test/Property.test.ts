import { assert, describe, it } from "@effect/vitest"
import { Catalog, Generation, ValidationMessage } from "@mediagate/contract"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { keys } from "./fakes.js"
import { send, TestServer } from "./harness.js"

const seed = Date.now()
const runsPerEndpoint = 40

describe("no request body produces a 5xx", () => {
  it.layer(TestServer, { timeout: "60 seconds" })((it) => {
    it.effect(`Schema-derived bodies on every endpoint (seed ${seed})`, () =>
      Effect.gen(function*() {
        const statuses = new Map<number, number>()
        for (const info of Catalog.endpointList) {
          // the encoded side without refinements: structurally plausible bodies that break rules at random
          const arbitrary = Arbitrary.make(
            Schema.encodedSchema(Generation.requestSchema(info.key as Catalog.EndpointKey))
          )
          const bodies = FastCheck.sample(arbitrary, { numRuns: runsPerEndpoint, seed: seed + info.path.length })
          const decide = Schema.decodeUnknownEither(Generation.requestSchema(info.key as Catalog.EndpointKey))
          for (const body of bodies) {
            const answer = yield* send("POST", `/api/v1${info.path}`, { token: keys.live, json: body })
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
            // the HTTP answer is exactly what the request Schema decides about the body as sent (JSON turns
            // NaN and Infinity into null), message included
            const expected = decide(JSON.parse(JSON.stringify(body)))
            if (Either.isRight(expected)) {
              assert.strictEqual(answer.status, 201, `${info.path} ${answer.text}`)
            } else {
              assert.strictEqual(answer.status, 400, `${info.path} ${answer.text}`)
              assert.deepStrictEqual(answer.body.error, {
                code: "VALIDATION_ERROR",
                message: ValidationMessage.formatParseError(expected.left)
              })
            }
          }
        }
        // the generator reaches both outcomes, so the property is not vacuous
        assert.isTrue((statuses.get(201) ?? 0) > 0, JSON.stringify([...statuses]))
        assert.isTrue((statuses.get(400) ?? 0) > 0, JSON.stringify([...statuses]))
      }), 60_000) // hundreds of requests: a loaded machine takes longer than vitest's 5 s default

    it.effect(`arbitrary JSON values on every endpoint (seed ${seed})`, () =>
      Effect.gen(function*() {
        for (const info of Catalog.endpointList) {
          const bodies = FastCheck.sample(FastCheck.jsonValue({ maxDepth: 4 }), { numRuns: 15, seed: seed + 1 })
          for (const body of bodies) {
            const answer = yield* send("POST", `/api/v1${info.path}`, { token: keys.live, raw: JSON.stringify(body) })
            assert.isTrue(answer.status < 500, `${info.path} ${answer.status} ${JSON.stringify(body)}`)
            assert.strictEqual(answer.body.success, false)
          }
        }
      }))

    it.effect(`arbitrary query strings on the list endpoints (seed ${seed})`, () =>
      Effect.gen(function*() {
        const names = [
          "status",
          "provider",
          "model",
          "created_after",
          "created_before",
          "search",
          "limit",
          "cursor",
          "name",
          "x"
        ]
        const queries = FastCheck.sample(
          FastCheck.array(FastCheck.tuple(FastCheck.constantFrom(...names), FastCheck.string()), { maxLength: 4 }),
          { numRuns: 60, seed }
        )
        for (const pairs of queries) {
          const query = new URLSearchParams(pairs).toString()
          for (const path of ["/api/v1/tasks", "/api/v1/vendor9/voices", "/api/v1/webhooks/wh_1/deliveries"]) {
            const answer = yield* send("GET", `${path}?${query}`, { token: keys.live })
            assert.isTrue(
              answer.status === 200 || answer.status === 400,
              `${path}?${query}: ${answer.status} ${answer.text}`
            )
          }
        }
      }))
  })
})
