/**
 * Storage failures. They never reach a client as such: the HTTP edge answers 503 `SERVICE_UNAVAILABLE`.
 *
 * @since 0.1.0
 */
import { Errors } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * A storage operation failed (connection lost, constraint broken by a bug, a row that does not decode, ...).
 *
 * @since 0.1.0
 * @category errors
 */
export class PersistenceError extends Schema.TaggedError<PersistenceError>()("PersistenceError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/**
 * A storage failure as a client sees it: logged as an error (`label`, the cause), answered `SERVICE_UNAVAILABLE`.
 *
 * @since 0.1.0
 * @category errors
 */
export const toUnavailable =
  (label: string) => (error: PersistenceError): Effect.Effect<never, Errors.ServiceUnavailable> =>
    Effect.zipRight(
      Effect.logError(label, error),
      Effect.fail(new Errors.ServiceUnavailable({ message: "storage is unavailable, try again" }))
    )
