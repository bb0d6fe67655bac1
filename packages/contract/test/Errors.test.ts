import { describe, expect, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as Errors from "../src/Errors.js"

describe("API errors", () => {
  it("every class carries its code and status, statically and on instances", () => {
    for (const errorClass of Errors.all) {
      const error = new errorClass({ message: "m" })
      expect(error.code).toBe(errorClass.code)
      expect(error.status).toBe(errorClass.status)
      expect(Errors.isApiError(error)).toBe(true)
    }
    expect(Errors.isApiError(new Error("x"))).toBe(false)
  })

  it("the statuses are those of decisions.md §1", () => {
    const table = Object.fromEntries(Errors.all.map((c) => [c.code, c.status]))
    expect(table).toMatchObject({
      VALIDATION_ERROR: 400,
      AUTH_REQUIRED: 401,
      AUTH_INVALID_TOKEN: 401,
      AUTH_TOKEN_EXPIRED: 401,
      INSUFFICIENT_BALANCE: 402,
      SPEND_LIMIT_EXCEEDED: 402,
      KEY_PERMISSION_DENIED: 403,
      KEY_REVOKED: 403,
      TASK_NOT_FOUND: 404,
      WEBHOOK_NOT_FOUND: 404,
      API_KEY_NOT_FOUND: 404,
      DELIVERY_NOT_FOUND: 404,
      NOT_FOUND: 404,
      METHOD_NOT_ALLOWED: 405,
      TASK_NOT_RETRYABLE: 409,
      TASK_NOT_CANCELLABLE: 409,
      IDEMPOTENCY_KEY_REUSED: 409,
      PAYLOAD_TOO_LARGE: 413,
      RATE_LIMITED: 429,
      INTERNAL_ERROR: 500,
      SERVICE_UNAVAILABLE: 503
    })
  })

  it("the wire form is the spec's envelope, both ways", () => {
    for (const errorClass of Errors.all) {
      const schema = errorClass.wire as Schema.Schema<unknown, unknown>
      const encoded = Schema.encodeSync(schema)(new errorClass({ message: "why" }))
      expect(encoded).toEqual({ success: false, error: { code: errorClass.code, message: "why" } })
      const decoded = Schema.decodeUnknownSync(schema)(encoded)
      expect(decoded).toBeInstanceOf(errorClass)
      expect(errorClass.wire).toBe(schema) // one envelope Schema per class, made once
    }
  })
})
