/**
 * `TaskRetention` on SQL (SQLite, PostgreSQL): idempotency records pruned, result scans and sizes.
 */
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Effect from "effect/Effect"
import { resultSize, TaskRetention } from "../../TaskRetention.js"
import type { SqlContext } from "./context.js"
import { hasNul, persistence, TaskRow } from "./rows.js"
import { tables } from "./schema.js"

/** Builds the port on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { prefix, sql, t } = context
    const pruneIdempotency: TaskRetention["Type"]["pruneIdempotency"] = (before) =>
      Effect.suspend(() =>
        sql`DELETE FROM ${t.idempotency} WHERE created_at < ${Math.floor(before)} RETURNING account_id`
      ).pipe(Effect.map((pruned) => pruned.length), persistence("pruneIdempotency"))

    // retention: outbox entries behind the dispatcher's cursor, result scans and sizes
    const retentionRows = SqlRows.decoder(tables(prefix).tasks, TaskRow.pick("id", "accountId", "status", "result"))

    const scanResults: TaskRetention["Type"]["scanResults"] = (environment, afterId, beforeId, limit) =>
      Effect.suspend(() =>
        sql`SELECT id, account_id, status, result FROM ${t.tasks}
          WHERE id > ${afterId ?? ""} AND id < ${beforeId} AND environment = ${environment}
          ORDER BY id LIMIT ${Math.max(0, Math.floor(limit))}`
      ).pipe(Effect.flatMap(retentionRows.all), persistence("scanResults"))
    const resultBytes: TaskRetention["Type"]["resultBytes"] = (accountId, environment, sinceId) =>
      Effect.suspend(() =>
        hasNul(accountId, sinceId)
          ? Effect.succeed([])
          : sql`SELECT id, account_id, status, result FROM ${t.tasks}
          WHERE account_id = ${accountId} AND status = 'succeeded' AND id >= ${sinceId} AND environment = ${environment}`
            .pipe(Effect.flatMap(retentionRows.all))
      ).pipe(
        Effect.map((found) => found.reduce((total, task) => total + resultSize(task.result), 0)),
        persistence("resultBytes")
      )

    return TaskRetention.of({
      pruneIdempotency,
      scanResults,
      resultBytes
    })
  })
