/**
 * Rows decoded with Schema, for every SQL store of Mediagate. A store describes each table's row as a
 * `Schema.Struct` of its columns ({@link column} maps a column to a field, {@link literal} an enum column,
 * `Schema.parseJson` a JSON column, {@link Number} a numeric one) and reads rows through a {@link decoder}, which
 * also encodes a record into the row to insert.
 *
 * The drivers answer numbers as numbers, bigints or strings (PostgreSQL `BIGINT` and `COUNT(*)` come back as
 * strings): {@link Number} takes all three. A row that does not decode fails with a {@link RowError} naming the
 * table and the column, never with a throw or a defect; `SqlStore.persistence` turns it into a `PersistenceError`
 * (`task storage: get failed: mediagate_tasks.status: Expected "pending" | ..., actual "bogus"`).
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * A stored row that does not decode (or a record that does not encode): which table, which column, and why.
 *
 * @since 0.1.0
 * @category errors
 */
export class RowError extends Schema.TaggedError<RowError>()("RowError", {
  table: Schema.String,
  column: Schema.String,
  /** `<table>.<column>: <what is wrong>`. */
  message: Schema.String
}) {}

const show = (u: unknown): string => (typeof u === "string" ? JSON.stringify(u) : String(u))

/**
 * The value {@link Number} decodes a column to: a finite number, or a string or bigint holding one (a blank string
 * is none); `undefined` for anything else. For the fast paths of decoders (`withFastPath`).
 *
 * @since 0.1.0
 * @category decoding
 */
export const numberOf = (u: unknown): number | undefined => {
  if (typeof u === "number") return globalThis.Number.isFinite(u) ? u : undefined
  if (typeof u !== "string" && typeof u !== "bigint") return undefined
  const n = typeof u === "string" && u.trim() === "" ? NaN : globalThis.Number(u)
  return globalThis.Number.isFinite(n) ? n : undefined
}

/**
 * A numeric column: a finite number from a number, a bigint or a numeric string (how PostgreSQL answers `BIGINT`
 * and `COUNT(*)`). Encodes to a number.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Number: Schema.Schema<number, number | string | bigint> = Schema.transformOrFail(
  // a guard rather than a union of three Schemas: this column type is decoded a dozen times per row
  Schema.declare(
    (u): u is number | string | bigint => typeof u === "number" || typeof u === "string" || typeof u === "bigint",
    {
      identifier: "number | string | bigint"
    }
  ),
  Schema.Number,
  {
    strict: true,
    decode: (value, _, ast) => {
      const n = numberOf(value)
      return n !== undefined
        ? ParseResult.succeed(n)
        : ParseResult.fail(new ParseResult.Type(ast, value, `Expected a finite number, actual ${show(value)}`))
    },
    encode: ParseResult.succeed
  }
).annotations({ identifier: "SqlNumber" })

/**
 * An integer column holding a flag: 0 is false, anything else true; encodes to 0 or 1.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Flag: Schema.Schema<boolean, number | string | bigint> = Schema.transform(Number, Schema.Boolean, {
  strict: true,
  decode: (n) => n !== 0,
  encode: (b) => (b ? 1 : 0)
})

/**
 * A text column holding one of `values`; a failure reads `Expected "a" | "b", actual "c"`. Pass the contract's
 * lists (`Task.taskStatuses`, `Catalog.taskFamilies`, ...) so that the column follows them.
 *
 * @since 0.1.0
 * @category schemas
 */
export const literal = <const L extends ReadonlyArray<string>>(...values: L): Schema.Schema<L[number]> =>
  Schema.Literal(...values).annotations({
    message: (issue) => ({
      message: `Expected ${values.map((v) => JSON.stringify(v)).join(" | ")}, actual ${show(issue.actual)}`,
      override: true
    })
  })

/**
 * A field read from the column `name` (snake case in SQL, camel case in the record).
 *
 * @since 0.1.0
 * @category schemas
 */
export const column = <const K extends string, A, I, R>(name: K, schema: Schema.Schema<A, I, R>) =>
  Schema.propertySignature(schema).pipe(Schema.fromKey(name))

/**
 * The {@link RowError} of a parse failure of a row of `table` (the first issue: its column and message).
 *
 * @since 0.1.0
 * @category errors
 */
export const rowError = (table: string, error: ParseResult.ParseError): RowError => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  const path = (issue?.path ?? []).filter((key, i) => !(i === 0 && typeof key === "number"))
  const column = path.length === 0 ? "(row)" : String(path[0])
  const inner = path.slice(1).map((key) => typeof key === "number" ? `[${key}]` : `.${String(key)}`).join("")
  const what = issue?.message ?? error.message
  return new RowError({ table, column, message: `${table}.${column}${inner}: ${what}` })
}

