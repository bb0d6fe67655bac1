/**
 * The contract's `RateLimit.RateWindows` on SQL: `<prefix>rate_windows (scope, window_start, count)`, created by
 * the accounts migrations. On PostgreSQL every node that shares the database counts in the same rows, so a limit
 * holds across nodes (security.md "Rate limits").
 *
 * Hits are batched per process: a request's hits join the batch being collected while the previous statement runs,
 * and each batch is ONE statement, `INSERT ... VALUES (scope, window, n), ... ON CONFLICT (scope, window_start) DO
 * UPDATE SET count = count + excluded.count RETURNING ...` (rows in a fixed order, so that nodes never deadlock on
 * them). Every hit of a batch gets its own position in the counter (the count before the batch plus its place in
 * the batch), exactly as if the hits had been sent one by one. Windows that ended more than two windows ago are
 * deleted once a minute.
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { RateLimit } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { migrate, type SqlOptions, tables } from "./SqlAccounts.js"

const storeName = "rate windows"

/**
 * Options of the SQL windows.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends SqlOptions {
  /** The most hits one statement carries (default 512). */
  readonly maxBatch?: number
  /** How long ended windows are kept, in ms (default 120,000). */
  readonly keepMs?: number
}

/** A request's hits, waiting for their counts. */
interface Pending {
  readonly keys: ReadonlyArray<RateLimit.WindowKey>
  readonly done: Deferred.Deferred<ReadonlyArray<number>, RateLimit.RateWindowsUnavailable>
}

const nameOf = (key: RateLimit.WindowKey) => `${key.windowStart}\u0000${key.scope}`

/**
 * Builds the windows on the `SqlClient` in context (SQLite or PostgreSQL), after running the accounts migrations;
 * the batching fiber and the pruning run in the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<
  RateLimit.RateWindows["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | Scope.Scope
> =>
  Effect.gen(function*() {
    const prefix = yield* SqlStore.resolvePrefix(storeName, options)
    yield* migrate(prefix)
    const { sql } = yield* SqlStore.storeClient(storeName)
    const table = sql(tables(prefix).rateWindows)
    const maxBatch = Math.max(1, options.maxBatch ?? 512)
    const keep = options.keepMs ?? 120_000
    const queue = yield* Queue.unbounded<Pending>()

    /** One statement for a batch: adds each counter's hits, answers each counter's count after them. */
    const upsert = (added: ReadonlyMap<string, { readonly key: RateLimit.WindowKey; n: number }>) => {
      const entries = [...added.values()].sort((a, b) =>
        a.key.windowStart - b.key.windowStart || (a.key.scope < b.key.scope ? -1 : a.key.scope > b.key.scope ? 1 : 0)
      )
      const values = sql.csv(
        entries.map(({ key, n }) => sql`(${key.scope}, CAST(${key.windowStart} AS BIGINT), CAST(${n} AS BIGINT))`)
      )
      return sql<{ readonly scope: string; readonly window_start: number | string; readonly count: number | string }>`
        INSERT INTO ${table} (scope, window_start, count) VALUES ${values}
        ON CONFLICT (scope, window_start) DO UPDATE SET count = ${table}.count + excluded.count
        RETURNING scope, window_start, count`
    }

    const runBatch = (batch: ReadonlyArray<Pending>) => {
      const added = new Map<string, { readonly key: RateLimit.WindowKey; n: number }>()
      for (const pending of batch) {
        for (const key of pending.keys) {
          const name = nameOf(key)
          const entry = added.get(name)
          if (entry === undefined) added.set(name, { key, n: 1 })
          else entry.n++
        }
      }
      return upsert(added).pipe(
        Effect.flatMap((rows) =>
          Effect.sync(() => {
            // the count before this batch, then each hit's place in it, in the batch's order
            const next = new Map<string, number>()
            for (const row of rows) {
              const name = nameOf({ scope: row.scope, windowStart: Number(row.window_start) })
              next.set(name, Number(row.count) - (added.get(name)?.n ?? 0))
            }
            return batch.map((pending) =>
              Deferred.unsafeDone(
                pending.done,
                Effect.succeed(pending.keys.map((key) => {
                  const name = nameOf(key)
                  const position = (next.get(name) ?? 0) + 1
                  next.set(name, position)
                  return position
                }))
              )
            )
          })
        ),
        Effect.catchAllCause((cause) =>
          Effect.sync(() => {
            const failure = new RateLimit.RateWindowsUnavailable({ cause })
            for (const pending of batch) Deferred.unsafeDone(pending.done, Effect.fail(failure))
          })
        )
      )
    }

    yield* Queue.takeBetween(queue, 1, maxBatch).pipe(
      Effect.flatMap((chunk) => runBatch([...chunk])),
      Effect.forever,
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => Queue.shutdown(queue))

    // the ended windows: one DELETE a minute (every node does it; it is idempotent)
    yield* Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => sql`DELETE FROM ${table} WHERE window_start < ${now - keep}`),
      Effect.catchAllCause((cause) => Effect.logDebug("rate windows: pruning failed", cause)),
      Effect.repeat(Schedule.spaced("1 minute")),
      Effect.interruptible,
      Effect.forkScoped
    )

    const windows: RateLimit.RateWindows["Type"] = {
      shared: true,
      hit: (keys) =>
        keys.length === 0 ? Effect.succeed([]) : Effect.flatMap(
          Deferred.make<ReadonlyArray<number>, RateLimit.RateWindowsUnavailable>(),
          (done) => Effect.zipRight(Queue.offer(queue, { keys, done }), Deferred.await(done))
        ),
      peek: (key) =>
        sql<{ readonly count: number | string }>`SELECT count FROM ${table}
          WHERE scope = ${key.scope} AND window_start = ${key.windowStart}`.pipe(
          Effect.map((rows) => Number(rows[0]?.count ?? 0)),
          Effect.mapError((cause) => new RateLimit.RateWindowsUnavailable({ cause }))
        )
    }
    return windows
  })

/**
 * The SQL windows as a layer (runs the accounts migrations).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<
  RateLimit.RateWindows,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> => Layer.scoped(RateLimit.RateWindows, make(options))
