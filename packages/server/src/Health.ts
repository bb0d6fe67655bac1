/**
 * Health endpoints for load balancers and orchestrators: `GET /healthz` answers while the process serves
 * requests; `GET /readyz` answers 200 only when the {@link Readiness} check passes (e.g. the database
 * answers), else 503 `SERVICE_UNAVAILABLE`.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { errorResponseFor } from "./Envelope.js"

/**
 * What `/readyz` checks (the composed stack: that the database answers).
 *
 * @since 0.1.0
 * @category services
 */
export class Readiness extends Context.Tag("@mediagate/server/Readiness")<Readiness, {
  readonly check: Effect.Effect<void, unknown>
}>() {}

/**
 * A {@link Readiness} that is always ready: for an app whose dependencies need no check.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAlwaysReady: Layer.Layer<Readiness> = Layer.succeed(Readiness, { check: Effect.void })

/**
 * The health routes.
 *
 * @since 0.1.0
 * @category routing
 */
export const routes = [{ method: "GET", path: "/healthz" }, { method: "GET", path: "/readyz" }] as const

/**
 * Serves `/healthz` and `/readyz` next to the API.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    yield* router.get("/healthz", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" })))
    yield* router.get(
      "/readyz",
      Effect.timeoutFail(readiness.check, { duration: Duration.seconds(2), onTimeout: () => "timeout" }).pipe(
        Effect.as(HttpServerResponse.unsafeJson({ status: "ready" })),
        Effect.catchAllCause(() =>
          Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
            errorResponseFor(request, 503, "SERVICE_UNAVAILABLE", "not ready: a dependency does not answer"))
        )
      )
    )
  })
)
