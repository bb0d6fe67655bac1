/**
 * What the SQL task storage tests share: the databases they run on (SQLite, and PostgreSQL when it runs), the
 * storage on a fresh database, an SQL billing port on the storage's own client and its ledger, an instance with a
 * client of its own, and the ids of every engine migration.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Billing, layerUnmetered } from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { pgClient, postgres, runPostgres, sqlite } from "./databases.js"

/** The ids of every engine migration, in order (what a migrated database records). */
export const migrationIds = Effect.map(SqlTaskStorage.migrations(), (all) => all.map(([id]) => id))

/** A fresh database of one kind, its client in context. */
export type Database = () => Layer.Layer<SqlClient.SqlClient, unknown>

/** The databases the SQL-only tests run on: SQLite, and PostgreSQL when it runs. */
export const databases: ReadonlyArray<readonly [string, Database]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

/** The storage on a fresh `database` (the database clock unless `clock` is given), with the client in context. */
export const storageOn =
  (database: Database) => (billing: Layer.Layer<Billing, unknown, SqlClient.SqlClient> = layerUnmetered) => {
    const db = database()
    return Layer.provideMerge(SqlTaskStorage.layer(), Layer.provideMerge(billing, db))
  }

/** A billing port writing to a table on the storage's own client, so it commits and rolls back with it. */
export const sqlBilling = (refusedRefunds: string) =>
  Layer.effect(
    Billing,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE ledger (task_id TEXT NOT NULL, amount BIGINT NOT NULL)`
      const write = (taskId: string, amount: number) =>
        sql`INSERT INTO ledger (task_id, amount) VALUES (${taskId}, ${amount})`.pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new PersistenceError({ message: "ledger", cause }))
        )
      return {
        charge: (charge) => write(charge.taskId, charge.amountMicros),
        refund: (refund) =>
          refund.accountId === refusedRefunds
            ? Effect.zipRight(
              write(refund.taskId, -refund.amountMicros),
              new PersistenceError({ message: "ledger down" })
            )
            : write(refund.taskId, -refund.amountMicros)
      }
    })
  )

/** The rows of the ledger table of {@link sqlBilling}. */
export const ledgerOf = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ task_id: string; amount: number | string }>`SELECT task_id, amount FROM ledger`
).pipe(
  Effect.map((rows) => rows.map((r) => [r.task_id, Number(r.amount)] as const))
)

/** A storage instance with a client of its own on `schema`. */
export const instance = (schema: string, billing: Layer.Layer<Billing> = layerUnmetered) =>
  Layer.build(SqlTaskStorage.layer().pipe(Layer.provide(Layer.merge(pgClient(schema), billing)))).pipe(
    Effect.map(Context.get(TaskStorage))
  )
