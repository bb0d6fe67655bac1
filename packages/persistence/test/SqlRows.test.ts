/**
 * Rows decoded with Schema: numbers in every form the drivers answer, flags, enum columns, JSON columns, and the
 * RowError of a row that does not decode (its table, its column, what is wrong), on values and on real SQLite and
 * PostgreSQL rows.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlRows from "../src/SqlRows.js"
import { postgres, runPostgres, sqlite } from "./databases.js"

const decodeNumber = Schema.decodeUnknownEither(SqlRows.Number)

const Row = Schema.Struct({
  id: Schema.String,
  accountId: SqlRows.column("account_id", Schema.String),
  status: SqlRows.literal("pending", "done"),
  amount: SqlRows.Number,
  enabled: SqlRows.Flag,
  tags: Schema.parseJson(Schema.Array(Schema.Struct({ name: Schema.String }))),
  note: Schema.NullOr(Schema.String)
})

const rows = SqlRows.decoder("acme_items", Row)

const good = {
  id: "i1",
  account_id: "a1",
  status: "done",
  amount: "12",
  enabled: 1,
  tags: `[{"name":"x"}]`,
  note: null
}
const { note: _, ...noNote } = good

describe("SqlRows.Number", () => {
  it("reads numbers, bigints and numeric strings (PostgreSQL BIGINT and COUNT)", () => {
    expect(decodeNumber(42)).toEqual(Either.right(42))
    expect(decodeNumber(-1.5)).toEqual(Either.right(-1.5))
    expect(decodeNumber(9007199254740991n)).toEqual(Either.right(9007199254740991))
    expect(decodeNumber("1732190400000")).toEqual(Either.right(1732190400000))
    expect(decodeNumber(" 7 ")).toEqual(Either.right(7))
  })

  it("refuses what is not a finite number", () => {
    for (const bad of ["", " ", "abc", "NaN", "Infinity", Number.NaN, Number.POSITIVE_INFINITY, null, true, {}]) {
      assert.isTrue(Either.isLeft(decodeNumber(bad)), String(bad))
    }
  })

  it("encodes to a number", () => {
    expect(Schema.encodeSync(SqlRows.Number)(5)).toBe(5)
  })
})

describe("SqlRows.Flag and SqlRows.literal", () => {
  it("a flag is 0 or not 0, and encodes to 0 or 1", () => {
    const flag = Schema.decodeUnknownSync(SqlRows.Flag)
    expect([flag(0), flag(1), flag("1"), flag(0n)]).toEqual([false, true, true, false])
    expect([Schema.encodeSync(SqlRows.Flag)(true), Schema.encodeSync(SqlRows.Flag)(false)]).toEqual([1, 0])
  })

  it("an enum column names every value it accepts", () => {
    const status = Schema.decodeUnknownEither(SqlRows.literal("pending", "done"))
    expect(status("done")).toEqual(Either.right("done"))
    const error = Either.getLeft(status("bogus"))
    assert.isTrue(Option.isSome(error))
    expect(Option.getOrThrow(error).message).toBe(`Expected "pending" | "done", actual "bogus"`)
  })
})

describe("SqlRows.withFastPath", () => {
  const Counted = Schema.Struct({ n: SqlRows.Number })
  const plain = SqlRows.decoder("counts", Counted)
  const seen: Array<unknown> = []
  // takes rows whose n is a plain number; anything else is the Schema's
  const fast = SqlRows.withFastPath(plain, (row) => {
    seen.push(row)
    const n = (row as { n?: unknown }).n
    return typeof n === "number" ? { n } : undefined
  })

  it("answers the fast path's values for the rows it takes, the Schema's otherwise", () => {
    expect(fast.all([{ n: 1 }, { n: 2 }])).toEqual(Either.right([{ n: 1 }, { n: 2 }]))
    expect(fast.first([{ n: 3 }])).toEqual(Either.right(Option.some({ n: 3 })))
    expect(fast.single([{ n: 4 }])).toEqual(Either.right({ n: 4 }))
    // converted by the Schema (a numeric string, as PostgreSQL answers BIGINT)
    expect(fast.all([{ n: 1 }, { n: "5" }])).toEqual(Either.right([{ n: 1 }, { n: 5 }]))
    expect(fast.first([{ n: "6" }])).toEqual(Either.right(Option.some({ n: 6 })))
    // refused by the Schema, with its RowError
    const refusals: ReadonlyArray<Either.Either<unknown, SqlRows.RowError>> = [
      fast.all([{ n: "x" }]),
      fast.first([{ n: "x" }]),
      fast.single([{ n: "x" }])
    ]
    for (const answer of refusals) {
      assert.isTrue(Either.isLeft(answer))
      expect(Either.isLeft(answer) && answer.left.message).toContain("counts.n")
    }
    // no row: as the Schema's decoder answers
    expect(fast.first([])).toEqual(Either.right(Option.none()))
    assert.isTrue(Either.isLeft(fast.single([])))
    assert.isTrue(seen.length > 0)
  })
})

describe("SqlRows.decoder", () => {
  it.effect("decodes rows into records (renamed columns, JSON, flags, nulls)", () =>
    Effect.gen(function*() {
      const decoded = yield* rows.all([good, { ...good, id: "i2", enabled: 0, note: "n" }])
      expect(decoded).toEqual([
        { id: "i1", accountId: "a1", status: "done", amount: 12, enabled: true, tags: [{ name: "x" }], note: null },
        { id: "i2", accountId: "a1", status: "done", amount: 12, enabled: false, tags: [{ name: "x" }], note: "n" }
      ])
      expect(yield* rows.first([])).toEqual(Option.none())
      expect(Option.map(yield* rows.first([good]), (row) => row.id)).toEqual(Option.some("i1"))
      expect((yield* rows.single([good])).amount).toBe(12)
    }))

  it.effect("a row that does not decode is a RowError naming the table and the column", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [{ ...good, status: "bogus" }, "status", `acme_items.status: Expected "pending" | "done", actual "bogus"`],
        [{ ...good, account_id: 5 }, "account_id", "acme_items.account_id: Expected string, actual 5"],
        [{ ...good, amount: "twelve" }, "amount", `acme_items.amount: Expected a finite number, actual "twelve"`],
        [{ ...good, tags: `[{"name":3}]` }, "tags", "acme_items.tags[0].name: Expected string, actual 3"],
        [noNote, "note", "acme_items.note: is missing"]
      ]
      for (const [row, column, message] of cases) {
        // the second row is the bad one: the error still names its column, not its position
        const error = yield* Effect.flip(rows.all([good, row]))
        assert.instanceOf(error, SqlRows.RowError)
        expect({ table: error.table, column: error.column, message: error.message }).toEqual({
          table: "acme_items",
          column,
          message
        })
      }
      const json = yield* Effect.flip(rows.first([{ ...good, tags: "[oops" }]))
      expect(json).toMatchObject({ _tag: "RowError", table: "acme_items", column: "tags" })
      expect(json.message).toMatch(/^acme_items\.tags: /)
      const missing = yield* Effect.flip(rows.single([]))
      expect(missing).toMatchObject({ _tag: "RowError", table: "acme_items", column: "(row)" })
      const notARow = yield* Effect.flip(rows.all(["text"]))
      expect(notARow).toMatchObject({ table: "acme_items", column: "(row)" })
    }))

  it.effect("encodes a record into the row to write", () =>
    Effect.gen(function*() {
      const record = yield* rows.single([good])
      expect(yield* rows.encode(record)).toEqual({ ...good, amount: 12, tags: `[{"name":"x"}]` })
    }))
})

describe("SqlRows.remembering", () => {
  /** A decoder counting the rows it decodes through `first`. */
  const counting = () => {
    let decoded = 0
    const inner = SqlRows.decoder("acme_items", Row)
    const first: typeof inner.first = (found) => {
      decoded++
      return inner.first(found)
    }
    return { decoder: { ...inner, first }, decoded: () => decoded }
  }

  it.effect("a row read again unchanged answers the value decoded before, without decoding it", () =>
    Effect.gen(function*() {
      const { decoded, decoder } = counting()
      const remembering = SqlRows.remembering(decoder, "id", 8)
      const a = Option.getOrThrow(yield* remembering.first([good]))
      // an equal row that is another object (as a driver answers each read)
      const b = Option.getOrThrow(yield* remembering.first([{ ...good }]))
      expect(b).toBe(a)
      expect(decoded()).toBe(1)
      expect(yield* remembering.first([])).toEqual(Option.none())
    }))

  it.effect("any changed, added or missing column is decoded anew", () =>
    Effect.gen(function*() {
      const { decoded, decoder } = counting()
      const remembering = SqlRows.remembering(decoder, "id", 8)
      yield* remembering.first([good])
      const changed = Option.getOrThrow(yield* remembering.first([{ ...good, status: "pending" }]))
      expect(changed.status).toBe("pending")
      const amount = Option.getOrThrow(yield* remembering.first([{ ...good, status: "pending", amount: 13 }]))
      expect(amount.amount).toBe(13)
      const added = yield* remembering.first([{ ...good, status: "pending", amount: 13, extra: 1 }])
      expect(Option.isSome(added)).toBe(true)
      const missing = yield* Effect.flip(remembering.first([noNote]))
      expect(missing).toMatchObject({ _tag: "RowError", column: "note" })
      expect(decoded()).toBe(5)
    }))

  it.effect("a row that does not decode is never remembered: it fails every time", () =>
    Effect.gen(function*() {
      const { decoded, decoder } = counting()
      const remembering = SqlRows.remembering(decoder, "id", 8)
      const bad = { ...good, status: "bogus" }
      for (let i = 0; i < 2; i++) {
        expect(yield* Effect.flip(remembering.first([bad]))).toMatchObject({ _tag: "RowError", column: "status" })
      }
      expect(decoded()).toBe(2)
    }))

  it.effect("remembers up to its capacity, forgetting the least recently read key first", () =>
    Effect.gen(function*() {
      const { decoded, decoder } = counting()
      const remembering = SqlRows.remembering(decoder, "id", 2)
      const row = (id: string) => ({ ...good, id })
      yield* remembering.first([row("i1")])
      yield* remembering.first([row("i2")])
      yield* remembering.first([row("i1")]) // i1 read last: i2 is the least recent
      yield* remembering.first([row("i3")]) // forgets i2
      expect(decoded()).toBe(3)
      yield* remembering.first([row("i1")])
      yield* remembering.first([row("i3")])
      expect(decoded()).toBe(3)
      yield* remembering.first([row("i2")])
      expect(decoded()).toBe(4)
    }))
})

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlRows on ${name}`, () => {
    it.effect("decodes what the driver answers: BIGINT, COUNT(*), SUM and JSON text", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const big = sql.onDialectOrElse({ pg: () => "BIGINT", orElse: () => "INTEGER" })
        yield* sql.unsafe(`CREATE TABLE acme_items (id TEXT PRIMARY KEY, amount ${big} NOT NULL, tags TEXT NOT NULL)`)
        yield* sql`INSERT INTO acme_items (id, amount, tags) VALUES ('a', 1732190400000, '["x"]'), ('b', 2, '[]')`
        const items = SqlRows.decoder(
          "acme_items",
          Schema.Struct({
            id: Schema.String,
            amount: SqlRows.Number,
            tags: Schema.parseJson(Schema.Array(Schema.String))
          })
        )
        expect(yield* Effect.flatMap(sql`SELECT * FROM acme_items ORDER BY id`, items.all)).toEqual([
          { id: "a", amount: 1732190400000, tags: ["x"] },
          { id: "b", amount: 2, tags: [] }
        ])
        const totals = SqlRows.decoder("acme_items", Schema.Struct({ n: SqlRows.Number, total: SqlRows.Number }))
        expect(yield* Effect.flatMap(sql`SELECT COUNT(*) AS n, SUM(amount) AS total FROM acme_items`, totals.single))
          .toEqual({ n: 2, total: 1732190400002 })
        yield* sql`UPDATE acme_items SET tags = 'not json' WHERE id = 'b'`
        const error = yield* Effect.flip(Effect.flatMap(sql`SELECT * FROM acme_items ORDER BY id`, items.all))
        expect(error).toMatchObject({ _tag: "RowError", table: "acme_items", column: "tags" })
      }).pipe(Effect.provide(database()), Effect.scoped))
  })
}
