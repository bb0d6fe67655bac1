/**
 * One log line per request: method, path (never the query, which may carry file signatures), status and
 * duration, with the same fields as log annotations (`http.method`, `http.path`, `http.status`, `http.ms`) for
 * the JSON format. Requests interrupted because their client went away log status 499 (API requests run to their
 * end and log their status: see the server's `Envelope.group`).
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** Whether the access log is on (`MEDIAGATE_ACCESS_LOG`; default off, the production server turns it on). */
export const enabled: Config.Config<boolean> = Config.boolean("MEDIAGATE_ACCESS_LOG").pipe(Config.withDefault(false))

/** Logs one line per request answered by `app`. */
export const middleware = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(Effect.zip(HttpServerRequest.HttpServerRequest, Clock.currentTimeNanos), ([request, started]) => {
    const path = request.url.split("?", 1)[0] ?? "/"
    return Effect.onExit(app, (exit) =>
      Effect.flatMap(Clock.currentTimeNanos, (now) => {
        const status = Exit.isSuccess(exit) ? exit.value.status : Exit.isInterrupted(exit) ? 499 : 500
        const ms = Number((now - started) / 100_000n) / 10
        return Effect.logInfo(`${request.method} ${path} ${status} ${ms}ms`).pipe(
          Effect.annotateLogs({ "http.method": request.method, "http.path": path, "http.status": status, "http.ms": ms })
        )
      }))
  })
