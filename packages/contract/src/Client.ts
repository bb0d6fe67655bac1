/**
 * The typed client derived from {@link MediagateApi}: `client.tasks.get({ path: { id } })` and so on.
 *
 * @since 0.1.0
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { MediagateApi } from "./Api.js"

/** Options of {@link make}. */
export interface ClientOptions {
  /** Base URL of the server, e.g. `http://localhost:3000`. */
  readonly baseUrl: string
  /** An API key (`mg_live_…`/`mg_test_…`) or, for the admin group, the admin token. */
  readonly apiKey?: string | Redacted.Redacted<string>
}

/** Makes a typed client of the whole API. Needs an `HttpClient` (e.g. `FetchHttpClient.layer`). */
export const make = (options: ClientOptions) =>
  HttpApiClient.make(MediagateApi, {
    baseUrl: options.baseUrl,
    transformClient: (client) =>
      options.apiKey === undefined ? client : HttpClient.mapRequest(
        client,
        HttpClientRequest.bearerToken(
          typeof options.apiKey === "string" ? options.apiKey : Redacted.value(options.apiKey)
        )
      )
  })

/** The client type. */
export type MediagateClient = Effect.Effect.Success<ReturnType<typeof make>>
