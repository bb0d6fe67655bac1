/**
 * Pieces shared by the HttpApi groups: API-key authentication, the `Idempotency-Key` header and the path-id Schema.
 *
 * @since 0.1.0
 */
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { KeyPermissionDenied, ServiceUnavailable } from "../Errors.js"
import { optional, text } from "../Fields.js"
import { Authentication } from "../Security.js"

/**
 * Headers of creating POSTs: the optional `Idempotency-Key` (decisions.md §2).
 *
 * @since 0.1.0
 * @category schemas
 */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": optional(
    text(255, 1).annotations({
      description: "The same key with the same body within 24 h returns the original response"
    })
  )
})

/**
 * A resource id in a path. Any string is accepted; an unknown or malformed id is answered as not found.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PathId = Schema.Struct({ id: Schema.String })

/**
 * Puts an `/api/v1` group behind API-key authentication: every route may refuse the key or lack storage.
 *
 * @since 0.1.0
 * @category api
 */
export const authenticated = <
  Id extends string,
  E extends HttpApiEndpoint.HttpApiEndpoint.Any,
  Err,
  R,
  TL extends boolean
>(
  group: HttpApiGroup.HttpApiGroup<Id, E, Err, R, TL>
) => group.addError(KeyPermissionDenied.wire).addError(ServiceUnavailable.wire).middleware(Authentication)
