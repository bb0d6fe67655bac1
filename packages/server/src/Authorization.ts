/**
 * Route permissions (decisions.md §5): which permission each route needs, checked against the current principal.
 *
 * @since 0.1.0
 */
import { ApiKey, type Catalog, Errors, Security } from "@mediagate/contract"
import * as Effect from "effect/Effect"

/**
 * Fails with `KEY_PERMISSION_DENIED` unless the current key grants `permission` (and `provider`, when given).
 *
 * @since 0.1.0
 * @category utils
 */
export const require = (
  permission: ApiKey.PermissionName,
  provider?: string
): Effect.Effect<Security.Principal, Errors.KeyPermissionDenied, Security.CurrentPrincipal> =>
  Effect.flatMap(Security.CurrentPrincipal, (principal) => {
    if (!ApiKey.grants(principal.permissions, permission)) {
      return Effect.fail(new Errors.KeyPermissionDenied({ message: `key lacks permission ${permission}` }))
    }
    if (provider !== undefined && !ApiKey.grants(principal.permissions, permission, provider)) {
      return Effect.fail(new Errors.KeyPermissionDenied({ message: `key is not allowed to use provider ${provider}` }))
    }
    return Effect.succeed(principal)
  })

/**
 * The create permission of a media type.
 *
 * @since 0.1.0
 * @category constructors
 */
export const createPermission = (mediaType: Catalog.MediaType): ApiKey.PermissionName =>
  mediaType === "image" ? "image:create" : "video:create"
