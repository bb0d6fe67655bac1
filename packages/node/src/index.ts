/**
 * `@mediagate/node`: Mediagate on Node in one call — the whole stack as a layer or a handle with `node:http` and
 * Express adapters, and the production server behind `npm start` and the `mediagate` command.
 *
 * @since 0.1.0
 */

/** Access log lines and the HTTP request metric. */
export * as AccessLog from "./AccessLog.js"
/**
 * The database: SQLite file, PostgreSQL URL or the host app's `SqlClient`.
 *
 * @since 0.1.0
 */
export * as Database from "./Database.js"
/**
 * Log output: pretty or JSON, one line per event.
 *
 * @since 0.1.0
 */
export * as Logging from "./Logging.js"
/**
 * The whole stack: layers, background start, the plain Node handle.
 *
 * @since 0.1.0
 */
export * as Mediagate from "./Mediagate.js"
/**
 * Prometheus metrics at `/metrics`.
 *
 * @since 0.1.0
 */
export * as Metrics from "./Metrics.js"
/**
 * `node:http` and Express/Connect adapters.
 *
 * @since 0.1.0
 */
export * as NodeAdapters from "./NodeAdapters.js"
/**
 * The production server.
 *
 * @since 0.1.0
 */
export * as Server from "./Server.js"
/**
 * Retention: pruning of result files, deliveries, outbox rows and idempotency records; the test storage quota.
 *
 * @since 0.1.0
 */
export * as Retention from "./Retention.js"
