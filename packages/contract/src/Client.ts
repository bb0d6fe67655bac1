/**
 * The typed client derived from {@link MediagateApi}: `client.tasks.get({ path: { id } })` and so on.
 *
 * Headers whose fields are all optional (the `Idempotency-Key` of creating calls) are optional arguments:
 * `client.tasks.retry({ path: { id } })` sends no `Idempotency-Key` (`@effect/platform`'s client alone requires
 * `headers: {}` there and fails with a `ParseError` without it). For plain JavaScript see `@mediagate/client`.
 *
 * @since 0.1.0
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import type { Simplify } from "effect/Types"
import { MediagateApi } from "./Api.js"

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions {
  /** Base URL of the server, e.g. `http://localhost:3000`. */
  readonly baseUrl: string
  /** An API key (`mg_live_…`/`mg_test_…`) or, for the admin group, the admin token. */
  readonly apiKey?: string | Redacted.Redacted<string>
}

/**
 * `@effect/platform`'s request of an endpoint with `headers` optional when every header is optional.
 *
 * @since 0.1.0
 * @category models
 */
export type ClientRequest<Path, UrlParams, Payload, Headers, WithResponse extends boolean> = [Headers] extends [never]
  ? HttpApiEndpoint.HttpApiEndpoint.ClientRequest<Path, UrlParams, Payload, Headers, WithResponse>
  : {} extends Headers ? Simplify<
      & ([Path] extends [void] ? {} : { readonly path: Path })
      & ([UrlParams] extends [never] ? {} : { readonly urlParams: UrlParams })
      & ([Payload] extends [never] ? {} : { readonly payload: Payload })
      & { readonly headers?: Headers; readonly withResponse?: WithResponse }
    > extends infer Req ?
      ([Path] extends [void] ? [UrlParams] extends [never] ? [Payload] extends [never] ? Req | void : Req : Req : Req)
    : never
  : HttpApiEndpoint.HttpApiEndpoint.ClientRequest<Path, UrlParams, Payload, Headers, WithResponse>

/**
 * One method of the client (as `HttpApiClient.Client.Method`, with {@link ClientRequest}).
 *
 * @since 0.1.0
 * @category models
 */
export type Method<Endpoint, E, GroupError> = [Endpoint] extends [
  HttpApiEndpoint.HttpApiEndpoint<
    infer _Name,
    infer _Method,
    infer _Path,
    infer _UrlParams,
    infer _Payload,
    infer _Headers,
    infer _Success,
    infer _Error,
    infer _R,
    infer _RE
  >
] ? <WithResponse extends boolean = false>(
    request: ClientRequest<_Path, _UrlParams, _Payload, _Headers, WithResponse>
  ) => Effect.Effect<
    WithResponse extends true ? [_Success, HttpClientResponse.HttpClientResponse] : _Success,
    _Error | GroupError | E | HttpClientError.HttpClientError | ParseResult.ParseError
  >
  : never

/**
 * The client of a set of groups: one record of methods per group.
 *
 * @since 0.1.0
 * @category models
 */
export type Client<Groups extends HttpApiGroup.HttpApiGroup.Any, E> = Simplify<
  {
    readonly [Group in Groups as HttpApiGroup.HttpApiGroup.Name<Group>]: [Group] extends
      [HttpApiGroup.HttpApiGroup<infer _Name, infer Endpoints, infer GroupError, infer _R>] ? {
        readonly [Endpoint in Endpoints as HttpApiEndpoint.HttpApiEndpoint.Name<Endpoint>]: Method<
          Endpoint,
          E,
          GroupError
        >
      }
      : never
  }
>

type Groups = typeof MediagateApi extends { readonly groups: Record<string, infer G> } ? G : never

/**
 * The client type.
 *
 * @since 0.1.0
 * @category models
 */
export type MediagateClient = Client<
  Extract<Groups, HttpApiGroup.HttpApiGroup.Any>,
  never
>

/**
 * Makes a typed client of the whole API. Needs an `HttpClient` (e.g. `FetchHttpClient.layer`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ClientOptions): Effect.Effect<MediagateClient, never, HttpClient.HttpClient> =>
  HttpApiClient.make(MediagateApi, {
    baseUrl: options.baseUrl,
    transformClient: (client) =>
      options.apiKey === undefined ? client : HttpClient.mapRequest(
        client,
        HttpClientRequest.bearerToken(
          typeof options.apiKey === "string" ? options.apiKey : Redacted.value(options.apiKey)
        )
      )
  }).pipe(Effect.map((client) => {
    // every endpoint function gets `headers: {}` when the caller gave none (endpoints without a headers Schema
    // ignore it); the request object is otherwise passed on as given
    const groups: Record<string, Record<string, unknown>> = {}
    for (
      const [group, endpoints] of Object.entries(
        client as Record<string, Record<string, (request: unknown) => unknown>>
      )
    ) {
      const methods: Record<string, unknown> = {}
      for (const [name, endpoint] of Object.entries(endpoints)) {
        methods[name] = (request?: { readonly headers?: unknown }) =>
          endpoint(
            request === undefined
              ? { headers: {} }
              : request.headers === undefined
              ? { ...request, headers: {} }
              : request
          )
      }
      groups[group] = methods
    }
    return groups as unknown as MediagateClient
  }))
