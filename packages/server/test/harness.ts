/**
 * A real HTTP server over the fake ports, and small helpers to send raw requests and read envelopes.
 */
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { NodeHttpServer } from "@effect/platform-node"
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
    if (options.raw !== undefined) request = HttpClientRequest.setBody(request, HttpBody.text(options.raw, "application/json"))
    // headers last: a test may override the body's Content-Type
    if (options.headers !== undefined) request = HttpClientRequest.setHeaders(request, options.headers)
    const response = yield* client.execute(request)
    const text = yield* response.text
    let body: unknown = undefined
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers, body, text } as Answer
  }).pipe(Effect.scoped)