/**
 * Reads (and writes) the rows of one table with a Schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decoder<A, I> {
  /** Every row decoded, in order. */
  readonly all: (rows: ReadonlyArray<unknown>) => Either.Either<Array<A>, RowError>
  /** The first row decoded, if there is one. */
  readonly first: (rows: ReadonlyArray<unknown>) => Either.Either<Option.Option<A>, RowError>
  /** The first row decoded; no row at all is a {@link RowError} (for statements that always answer one). */
  readonly single: (rows: ReadonlyArray<unknown>) => Either.Either<A, RowError>
  /** A record as the row to write. */
  readonly encode: (value: A) => Either.Either<I, RowError>
}

/**
 * The {@link Decoder} of `table`'s rows described by `schema`. Decoding is synchronous (the Schema's parser is
 * compiled once, here) and answers an `Either`, which is an `Effect`: reading a row costs no fiber work beyond the
 * parse itself (rows are decoded on every request's hot path).
 *
 * @since 0.1.0
 * @category constructors
 */
export const decoder = <A, I>(table: string, schema: Schema.Schema<A, I>): Decoder<A, I> => {
  const decodeRow = Schema.decodeUnknownEither(schema)
  const encodeRow = Schema.encodeEither(schema)
  const one = (row: unknown): Either.Either<A, RowError> =>
    Either.mapLeft(decodeRow(row), (error) => rowError(table, error))
  const all = (rows: ReadonlyArray<unknown>): Either.Either<Array<A>, RowError> => {
    const decoded: Array<A> = []
    for (const row of rows) {
      const result = decodeRow(row)
      if (Either.isLeft(result)) return Either.left(rowError(table, result.left))
      decoded.push(result.right)
    }
    return Either.right(decoded)
  }
  const none: Either.Either<Option.Option<A>, RowError> = Either.right(Option.none())
  const first = (rows: ReadonlyArray<unknown>): Either.Either<Option.Option<A>, RowError> =>
    rows.length === 0 ? none : Either.map(one(rows[0]), Option.some)
  return {
    all,
    first,
    single: (rows) =>
      rows.length === 0
        ? Either.left(new RowError({ table, column: "(row)", message: `${table}: no row` }))
        : one(rows[0]),
    encode: (value) => Either.mapLeft(encodeRow(value), (error) => rowError(table, error))
  }
}

/**
 * `decoder` with a fast path for a row decoded on a hot path, where the Schema's parser allocates more than the
 * rest of the work: `fast` answers the value of a row it takes (columns already of the decoded types, e.g. plain
 * finite numbers, nothing to convert) and `undefined` for any other, which the Schema then decodes — and converts,
 * or reports — as it always does. `fast` must answer what the Schema answers for every row it takes; the tests of
 * its caller hold it so.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withFastPath = <A, I>(decoder: Decoder<A, I>, fast: (row: unknown) => A | undefined): Decoder<A, I> => ({
  ...decoder,
  all: (rows) => {
    const values: Array<A> = []
    for (const row of rows) {
      const value = fast(row)
      if (value === undefined) return decoder.all(rows)
      values.push(value)
    }
    return Either.right(values)
  },
  first: (rows) => {
    const value = rows.length === 0 ? undefined : fast(rows[0])
    return value === undefined ? decoder.first(rows) : Either.right(Option.some(value))
  },
  single: (rows) => {
    const value = rows.length === 0 ? undefined : fast(rows[0])
    return value === undefined ? decoder.single(rows) : Either.right(value)
  }
})

const isRow = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null

/** Whether two rows hold the same columns with the same (primitive) values. */
const sameRow = (a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean => {
  let columns = 0
  for (const name in a) {
    if (a[name] !== b[name]) return false
    columns++
  }
  for (const _ in b) columns--
  return columns === 0
}

/**
 * `decoder` remembering, for up to `capacity` keys (the values of the column `key`; the least recently read key
 * is forgotten first), the row it last decoded through `first` and the answer: a row equal to it column by column
 * answers the same value without being decoded again. Decoding is a pure function of the row, so nothing changes
 * but the cost: a task polled while it waits is decoded once per change, not once per poll. Rows are compared with
 * `===`, column by column: the drivers answer primitives for Mediagate's columns (JSON is stored as text), and a
 * column holding an object would only never match.
 *
 * @since 0.1.0
 * @category combinators
 */
export const remembering = <A, I>(decoder: Decoder<A, I>, key: string, capacity: number): Decoder<A, I> => {
  const remembered = new Map<unknown, {
    readonly row: Readonly<Record<string, unknown>>
    readonly answer: Either.Either<Option.Option<A>, RowError>
  }>()
  const first = (rows: ReadonlyArray<unknown>): Either.Either<Option.Option<A>, RowError> => {
    const fields = rows[0]
    if (!isRow(fields)) return decoder.first(rows)
    const id = fields[key]
    const known = remembered.get(id)
    if (known !== undefined) {
      remembered.delete(id)
      if (sameRow(known.row, fields)) {
        remembered.set(id, known)
        return known.answer
      }
    }
    const answer = decoder.first(rows)
    if (Either.isRight(answer)) {
      if (remembered.size >= capacity) remembered.delete(remembered.keys().next().value)
      remembered.set(id, { row: fields, answer })
    }
    return answer
  }
  return { ...decoder, first }
}
