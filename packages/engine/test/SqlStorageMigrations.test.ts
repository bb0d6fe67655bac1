/**
 * The task storage's migrations on every database: run once and reused, the counts migration's backfill, and the
 * triggers that keep the totals exact under hand-written SQL.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { Task } from "@mediagate/contract"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { layerUnmetered } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { fromNew, type TaskRecord } from "../src/TaskRecord.js"
import { type ListQuery, TaskStorage } from "../src/TaskStorage.js"
import { newTask } from "./support.js"
import { databases, migrationIds, storageOn } from "./supportSql.js"

for (const [name, database] of databases) {
  describe(`SqlTaskStorage on ${name}`, () => {
    const withStorage = storageOn(database)

    it.live("migrations run once; a second storage on the same database reuses them", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const first = yield* TaskStorage
        const task = newTask({ createdAt: yield* first.now })
        yield* first.accept({ task, charge: undefined, idempotency: undefined })
        const second = yield* Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(layerUnmetered))).pipe(
          Effect.map(Context.get(TaskStorage))
        )
        assert.isTrue(Option.isSome(yield* second.getById(task.id)))
        const applied = yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${
          sql(SqlTaskStorage.migrationsTable())
        }`
        expect(applied.map((r) => Number(r.migration_id))).toEqual(yield* migrationIds)
      }).pipe(Effect.provide(withStorage()), Effect.scoped))

    it.live("tasks written before the counts migration are counted by it (backfill); totals stay exact after", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tasks = SqlTaskStorage.tables().tasks
        // the schema before the counts: the engine's first three migrations
        yield* Migrator.make({})({
          loader: Effect.map(SqlTaskStorage.migrations(), (all) => all.filter(([id]) => id <= 3)),
          table: SqlTaskStorage.migrationsTable()
        })
        const at = Date.UTC(2026, 10, 21, 12)
        const statuses = [
          "succeeded",
          "succeeded",
          "failed",
          "pending",
          "queued",
          "running",
          "cancelled",
          "expired"
        ] as const
        const records: Array<TaskRecord> = statuses.flatMap((status, i) =>
          ["acct_a", "acct_b"].slice(0, i % 3 === 0 ? 2 : 1).map((accountId) => ({
            ...fromNew(newTask({
              createdAt: at + i,
              accountId,
              provider: i % 2 === 0 ? "vendor3" : "vendor7",
              model: i % 4 === 0 ? "vendor3-3_fast" : "vendor3-3",
              environment: i % 3 === 1 ? "test" : "live"
            })),
            status
          }))
        )
        const encode = SqlRows.decoder(tasks, SqlTaskStorage.TaskRow).encode
        for (const record of records) {
          // rows of that schema: without the columns of later migrations (trace context, channel, node, ...)
          const later = new Set([
            "channel_id",
            "trace_context",
            "upstream_seconds",
            "upstream_cost_micros",
            "node_id",
            "changed_at"
          ])
          const row = Object.fromEntries(Object.entries(yield* encode(record)).filter(([column]) => !later.has(column)))
          yield* sql`INSERT INTO ${sql(tasks)} ${sql.insert(row)}`
        }
        // the storage runs the counts migration
        const storage = yield* Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(layerUnmetered))).pipe(
          Effect.map(Context.get(TaskStorage))
        )
        const applied = yield* sql<{ migration_id: number }>`SELECT migration_id FROM ${
          sql(SqlTaskStorage.migrationsTable())
        }`
        expect(applied.map((r) => Number(r.migration_id))).toEqual(yield* migrationIds)
        const expectTotals = Effect.gen(function*() {
          const stored = (yield* Effect.forEach(records, (r) => storage.getById(r.id))).flatMap(Option.toArray)
          for (const accountId of ["acct_a", "acct_b", "acct_c"]) {
            const mine = stored.filter((t) => t.accountId === accountId)
            const queries: Array<readonly [ListQuery, (t: TaskRecord) => boolean]> = [
              [{ limit: 2 }, () => true],
              ...Task.taskStatuses.map((status) =>
                [{ limit: 2, status }, (t: TaskRecord) => t.status === status] as const
              ),
              [{ limit: 2, provider: "vendor7" }, (t) => t.provider === "vendor7"],
              [{ limit: 2, model: "vendor3-3_fast" }, (t) => t.model === "vendor3-3_fast"],
              [
                { limit: 2, status: "succeeded", provider: "vendor3" },
                (t) => t.status === "succeeded" && t.provider === "vendor3"
              ],
              // per environment (migration 0009 counts them apart)
              ...(["live", "test"] as const).flatMap((environment) => [
                [{ limit: 2, environment }, (t: TaskRecord) => t.environment === environment] as const,
                [
                  { limit: 2, environment, provider: "vendor7" },
                  (t: TaskRecord) => t.environment === environment && t.provider === "vendor7"
                ] as const,
                [
                  { limit: 2, environment, status: "succeeded" },
                  (t: TaskRecord) => t.environment === environment && t.status === "succeeded"
                ] as const
              ])
            ]
            for (const [query, matches] of queries) {
              expect((yield* storage.list(accountId, query)).total, `${accountId} ${JSON.stringify(query)}`).toBe(
                mine.filter(matches).length
              )
            }
          }
        })
        yield* expectTotals
        // the tasks written before the search's migration are found by it (every prompt is "a cat")
        for (const accountId of ["acct_a", "acct_b"]) {
          expect((yield* storage.list(accountId, { limit: 100, words: ["cat"] })).total).toBe(
            records.filter((r) => r.accountId === accountId).length
          )
        }
        // later writes keep them exact
        const [claimed] = yield* storage.claim("w1", 1, 60_000)
        assert.isTrue(
          Option.isSome(
            yield* storage.finish(claimed!.id, claimed!.fence, { _tag: "Failed", error: { code: "X", message: "x" } })
          )
        )
        // tasks written before the changes migration have no change time until they change: of the claimed task's
        // account and environment, only it is an account's change
        const changesOf = (task: TaskRecord) =>
          Effect.map(
            storage.changes(task.accountId, { environment: task.environment, since: 0, limit: 100 }),
            (page) => page.items.map((t) => t.id)
          )
        expect(yield* changesOf(claimed!)).toEqual([claimed!.id])
        const added = newTask({ createdAt: yield* storage.now, accountId: "acct_c" })
        yield* storage.accept({ task: added, charge: undefined, idempotency: undefined })
        records.push(fromNew(added))
        expect(yield* changesOf(fromNew(added))).toEqual([added.id])
        yield* expectTotals
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.live(
      "hand-written SQL on the tasks table keeps the totals exact: the triggers count every write",
      () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const storage = yield* TaskStorage
          const tasks = sql(SqlTaskStorage.tables().tasks)
          const now = yield* storage.now
          const accepted = [
            newTask({ createdAt: now, provider: "vendor3", model: "vendor3-3" }),
            newTask({ createdAt: now + 1, provider: "vendor3", model: "vendor3-3_fast" }),
            newTask({ createdAt: now + 2, provider: "vendor7", model: "vendor3-3" }),
            newTask({ createdAt: now + 3, accountId: "acct_b" })
          ]
          for (const task of accepted) yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          const expectTotals = (label: string) =>
            Effect.gen(function*() {
              for (const accountId of ["acct_a", "acct_b"]) {
                const count = (where: ReturnType<typeof sql.and>) =>
                  sql<
                    { n: string | number }
                  >`SELECT COUNT(*) AS n FROM ${tasks} WHERE account_id = ${accountId} AND ${where}`.pipe(
                    Effect.map((rows) => Number(rows[0]!.n))
                  )
                const queries: Array<readonly [ListQuery, ReturnType<typeof sql.and>]> = [
                  [{ limit: 1 }, sql.and([sql`1 = 1`])],
                  ...Task.taskStatuses.map((status) =>
                    [{ limit: 1, status }, sql.and([sql`status = ${status}`])] as const
                  ),
                  ...["vendor3", "vendor7"].map((provider) =>
                    [{ limit: 1, provider }, sql.and([sql`provider = ${provider}`])] as const
                  ),
                  ...["vendor3-3", "vendor3-3_fast", "m2"].map((model) =>
                    [{ limit: 1, model }, sql.and([sql`model = ${model}`])] as const
                  ),
                  ...(["live", "test"] as const).flatMap((environment) => [
                    [{ limit: 1, environment }, sql.and([sql`environment = ${environment}`])] as const,
                    [
                      { limit: 1, environment, status: "expired" },
                      sql.and([sql`environment = ${environment}`, sql`status = 'expired'`])
                    ] as const
                  ])
                ]
                for (const [query, where] of queries) {
                  expect(
                    (yield* storage.list(accountId, query)).total,
                    `${label}: ${accountId} ${JSON.stringify(query)}`
                  ).toBe(
                    yield* count(where)
                  )
                }
                // the prompt search follows the rows too (every prompt is "a cat")
                for (const environment of ["live", "test"] as const) {
                  const found = yield* storage.list(accountId, { limit: 10, environment, words: ["cat"] })
                  const ids = yield* sql<{ id: string }>`SELECT id FROM ${tasks}
                    WHERE account_id = ${accountId} AND environment = ${environment} ORDER BY id DESC`
                  expect(found.items.map((t) => t.id), `${label}: ${accountId} ${environment} search`).toEqual(
                    ids.map((row) => row.id)
                  )
                  expect(found.total).toBe(ids.length)
                }
              }
            })
          yield* expectTotals("accepted")
          // several rows in one statement, statuses both ways
          yield* sql`UPDATE ${tasks} SET status = 'failed' WHERE account_id = 'acct_a' AND model = 'vendor3-3'`
          yield* sql`UPDATE ${tasks} SET status = 'pending' WHERE id = ${accepted[0]!.id}`
          yield* expectTotals("statuses")
          // columns the storage never changes: model, provider, the account
          yield* sql`UPDATE ${tasks} SET model = 'm2', provider = 'vendor1' WHERE id = ${accepted[1]!.id}`
          yield* sql`UPDATE ${tasks} SET account_id = 'acct_b', status = 'expired' WHERE id = ${accepted[2]!.id}`
          yield* sql`UPDATE ${tasks} SET environment = 'test' WHERE id = ${accepted[3]!.id}`
          yield* expectTotals("moved")
          // a new prompt with two words that start with "cat": indexed again, counted once
          yield* sql`UPDATE ${tasks} SET input = ${JSON.stringify({ prompt: "A catalogue of cats" })}
            WHERE id = ${accepted[1]!.id}`
          yield* expectTotals("prompt changed")
          yield* sql`DELETE FROM ${tasks} WHERE id = ${accepted[0]!.id}`
          yield* expectTotals("deleted")
          yield* sql.onDialectOrElse({ pg: () => sql`TRUNCATE ${tasks}`, orElse: () => sql`DELETE FROM ${tasks}` })
          yield* expectTotals("emptied")
          yield* storage.accept({ task: newTask({ createdAt: now + 9 }), charge: undefined, idempotency: undefined })
          yield* expectTotals("accepted again")
        }).pipe(Effect.provide(withStorage()), Effect.scoped),
      30_000
    )
  })
}
