/**
 * Success envelopes: `{ success: true, data }` and, for lists, `{ success: true, data, pagination }`.
 * Handlers return the bare value; the envelope exists only on the wire.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Schema from "effect/Schema"
import * as Errors from "./Errors.js"

/**
 * Wraps a Schema in `{ success: true, data: ... }` on the wire; the decoded value is the data itself.
 *
 * @since 0.1.0
 * @category schemas
 */
export const success = <A, I, R>(data: Schema.Schema<A, I, R>, identifier?: string) =>
  Schema.transform(
    Schema.Struct({ success: Schema.Literal(true), data }),
    Schema.typeSchema(data),
    {
      strict: true,
      decode: (envelope) => envelope.data,
      encode: (value) => ({ success: true as const, data: value })
    }
  ).annotations(identifier === undefined ? {} : { identifier })

/**
 * The pagination object of list responses.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Pagination = Schema.Struct({
  cursor: Schema.NullOr(Schema.String).annotations({
    description: "Opaque cursor of the next page; null when there is none"
  }),
  hasMore: Schema.Boolean,
  total: Schema.Number.annotations({ description: "Number of items matching the filters" })
}).annotations({ identifier: "Pagination" })
/**
 * The pagination object of list responses.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Pagination = typeof Pagination.Type

/**
 * A page of items with its pagination, as handlers return it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: Pagination
}

/**
 * Decodes the cursor of a list ordered by id, newest first (tasks, accounts, deliveries): the last id of the previous
 * page, base64url-encoded, an id of `prefix` and a ULID. Undefined without a cursor; `VALIDATION_ERROR` for anything
 * that is not such a cursor.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeIdCursor = (
  prefix: string,
  cursor: string | undefined
): Either.Either<string | undefined, Errors.ValidationError> => {
  if (cursor === undefined) return Either.right(undefined)
  const decoded = Encoding.decodeBase64UrlString(cursor)
  return Either.isRight(decoded) && decoded.right.startsWith(prefix) &&
      /^[0-9A-HJKMNP-TV-Z]{26}$/.test(decoded.right.slice(prefix.length))
    ? Either.right(decoded.right)
    : Either.left(new Errors.ValidationError({ message: "cursor: is not a cursor of this list" }))
}

/**
 * A page of a list ordered by id (items found newest first, whether more follow, the total) with `data` shown for
 * its items; the cursor (see {@link decodeIdCursor}) is the last item's id when more follow.
 *
 * @since 0.1.0
 * @category utils
 */
export const idPage = <A>(
  found: { readonly items: ReadonlyArray<{ readonly id: string }>; readonly hasMore: boolean; readonly total: number },
  data: ReadonlyArray<A>
): Page<A> => {
  const last = found.items[found.items.length - 1]
  const cursor = found.hasMore && last !== undefined ? Encoding.encodeBase64Url(last.id) : null
  return { data, pagination: { cursor, hasMore: found.hasMore, total: found.total } }
}

/**
 * Wraps an item Schema in `{ success: true, data: [...], pagination }` on the wire.
 *
 * @since 0.1.0
 * @category schemas
 */
export const page = <A, I, R>(item: Schema.Schema<A, I, R>, identifier?: string) => {
  const data = Schema.Array(item)
  return Schema.transform(
    Schema.Struct({ success: Schema.Literal(true), data, pagination: Pagination }),
    Schema.Struct({ data: Schema.typeSchema(data), pagination: Pagination }),
    {
      strict: true,
      decode: (envelope) => ({ data: envelope.data, pagination: envelope.pagination }),
      encode: (value) => ({ success: true as const, data: value.data, pagination: value.pagination })
    }
  ).annotations(identifier === undefined ? {} : { identifier })
}

/**
 * The answer of every DELETE: `{ id, deleted: true }`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Deleted = Schema.Struct({
  id: Schema.String,
  deleted: Schema.Literal(true)
}).annotations({ identifier: "Deleted" })
/**
 * The answer of every DELETE.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Deleted = typeof Deleted.Type
