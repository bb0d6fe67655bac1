/**
 * Authentication as HttpApi middleware tags: API keys on `/api/v1`, the admin token on `/admin/v1`.
 * The server package implements them; the contract only declares what they provide and how they fail.
 *
 * @since 0.1.0
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import type { Environment, Permissions } from "./ApiKey.js"
import {
  AuthInvalidToken,
  AuthRequired,
  AuthTokenExpired,
  KeyPermissionDenied,
  KeyRevoked,
  NotFound,
  RateLimited,
  ServiceUnavailable
} from "./Errors.js"

/**
 * The authenticated caller of an `/api/v1` request: the key and the account it belongs to.
 *
 * @since 0.1.0
 * @category models
 */
export interface Principal {
  readonly accountId: string
  readonly keyId: string
  readonly environment: Environment
  readonly permissions: Permissions
  /** The key's spend limit in integer micro-dollars, or null when unset. */
  readonly spendLimitMicros: number | null
  /** What the key has spent so far, in integer micro-dollars. */
  readonly spentMicros: number
  readonly expiresAt: Date | null
  /** The client address the request was judged by (after trusted proxies). */
  readonly clientAddress: string | undefined
  /** The key's own rate limits (absent or null: the server's configured defaults). */
  readonly rateLimit?: {
    readonly requestsPerMinute: number | null
    readonly maxInFlightTasks: number | null
  } | undefined
}

/**
 * The authenticated caller of the current request.
 *
 * @since 0.1.0
 * @category services
 */
export class CurrentPrincipal
  extends Context.Tag("@mediagate/contract/CurrentPrincipal")<CurrentPrincipal, Principal>()
{}

/**
 * Bearer API-key authentication of every `/api/v1` route (decisions.md §5 order of checks).
 *
 * @since 0.1.0
 * @category services
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("@mediagate/contract/Authentication", {
  failure: Schema.Union(
    AuthRequired.wire,
    AuthInvalidToken.wire,
    AuthTokenExpired.wire,
    KeyRevoked.wire,
    KeyPermissionDenied.wire,
    RateLimited.wire,
    ServiceUnavailable.wire
  ),
  provides: CurrentPrincipal,
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "API key: mg_live_<32> (charged) or mg_test_<32> (sandbox)")
    )
  }
}) {}

/**
 * Bearer admin-token authentication of `/admin/v1` (enabled only when an admin token is configured).
 *
 * @since 0.1.0
 * @category services
 */
export class AdminAuthentication
  extends HttpApiMiddleware.Tag<AdminAuthentication>()("@mediagate/contract/AdminAuthentication", {
    failure: Schema.Union(AuthRequired.wire, AuthInvalidToken.wire, RateLimited.wire, NotFound.wire),
    security: {
      adminToken: HttpApiSecurity.bearer.pipe(
        HttpApiSecurity.annotate(OpenApi.Description, "The operator's MEDIAGATE_ADMIN_TOKEN")
      )
    }
  })
{}
