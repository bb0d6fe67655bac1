/**
 * The API's documentation: the OpenAPI document of the public API at `GET /api/v1/openapi.json`, the operator API's
 * at `GET /admin/v1/openapi.json` (both from `Api.documents` of the served HttpApi: each lint-clean on its own,
 * docs/api-reference.md) and the interactive docs (Scalar) at `/docs`, which shows both.
 *
 * The documents are built once, on their first request; their `servers` entry is `MEDIAGATE_PUBLIC_BASE_URL` when it
 * is set (`ServerSettings.publicBaseUrl`), else `/`. They are served like every other `/api/v1` and `/admin/v1`
 * answer, with `Cache-Control: no-store` (Envelope.ts): a document changes with the server's version and
 * configuration, and is fetched rarely. The admin document is served whether or not the admin API is on: it
 * describes the software, not an installation's data.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as OpenApi from "@effect/platform/OpenApi"
import { Api } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ServerConfig } from "./ServerConfig.js"

/**
 * Where the public API's OpenAPI document is served.
 *
 * @since 0.1.0
 * @category constants
 */
export const openApiPath = "/api/v1/openapi.json"
/**
 * Where the operator API's OpenAPI document is served.
 *
 * @since 0.1.0
 * @category constants
 */
export const adminOpenApiPath = "/admin/v1/openapi.json"
/**
 * Where the interactive documentation is served.
 *
 * @since 0.1.0
 * @category constants
 */
export const docsPath = "/docs"

/**
 * The documentation's routes.
 *
 * @since 0.1.0
 * @category routing
 */
export const routes = [
  { method: "GET", path: openApiPath },
  { method: "GET", path: adminOpenApiPath },
  { method: "GET", path: docsPath }
] as const

/** The page's documents, in Scalar's configuration: one source each, the first shown first. */
interface Source {
  readonly title: string
  readonly slug: string
  readonly content: OpenApi.OpenAPISpec
}

/**
 * Scalar's bundle, out of the platform's docs page (`HttpApiScalar`, whose module holding it is internal): the last
 * script of the page, after the one that sets the page's configuration.
 */
const bundleOf = (html: string): string => {
  const configuration = html.indexOf("dataset.configuration")
  const start = configuration === -1 ? -1 : html.indexOf("<script>", html.indexOf("</script>", configuration))
  const end = html.lastIndexOf("</script>")
  if (start === -1 || end <= start) throw new Error("the Scalar bundle was not found in HttpApiScalar's page")
  return html.slice(start + "<script>".length, end)
}

/** JSON inside a `<script>` element: no `<` that could end it. */
const scriptJson = (value: unknown): string => JSON.stringify(value).replace(/</g, "\\u003c")

/**
 * The docs page: Scalar mounted with one source per document (its document selector). The platform's page takes one
 * document, and its HTML integration drops `sources` from the configuration; `Scalar.createApiReference` takes them.
 */
const pageOf = (bundle: string, sources: ReadonlyArray<Source>): string =>
  `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>Mediagate API</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <div id="api-reference-app"></div>
    <script>${bundle}</script>
    <script>
      Scalar.createApiReference("#api-reference-app", { _integration: "html", sources: ${scriptJson(sources)} })
    </script>
  </body>
</html>`

/** The platform's docs page for an empty API, as text: where {@link bundleOf} takes Scalar's bundle from. */
const platformPage = Effect.scoped(Effect.gen(function*() {
  const Scalar = yield* Effect.promise(() => import("@effect/platform/HttpApiScalar"))
  const built = yield* Layer.build(
    Scalar.layer({ path: docsPath }).pipe(
      Layer.provideMerge(HttpApiBuilder.Router.Live),
      Layer.provide(Layer.succeed(HttpApi.Api, {
        api: HttpApi.make("docs") as unknown as Context.Tag.Service<HttpApi.Api>["api"],
        context: Context.empty()
      }))
    )
  )
  const router = yield* Context.get(built, HttpApiBuilder.Router).router
  const response = yield* Effect.provideService(
    router,
    HttpServerRequest.HttpServerRequest,
    HttpServerRequest.fromWeb(new Request(`http://localhost${docsPath}`))
  )
  return response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : ""
}))

/**
 * Serves the documents of the HttpApi in context and the docs page. The page is built on its first request: it
 * inlines Scalar's 6 MB bundle, which would otherwise sit in every server's memory from its start (≈ 13 MB of an
 * idle server's heap).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { api } = yield* HttpApi.Api
    const config = yield* ServerConfig
    const documents = yield* Effect.cached(Effect.sync(() => Api.documents(api, { serverUrl: config.publicBaseUrl })))
    yield* router.get(openApiPath, Effect.map(documents, (d) => HttpServerResponse.unsafeJson(d.public)))
    yield* router.get(adminOpenApiPath, Effect.map(documents, (d) => HttpServerResponse.unsafeJson(d.admin)))
    const page = yield* Effect.cached(Effect.gen(function*() {
      const { admin, public: publicDocument } = yield* documents
      const bundle = bundleOf(yield* Effect.orDie(platformPage))
      return HttpServerResponse.html(pageOf(bundle, [
        { title: publicDocument.info.title, slug: "api", content: publicDocument },
        { title: admin.info.title, slug: "admin", content: admin }
      ]))
    }))
    yield* router.get(docsPath, page)
  })
)
