/**
 * The webhooks' side of the operator API (the contract's `AdminWebhooks` port): deliveries of every account (or of
 * one), with their attempt logs, and the delivery backlog.
 *
 * - The list is the storage's own delivery list without the webhook (and account) filter: newest first, keyset
 *   cursor (the account-side delivery list's), `limit` 1 to 100 (default 20). Each delivery carries its attempt log
 *   (status, duration, response excerpt as stored: at most `WebhookStore.excerptBytes`).
 * - Backlog: pending deliveries, those due now, and those that failed for good in the last hour (by their last
 *   attempt), at the storage clock.
 *
 * @since 0.1.0
 */
import { type Admin, Envelope, Services, Task, Tracing } from "@mediagate/contract"
import { toUnavailable } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { deliveryCursor, toAttempt, toDelivery } from "./WebhookService.js"
import { type AttemptRow, byDelivery, type DeliveryRow, WebhookStore } from "./WebhookStore.js"

/**
 * The window of `failed_last_hour`.
 *
 * @since 0.1.0
 * @category constants
 */
export const failedWindowMs = 60 * 60 * 1000

const unavailable = toUnavailable("webhook storage failure")

export {
  /**
   * A logged attempt as the operator API shows it (the account-side list's form).
   *
   * @since 0.1.0
   * @category encoding
   */
  toAttempt
}

/**
 * A delivery and its attempt log as the operator API shows them.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toAdminDelivery = (row: DeliveryRow, attempts: ReadonlyArray<AttemptRow>): Admin.AdminDelivery => ({
  ...toDelivery(row),
  account_id: row.accountId,
  webhook_id: row.webhookId,
  url: row.url,
  attempt_log: attempts.map(toAttempt)
})

/**
 * Builds the webhooks' `AdminWebhooks`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Services.AdminWebhooks["Type"], never, WebhookStore> = Effect.gen(function*() {
  const store = yield* WebhookStore

  const deliveries: Services.AdminWebhooks["Type"]["deliveries"] = (query) =>
    Effect.gen(function*() {
      const beforeId = yield* deliveryCursor(query.cursor)
      const page = yield* store.listDeliveries(query.account_id, undefined, {
        beforeId,
        limit: query.limit ?? Task.defaultPageSize,
        status: query.status
      })
      // the page's attempt logs in one read
      const logs = byDelivery(yield* store.attemptsOf(page.items.map((row) => row.id)))
      const data = page.items.map((row) => toAdminDelivery(row, logs.get(row.id) ?? []))
      return Envelope.idPage(page, data)
    }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("AdminWebhooks.deliveries"))

  const backlog: Services.AdminWebhooks["Type"]["backlog"] = Effect.gen(function*() {
    const now = yield* store.now
    const found = yield* store.backlog(now, now - failedWindowMs)
    return { pending: found.pending, due: found.due, failed_last_hour: found.failedSince }
  }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("AdminWebhooks.backlog"))

  return { deliveries, backlog }
})

/**
 * The webhooks' `AdminWebhooks` as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services.AdminWebhooks, never, WebhookStore> = Layer.effect(
  Services.AdminWebhooks,
  make
)
