/**
 * A real HTTP server over the fake ports, and small helpers to send raw requests and read envelopes.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Http, ServerConfig } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { PortsFake } from "./fakes.js"

/** The admin token of the test server. */
export const adminToken = "admin-token-for-tests"

/** The HTTP layer served on a random port, over the fakes; also provides an `HttpClient` aimed at it. */
export const TestServer = Http.layer.pipe(
  Layer.provideMerge(NodeHttpServer.layerTest),
  Layer.provideMerge(PortsFake),
  Layer.provide(ServerConfig.layer({ adminToken: Option.some(Redacted.make(adminToken)) }))
)

/** A response as the tests look at it. */
export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: any
  readonly text: string
}

/**
 * An error envelope as the spec writes it (`{ success: false, error: { code, message } }`), after checking the
 * `error.request_id` the server adds to every error envelope: present, and the answer's `X-Request-Id`. Every
 * error answer of every test through {@link send} is checked so; the tests then compare the spec's envelope.
 */
const withoutRequestId = (body: unknown, headers: Readonly<Record<string, string>>): unknown => {
  if (
    typeof body !== "object" || body === null || !("success" in body) || body.success !== false || !("error" in body)
  ) {
    return body
  }
  const { request_id, ...error } = body.error as { readonly request_id?: unknown }
  if (typeof request_id !== "string" || request_id !== headers["x-request-id"]) {
    throw new Error(
      `error envelope without the answer's request id: ${JSON.stringify(body)} (X-Request-Id: ${
        headers["x-request-id"]
      })`
    )
  }
  return { ...body, error }
}

/** Sends a request with an optional bearer token and JSON (or raw) body. */
export const send = (
  method: "GET" | "POST" | "DELETE" | "PATCH" | "PUT",
  path: string,
  options: {
    readonly token?: string
    readonly json?: unknown
    readonly raw?: string
    readonly headers?: Record<string, string>
  } = {}
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path)
    if (options.token !== undefined) request = HttpClientRequest.bearerToken(request, options.token)
    if (options.json !== undefined) request = HttpClientRequest.setBody(request, HttpBody.unsafeJson(options.json))
    if (options.raw !== undefined) {
      request = HttpClientRequest.setBody(request, HttpBody.text(options.raw, "application/json"))
    }
    // headers last: a test may override the body's Content-Type
    if (options.headers !== undefined) {
      request = HttpClientRequest.setHeaders(request, options.headers)
    }
    const response = yield* client.execute(request)
    const text = yield* response.text
    let body: unknown = undefined
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return {
      status: response.status,
      headers: response.headers,
      body: withoutRequestId(body, response.headers),
      text
    } as Answer
  }).pipe(Effect.scoped)
