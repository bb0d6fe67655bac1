/**
 * `@mediagate/dashboard`: the web console for accounts and operators, built into static assets at build time and
 * served at `/dashboard` (docs/dashboard.md).
 *
 * @since 0.1.0
 */

/** Serving the built dashboard as an `HttpApp`. */
export * as Dashboard from "./Dashboard.js"
