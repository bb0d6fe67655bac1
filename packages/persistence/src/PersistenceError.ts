/**
 * Storage failures. They never reach a client as such: the HTTP edge answers 503 `SERVICE_UNAVAILABLE`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A storage operation failed (connection lost, constraint broken by a bug, a row that does not decode, ...). */
export class PersistenceError extends Schema.TaggedError<PersistenceError>()("PersistenceError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}
