/**
 * ISO 8601 timestamps on the wire.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A timestamp as sent: ISO 8601 in UTC (`2026-11-21T10:00:00.000Z`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Timestamp = Schema.String.annotations({
  title: "Timestamp",
  description: "ISO 8601 date-time",
  format: "date-time",
  jsonSchema: { type: "string", format: "date-time" }
})

const isoPattern = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i

/**
 * An ISO 8601 date or date-time given by a client, decoded to a `Date`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const IsoDate = Schema.String.pipe(
  Schema.filter(
    (s) => (isoPattern.test(s) && !Number.isNaN(Date.parse(s))) || "must be an ISO 8601 date or date-time",
    {
      jsonSchema: { format: "date-time" }
    }
  ),
  Schema.compose(Schema.DateFromString, { strict: false })
).annotations({ title: "IsoDate", description: "ISO 8601 date or date-time" })
