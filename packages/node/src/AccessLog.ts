/**
 * The one middleware of every answered request: one access-log line and the HTTP metric, from one measurement.
 *
 * - Access log (`MEDIAGATE_ACCESS_LOG`): one line per request, `GET /api/v1/tasks/:id 200 1.2ms`, with the fields
 *   as log annotations for the JSON format: `http.method`, `http.route` (the route template, `unmatched` when no
 *   route matches), `http.path` (never the query, which may carry file signatures), `http.status`, `http.ms`,
 *   `request_id` and `account_id` (once the key was authenticated). Requests interrupted because their client went
 *   away log status 499 (API requests run to their end and log their status: see the server's `Envelope.group`).
 * - Metrics (`MEDIAGATE_METRICS`): `mediagate_http_request_duration_seconds{method,route,status}`
 *   (`@mediagate/contract/Metrics`).
 *
 * The route, request id and account come from the server's envelope (`RequestContext`), which matched the route
 * once already. With both off the app runs as it is: nothing per request.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Metrics } from "@mediagate/contract"
import { RequestContext } from "@mediagate/server"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { logInfoWithFields, writeInfoLine } from "./Logging.js"

/**
 * Whether the access log is on (`MEDIAGATE_ACCESS_LOG`; default off, the production server turns it on).
 *
 * @since 0.1.0
 * @category constants
 */
export const enabled: Config.Config<boolean> = Config.boolean("MEDIAGATE_ACCESS_LOG").pipe(Config.withDefault(false))

/**
 * What the middleware does per request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** One log line per request. */
  readonly log: boolean
  /** The HTTP request metric. */
  readonly metrics: boolean
}

/**
 * Logs one line per request answered by `app` and/or records its metric (see the module's comment).
 *
 * @since 0.1.0
 * @category utils
 */
export const middleware = <E, R>(
  app: HttpApp.Default<E, R>,
  options: Options = { log: true, metrics: false }
): HttpApp.Default<E, R> => {
  if (!options.log && !options.metrics) return app
  // the request and the fiber's clock read from the fiber directly: two fiber steps per request, not six
  return Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const clock = Context.get(fiber.getFiberRef(DefaultServices.currentServices), Clock.Clock)
    const started = clock.unsafeCurrentTimeNanos()
    return Effect.onExit(app, (exit) => {
      const status = Exit.isSuccess(exit) ? exit.value.status : Exit.isInterrupted(exit) ? 499 : 500
      const elapsed = clock.unsafeCurrentTimeNanos() - started
      const info = RequestContext.get(request)
      const route = info?.route ?? Metrics.unmatchedRoute
      if (options.metrics) Metrics.httpRequestDuration.record(Number(elapsed) / 1e9, request.method, route, status)
      if (!options.log) return Effect.void
      const path = request.url.split("?", 1)[0] ?? "/"
      const ms = Number(elapsed / 100_000n) / 10
      const fields: Array<readonly [string, string | number]> = [
        ["http.method", request.method],
        ["http.route", route],
        ["http.path", path],
        ["http.status", status],
        ["http.ms", ms],
        ["request_id", info?.id ?? ""]
      ]
      // requests without an account (admin, health, metrics, refused keys) leave the field out
      if (info?.accountId !== undefined && info.accountId !== "") fields.push(["account_id", info.accountId])
      const text = `${request.method} ${path} ${status} ${ms}ms`
      // written at once where that gives the same line (Mediagate's loggers, no span): no log effect per request
      return writeInfoLine(fiber, new Date(clock.unsafeCurrentTimeMillis()), text, fields)
        ? Effect.void
        : logInfoWithFields(text, fields)
    })
  })
}
