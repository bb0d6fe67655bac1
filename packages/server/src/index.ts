/**
 * `@mediagate/server`: the HTTP layer of Mediagate, implemented against the application ports of
 * `@mediagate/contract`.
 *
 * @since 0.1.0
 */

/** Authentication middleware implementations. */
export * as Authentication from "./Authentication.js"
/**
 * Route permission checks.
 *
 * @since 0.1.0
 */
export * as Authorization from "./Authorization.js"
/**
 * Client addresses behind trusted proxies.
 *
 * @since 0.1.0
 */
export * as ClientAddress from "./ClientAddress.js"
/**
 * Upstream completion callbacks (`POST /callbacks/v1/{channel}/{task}`).
 *
 * @since 0.1.0
 */
export * as Callbacks from "./Callbacks.js"
/**
 * The OpenAPI documents (public and admin) and the interactive docs page.
 *
 * @since 0.1.0
 */
export * as Docs from "./Docs.js"
/**
 * The envelope middleware.
 *
 * @since 0.1.0
 */
export * as Envelope from "./Envelope.js"
/**
 * `/healthz` and `/readyz`.
 *
 * @since 0.1.0
 */
export * as Health from "./Health.js"
/**
 * The composed HTTP layer: serve, mount, or web handler.
 *
 * @since 0.1.0
 */
export * as Http from "./Http.js"
/**
 * Rate limits: requests per minute, tasks in flight, webhook actions, failed admin tokens.
 *
 * @since 0.1.0
 */
export * as RateLimit from "./RateLimit.js"
/**
 * Per-request id, route template and account (logs, metrics, error envelopes).
 *
 * @since 0.1.0
 */
export * as RequestContext from "./RequestContext.js"
/**
 * Settings of the HTTP layer.
 *
 * @since 0.1.0
 */
export * as ServerConfig from "./ServerConfig.js"
