/**
 * Pieces shared by the HttpApi groups: the `Idempotency-Key` header and the path-id Schema.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { optional, text } from "../Fields.js"

/** Headers of creating POSTs: the optional `Idempotency-Key` (decisions.md §2). */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": optional(text(255, 1).annotations({
    description: "The same key with the same body within 24 h returns the original response"
  }))
})

/** A resource id in a path. Any string is accepted; an unknown or malformed id is answered as not found. */
export const PathId = Schema.Struct({ id: Schema.String })
