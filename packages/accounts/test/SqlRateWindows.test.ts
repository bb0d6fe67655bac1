/**
 * The request counters of the rate limits (`RateLimit.RateWindows`) on memory, SQLite and PostgreSQL, and on two
 * instances (two nodes: two connection pools) sharing one PostgreSQL database.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { RateLimit } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as SqlRateWindows from "../src/SqlRateWindows.js"
import { pgAvailable, pgClient, pgNotRunning, pgSchema, runPostgres, sqlite } from "./databases.js"

if (!runPostgres) console.warn(`${pgNotRunning}: its tests are skipped`)

type Windows = RateLimit.RateWindows["Type"]

/** The current window (the stores prune windows that ended long ago). */
const now = Date.now() - (Date.now() % 60_000)

const suite = (name: string, acquire: Effect.Effect<Windows, unknown, Scope.Scope>) =>
  describe(`rate windows on ${name}`, () => {
    it.live("counts each scope and window apart, and peeks without counting", () =>
      Effect.gen(function*() {
        const windows = yield* acquire
        const a = { scope: "key:a", windowStart: now }
        const b = { scope: "account:x", windowStart: now }
        expect(yield* windows.hit([a, b])).toEqual([1, 1])
        expect(yield* windows.hit([a])).toEqual([2])
        expect(yield* windows.peek(a)).toBe(2)
        expect(yield* windows.peek({ scope: "key:none", windowStart: now })).toBe(0)
        expect(yield* windows.hit([{ scope: "key:a", windowStart: now + 60_000 }])).toEqual([1])
      }).pipe(Effect.scoped))

    it.live("concurrent hits get distinct positions: a limit of L admits exactly L", () =>
      Effect.gen(function*() {
        const windows = yield* acquire
        const key = { scope: "key:burst", windowStart: now }
        const positions = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          () => Effect.map(windows.hit([key, { scope: "account:burst", windowStart: now }]), ([n]) => n!),
          { concurrency: "unbounded" }
        )
        expect([...positions].sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
        expect(yield* windows.peek({ scope: "account:burst", windowStart: now })).toBe(200)
      }).pipe(Effect.scoped))
  })

suite("memory", Effect.sync(() => RateLimit.makeMemory()))
suite("sqlite", Effect.flatMap(Layer.build(sqlite()), (context) => Effect.provide(SqlRateWindows.make(), context)))
if (runPostgres) {
  suite(
    "postgres",
    Effect.flatMap(
      pgSchema,
      (schema) =>
        Effect.flatMap(Layer.build(pgClient(schema)), (context) => Effect.provide(SqlRateWindows.make(), context))
    )
  )

  describe("rate windows across nodes", () => {
    it.live("two instances on one PostgreSQL database share every counter", () =>
      Effect.gen(function*() {
        const schema = yield* pgSchema
        // two nodes: two connection pools, two batchers, one database
        const nodeA = yield* Effect.flatMap(Layer.build(pgClient(schema, 4)), (c) =>
          Effect.provide(SqlRateWindows.make(), c))
        const nodeB = yield* Effect.flatMap(Layer.build(pgClient(schema, 4)), (c) =>
          Effect.provide(SqlRateWindows.make(), c))
        const key = { scope: "key:shared", windowStart: now }
        const limit = 150
        const admitted = yield* Effect.forEach(
          Array.from({ length: 400 }, (_, i) => (i % 2 === 0 ? nodeA : nodeB)),
          (node) =>
            Effect.map(node.hit([key]), ([n]) =>
              n! <= limit),
          { concurrency: 64 }
        )
        // exactly `limit` requests pass, whichever node they reached
        assert.strictEqual(admitted.filter(Boolean).length, limit)
        expect(yield* nodeA.peek(key)).toBe(400)
        expect(yield* nodeB.peek(key)).toBe(400)
      }).pipe(Effect.scoped), { timeout: 30_000 })
  })
}

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})
