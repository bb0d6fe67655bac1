/**
 * The registrations of the SQL webhook storage: created (idempotently, by the shared rule of `IdempotencyWindow`),
 * listed, read, deleted (softly), enabled and disabled.
 */
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WebhookStore } from "../../WebhookStore.js"
import { reused } from "../store/rows.js"
import type { SqlContext } from "./context.js"
import { persistence } from "./rows.js"

const { hasNul } = SqlStore

/** Builds the registrations' operations on the storage's context. */
export const make = (context: SqlContext) =>
  Effect.gen(function*() {
    const { pg, rows, selectWebhook, selectWebhooks, sql, t } = context
    const service: Pick<
      WebhookStore["Type"],
      "createWebhook" | "listWebhooks" | "getWebhook" | "getWebhookById" | "removeWebhook" | "setEnabled"
    > = {
      createWebhook: (webhook, claim) =>
        sql.withTransaction(Effect.gen(function*() {
          if (claim !== undefined) {
            // the key taken by a write first (SQLite: a read first would fail the later write at once if another
            // process committed in between); an existing key read under that write's lock
            const createdAt = Math.floor(webhook.createdAt)
            const inserted =
              yield* sql`INSERT INTO ${t.idempotency} (account_id, "key", fingerprint, webhook_id, created_at)
              VALUES (${webhook.accountId}, ${claim.key}, ${claim.fingerprint}, ${webhook.id}, ${createdAt})
              ON CONFLICT (account_id, "key") DO NOTHING RETURNING webhook_id`
            if (inserted.length === 0) {
              const previous = yield* sql`SELECT fingerprint, webhook_id, created_at FROM ${t.idempotency}
                WHERE account_id = ${webhook.accountId} AND "key" = ${claim.key}${sql.literal(pg ? " FOR UPDATE" : "")}`
                .pipe(
                  Effect.flatMap(rows.idempotency.first),
                  Effect.map(Option.getOrUndefined)
                )
              const verdict = IdempotencyWindow.judge(previous, claim)
              if (verdict === "Reused") return yield* Effect.fail(reused())
              if (verdict === "Replay" && previous !== undefined) {
                const original = yield* selectWebhook(previous.webhookId)
                if (Option.isSome(original)) return { _tag: "Replayed", webhook: original.value } as const
              }
              // expired, or its webhook gone: the key is this webhook's now
              yield* sql`UPDATE ${t.idempotency} SET fingerprint = ${claim.fingerprint}, webhook_id = ${webhook.id},
                  created_at = ${createdAt}
                WHERE account_id = ${webhook.accountId} AND "key" = ${claim.key}`
            }
          }
          const encoded = yield* rows.webhook.encode({ ...webhook, createdAt: Math.floor(webhook.createdAt) })
          yield* sql`INSERT INTO ${t.webhooks} ${sql.insert(encoded)}`
          return { _tag: "Created", webhook } as const
        })).pipe(persistence("createWebhook")),
      listWebhooks: (accountId) =>
        persistence("listWebhooks")(hasNul(accountId) ? Effect.succeed([]) : selectWebhooks(accountId)),
      getWebhook: (accountId, id) =>
        persistence("getWebhook")(
          hasNul(accountId, id)
            ? Effect.succeedNone
            : selectWebhook(id).pipe(
              Effect.map(Option.filter((w) => w.accountId === accountId && w.deletedAt === null))
            )
        ),
      getWebhookById: (id) => persistence("getWebhookById")(hasNul(id) ? Effect.succeedNone : selectWebhook(id)),
      removeWebhook: (accountId, id, at) =>
        persistence("removeWebhook")(
          hasNul(accountId, id)
            ? Effect.succeed(false)
            : sql`UPDATE ${t.webhooks} SET deleted_at = ${Math.floor(at)}, enabled = 0
                WHERE id = ${id} AND account_id = ${accountId} AND deleted_at IS NULL RETURNING id`.pipe(
              Effect.map((removed) => removed.length > 0)
            )
        ),
      setEnabled: (id, enabled) =>
        Effect.asVoid(sql`UPDATE ${t.webhooks} SET enabled = ${enabled ? 1 : 0} WHERE id = ${id}`).pipe(
          persistence("setEnabled")
        )
    }
    return service
  })
