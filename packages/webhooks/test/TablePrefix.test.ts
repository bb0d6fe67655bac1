/**
 * The table prefix of the SQL webhook storage: a round trip through every table under a custom prefix, every object
 * the migrations create named with it, two prefixes side by side, and invalid prefixes refused before the database
 * is touched.
 */
import * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SqlWebhookStore from "../src/SqlWebhookStore.js"
import * as WebhookStore from "../src/WebhookStore.js"
import { outsidePrefix, postgres, runPostgres, schemaObjects, sqlite } from "./databases.js"
import { entry } from "./support.js"

const prefix = "acme_mg_"

type Database = () => Layer.Layer<SqlClient.SqlClient, unknown>

const databases: ReadonlyArray<readonly [string, Database]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

/** A store under `options` on the client in context. */
const storeOn = (options: SqlWebhookStore.SqlOptions) =>
  Layer.build(SqlWebhookStore.layer(options)).pipe(Effect.map(Context.get(WebhookStore.WebhookStore)))

/** A registration, an outbox page fanned out, a claimed delivery settled with an attempt: a row in every table. */
const roundTrip = (store: WebhookStore.WebhookStore["Type"]) =>
  Effect.gen(function*() {
    const now = yield* store.now
    const webhook: WebhookStore.WebhookRow = {
      id: WebhookStore.webhookId(now),
      accountId: "acct_a",
      environment: "live",
      url: "https://hooks.example.com/",
      events: ["task.completed"],
      description: null,
      enabled: true,
      secret: "whsec_test",
      createdAt: now,
      deletedAt: null
    }
    const claim = { key: "idem-1", fingerprint: "f", notBefore: 0 }
    assert.strictEqual((yield* store.createWebhook(webhook, claim))._tag, "Created")
    assert.strictEqual(
      (yield* store.createWebhook({ ...webhook, id: WebhookStore.webhookId(now) }, claim))._tag,
      "Replayed"
    )
    expect(yield* store.fanOut(undefined, "1", [entry("acct_a", "task.completed")], now)).toEqual(Option.some(1))
    expect(yield* store.readCursor).toBe("1")
    const [delivery] = yield* store.claimDue("w1", 10, 60_000, now)
    assert.isDefined(delivery)
    const attempt = { statusCode: 200, error: null, durationMs: 5, responseExcerpt: "ok", at: now }
    assert.isTrue(yield* store.settle(delivery!.id, delivery!.fence, attempt, { status: "succeeded" }))
    expect((yield* store.attempts(delivery!.id)).map((a) => a.statusCode)).toEqual([200])
    expect((yield* store.listDeliveries("acct_a", webhook.id, { beforeId: undefined, limit: 10 })).total).toBe(1)
    return webhook
  })

for (const [name, database] of databases) {
  describe(`WebhookStore with the prefix ${prefix} on ${name}`, () => {
    it.live("every table, index and constraint the migrations create carries the prefix", () =>
      Effect.gen(function*() {
        yield* roundTrip(yield* storeOn({ prefix }))
        const objects = yield* schemaObjects
        expect(outsidePrefix(objects, prefix)).toEqual([])
        const tables = objects.filter((o) => o.kind === "table").map((o) => o.name).sort()
        expect(tables).toEqual(
          [...Object.values(SqlWebhookStore.tables(prefix)), SqlWebhookStore.migrationsTable(prefix)].sort()
        )
        expect(SqlWebhookStore.migrationsTable(prefix)).toBe("acme_mg_webhooks_migrations")
        expect(objects.filter((o) => o.kind === "index").map((o) => o.name)).toEqual(expect.arrayContaining([
          "acme_mg_webhooks_account_idx",
          "acme_mg_webhook_deliveries_due_idx"
        ]))
      }).pipe(Effect.provide(database()), Effect.scoped))

    it.live("two prefixes in one database keep their webhooks and cursors apart", () =>
      Effect.gen(function*() {
        const ours = yield* storeOn({ prefix })
        const plain = yield* storeOn({})
        const webhook = yield* roundTrip(ours)
        expect(yield* plain.listWebhooks("acct_a")).toEqual([])
        assert.isTrue(Option.isNone(yield* plain.getWebhookById(webhook.id)))
        expect(yield* plain.readCursor).toBeUndefined()
        expect((yield* ours.listWebhooks("acct_a")).map((w) => w.id)).toEqual([webhook.id])
      }).pipe(Effect.provide(database()), Effect.scoped))
  })
}

describe("WebhookStore and invalid table prefixes", () => {
  it.effect("are refused with a clear PersistenceError before the database is touched", () =>
    Effect.gen(function*() {
      for (const bad of ["Webhooks_", "2x", "mg-", "a".repeat(31), "x; DROP TABLE y"]) {
        const error = yield* Effect.flip(storeOn({ prefix: bad }))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toMatch(/^webhook storage: invalid table prefix /)
        expect(error.message).toContain(JSON.stringify(bad))
        assert.instanceOf(yield* Effect.flip(SqlWebhookStore.migrate(bad)), PersistenceError)
        assert.instanceOf(yield* Effect.flip(SqlWebhookStore.migrations(bad)), Migrator.MigrationError)
      }
      expect(yield* schemaObjects).toEqual([])
    }).pipe(Effect.provide(sqlite()), Effect.scoped))
})
