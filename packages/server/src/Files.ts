/**
 * `GET /files/*` (and `HEAD`, which the router answers with the same handler): result files, served through the
 * `FileService` port with their signature checked (decisions.md §3). A raw route next to the HttpApi: the body is
 * streamed, and failures are answered in the API's error envelope (403 `FILE_ACCESS_DENIED`, 404 `NOT_FOUND`,
 * 416 `RANGE_NOT_SATISFIABLE` with a `Content-Range` naming the file's size, 503 `SERVICE_UNAVAILABLE`). Status and
 * headers come from the port as they are.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { errorResponseFor, type ExtraRoute } from "./Envelope.js"

/**
 * The path of the route.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/files/*"

/**
 * The route's entries for the envelope middleware's 404/405 table.
 *
 * @since 0.1.0
 * @category routing
 */
export const routes: ReadonlyArray<ExtraRoute> = [{ method: "GET", path }, { method: "HEAD", path }]

const queryValue = (params: URLSearchParams, name: string) => params.get(name) ?? undefined

/**
 * The handler of `GET|HEAD /files/*`.
 *
 * @since 0.1.0
 * @category routing
 */
export const handler = (files: Services.FileService["Type"]) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const params = yield* HttpRouter.params
    const key = params["*"] ?? ""
    const search = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
    return yield* files.open(
      key,
      { expires: queryValue(search, "expires"), signature: queryValue(search, "signature") },
      request.headers["range"]
    ).pipe(
      Effect.map((answer) =>
        request.method === "HEAD"
          ? HttpServerResponse.empty({ status: answer.status, headers: answer.headers })
          : HttpServerResponse.stream(answer.body, { status: answer.status, headers: answer.headers })
      ),
      Effect.catchAll((error) =>
        Effect.succeed(errorResponseFor(
          request,
          error.status,
          error.code,
          error.message,
          // a 416 names the file's size (RFC 9110 §15.5.17)
          error._tag === "RangeNotSatisfiable" && error.size !== undefined
            ? { "content-range": `bytes */${error.size}` }
            : undefined
        ))
      )
    )
  })

/**
 * The route, added to the HttpApi's router.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never, never, Services.FileService> = HttpApiBuilder.Router.use((router) =>
  Effect.flatMap(Services.FileService, (files) => router.get(path, handler(files)))
)
