/**
 * Health endpoints for load balancers and orchestrators: `GET /healthz` answers while the process serves
 * requests; `GET /readyz` answers 200 only when the optional {@link Readiness} check passes (e.g. the database
 * answers), else 503 `SERVICE_UNAVAILABLE`.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { errorResponse } from "./Envelope.js"

/** What `/readyz` checks; without one, a serving process is ready. */
export class Readiness extends Context.Tag("@mediagate/server/Readiness")<Readiness, {
  readonly check: Effect.Effect<void, unknown>
}>() {}

/** The health routes. */
export const routes = [{ method: "GET", path: "/healthz" }, { method: "GET", path: "/readyz" }] as const

/** Serves `/healthz` and `/readyz` next to the API. */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    yield* router.get("/healthz", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" })))
    yield* router.get(
      "/readyz",
      Effect.serviceOption(Readiness).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.void,
          onSome: (readiness) => Effect.timeoutFail(readiness.check, { duration: Duration.seconds(2), onTimeout: () => "timeout" })
        })),
        Effect.as(HttpServerResponse.unsafeJson({ status: "ready" })),
        Effect.catchAllCause(() =>
          Effect.succeed(errorResponse(503, "SERVICE_UNAVAILABLE", "not ready: a dependency does not answer"))
        )
      )
    )
  })
)
