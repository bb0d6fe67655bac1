/**
 * The settles of the SQL webhook storage: a claimed delivery's attempt recorded and the delivery moved on, fenced,
 * one at a time or many at once (one statement on PostgreSQL, one transaction on SQLite).
 */
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WebhookStore } from "../../WebhookStore.js"
import type { AttemptRow, Settle } from "../store/records.js"
import { attemptRow, settled } from "../store/rows.js"
import type { SqlContext } from "./context.js"
import { persistence } from "./rows.js"

const { hasNul } = SqlStore

/** The most settles in one statement of `settleAll` (12 parameters each). */
const maxSettleRound = 500

/** Builds the settles on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { pg, rows, sql, t } = context

    /**
     * One round of `settleAll` (distinct deliveries, valid ids and fences): the fenced update of every delivery
     * from the values computed from its claimed row, the attempts logged, the webhooks answered `410` disabled.
     * PostgreSQL: one statement (data-modifying CTEs); SQLite: three in a transaction. Answers the ids recorded.
     */
    const settleRound = (batch: ReadonlyArray<Settle>) => {
      const values = batch.map(({ attempt, delivery, settlement }) => {
        const next = settled(delivery, attempt, settlement)
        const disable = settlement.status === "failed" && settlement.disableWebhook === true ? delivery.webhookId : null
        return sql`(${delivery.id}, CAST(${delivery.fence} AS BIGINT), CAST(${next.attempts} AS INTEGER),
          CAST(${next.lastStatusCode} AS INTEGER), ${next.lastError}, ${next.status},
          CAST(${next.nextAttemptAt} AS BIGINT), CAST(${attempt === undefined ? 0 : 1} AS INTEGER), ${disable},
          CAST(${attempt === undefined ? null : Math.round(attempt.durationMs)} AS INTEGER),
          ${attempt?.responseExcerpt ?? null}, CAST(${
          attempt === undefined ? null : Math.floor(attempt.at)
        } AS BIGINT))`
      })
      const settles = sql`settles (s_id, s_fence, s_attempts, s_code, s_error, s_status, s_next, s_log, s_disable,
        s_duration, s_excerpt, s_at) AS (VALUES ${sql.csv(values)})`
      const update = sql`UPDATE ${t.deliveries} SET attempts = settles.s_attempts, last_status_code = settles.s_code,
          last_error = settles.s_error, status = settles.s_status, next_attempt_at = settles.s_next,
          lease_owner = NULL, lease_expires_at = NULL
        FROM settles
        WHERE ${t.deliveries}.id = settles.s_id AND ${t.deliveries}.fence = settles.s_fence
          AND ${t.deliveries}.lease_owner IS NOT NULL AND ${t.deliveries}.status = 'pending'`
      const ids = (recorded: ReadonlyArray<Record<string, unknown>>) =>
        new Set(recorded.map((row) => String(row["id"])))
      if (pg) {
        return sql`WITH ${settles},
          up AS (${update} RETURNING settles.*),
          logged AS (INSERT INTO ${t.attempts} (delivery_id, attempt, status_code, error, duration_ms, response_excerpt, at)
            SELECT s_id, s_attempts, s_code, s_error, s_duration, s_excerpt, s_at FROM up WHERE s_log = 1),
          disabled AS (UPDATE ${t.webhooks} SET enabled = 0
            WHERE id IN (SELECT s_disable FROM up WHERE s_disable IS NOT NULL))
          SELECT s_id AS id FROM up`.pipe(Effect.map(ids))
      }
      return sql.withTransaction(Effect.gen(function*() {
        const recorded = ids(yield* sql`WITH ${settles} ${update} RETURNING ${t.deliveries}.id`)
        const logged: Array<AttemptRow> = []
        const disable: Array<string> = []
        for (const { attempt, delivery, settlement } of batch) {
          if (!recorded.has(delivery.id)) continue
          if (attempt !== undefined) {
            logged.push({ ...attemptRow(delivery.id, delivery.attempts + 1, attempt), at: Math.floor(attempt.at) })
          }
          if (settlement.status === "failed" && settlement.disableWebhook === true && delivery.webhookId !== null) {
            disable.push(delivery.webhookId)
          }
        }
        if (logged.length > 0) {
          const encoded = yield* Effect.forEach(logged, rows.attempt.encode)
          yield* sql`INSERT INTO ${t.attempts} ${sql.insert(encoded)}`
        }
        if (disable.length > 0) yield* sql`UPDATE ${t.webhooks} SET enabled = 0 WHERE ${sql.in("id", disable)}`
        return recorded
      }))
    }

    const service: Pick<WebhookStore["Type"], "settle" | "settleAll"> = {
      settle: (id, fence, attempt, settlement) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!Number.isSafeInteger(fence) || hasNul(id)) return false
          // read by a write that changes nothing: the transaction holds the row (PostgreSQL) or the write lock
          // (SQLite: a read first would fail the later write at once if another process committed in between)
          const current = yield* sql`UPDATE ${t.deliveries} SET fence = fence
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND status = 'pending'
            RETURNING *`.pipe(Effect.flatMap(rows.delivery.first))
          if (Option.isNone(current)) return false
          const row = current.value
          const next = settled(row, attempt, settlement)
          const updated = yield* sql`UPDATE ${t.deliveries} SET attempts = ${next.attempts},
              last_status_code = ${next.lastStatusCode}, last_error = ${next.lastError}, status = ${next.status},
              next_attempt_at = ${next.nextAttemptAt}, lease_owner = NULL, lease_expires_at = NULL
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND status = 'pending' RETURNING id`
          if (updated.length === 0) return false
          if (attempt !== undefined) {
            const logged = { ...attemptRow(id, next.attempts, attempt), at: Math.floor(attempt.at) }
            yield* sql`INSERT INTO ${t.attempts} ${sql.insert(yield* rows.attempt.encode(logged))}`
          }
          if (settlement.status === "failed" && settlement.disableWebhook === true && row.webhookId !== null) {
            yield* sql`UPDATE ${t.webhooks} SET enabled = 0 WHERE id = ${row.webhookId}`
          }
          return true
        })).pipe(persistence("settle")),
      settleAll: (settles) =>
        Effect.gen(function*() {
          const answers = settles.map(() => false)
          // rounds of distinct deliveries: a delivery given twice is settled by its first settle, or not at all
          let left = settles.flatMap((settle, i) =>
            Number.isSafeInteger(settle.delivery.fence) && !hasNul(settle.delivery.id) ? [i] : []
          )
          while (left.length > 0) {
            const seen = new Set<string>()
            const round: Array<number> = []
            const later: Array<number> = []
            for (const i of left) {
              const id = settles[i]!.delivery.id
              if (seen.has(id)) later.push(i)
              else {
                seen.add(id)
                round.push(i)
              }
            }
            for (let from = 0; from < round.length; from += maxSettleRound) {
              const chunk = round.slice(from, from + maxSettleRound)
              const recorded = yield* settleRound(chunk.map((i) => settles[i]!))
              for (const i of chunk) answers[i] = recorded.has(settles[i]!.delivery.id)
            }
            left = later
          }
          return answers
        }).pipe(persistence("settleAll"))
    }
    return service
  })
