/**
 * `@mediagate/outbound`: SSRF-safe outbound HTTP for URLs that clients give us (media inputs, webhook targets):
 * every resolved address checked, the connection pinned to the checked address, redirects checked again, size and
 * time caps.
 *
 * @since 0.1.0
 */

/** The DNS-pinned, address-checked HTTP client and its typed error. */
export * as PinnedHttp from "./PinnedHttp.js"
