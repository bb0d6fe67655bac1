/**
 * The SQL webhook storage beyond the conformance suite: a corrupt row is a typed PersistenceError naming its table
 * and column (never a defect), on SQLite and PostgreSQL.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlWebhookStore from "../src/SqlWebhookStore.js"
import { webhookId, WebhookStore } from "../src/WebhookStore.js"
import { postgres, runPostgres, sqlite } from "./databases.js"
import { entry } from "./support.js"

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

for (const [name, database] of databases) {
  describe(`SqlWebhookStore on ${name}`, () => {
    it.effect("a corrupt row is a PersistenceError naming its table and column, not a defect", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* WebhookStore
        const t = SqlWebhookStore.tables()
        const now = yield* store.now
        const id = webhookId(now)
        yield* store.createWebhook({
          id,
          accountId: "acct_a",
          environment: "live",
          url: "https://hooks.example.com/",
          events: ["task.completed"],
          description: null,
          enabled: true,
          secret: "whsec_test",
          createdAt: now,
          deletedAt: null
        }, undefined)
        yield* sql`UPDATE ${sql(t.webhooks)} SET events = ${`["task.completed","task.bogus"]`}`
        const events = yield* Effect.flip(store.listWebhooks("acct_a"))
        assert.instanceOf(events, PersistenceError)
        expect(events.message).toBe(
          `webhook storage: listWebhooks failed: ${t.webhooks}.events[1]: Expected "task.completed" | "task.failed" | ` +
            `"task.expired" | "task.cancelled", actual "task.bogus"`
        )
        expect(events.cause).toMatchObject({ _tag: "RowError", table: t.webhooks, column: "events" })

        yield* sql`UPDATE ${sql(t.webhooks)} SET events = ${`["task.completed"]`}`
        expect(yield* store.fanOut(undefined, "1", [entry("acct_a", "task.completed")], now)).toEqual(Option.some(1))
        yield* sql`UPDATE ${sql(t.deliveries)} SET event_type = 'task.bogus'`
        const delivery = yield* Effect.flip(store.listDeliveries("acct_a", id, { beforeId: undefined, limit: 10 }))
        expect(delivery.message).toBe(
          `webhook storage: listDeliveries failed: ${t.deliveries}.event_type: Expected "task.completed" | ` +
            `"task.failed" | "task.expired" | "task.cancelled", actual "task.bogus"`
        )
        expect(delivery.cause).toMatchObject({ _tag: "RowError", table: t.deliveries, column: "event_type" })
      }).pipe(Effect.provide(Layer.provideMerge(SqlWebhookStore.layer({ time: "clock" }), database())), Effect.scoped))
  })
}
