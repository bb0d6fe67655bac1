/**
 * The contract's `WebhookService` port (decisions.md §6), scoped to the caller's account and environment: another
 * account's webhook or delivery, or a webhook of the other environment, is reported exactly as an unknown one.
 *
 * - Environments: a webhook has the creating key's environment (`environment` in the body may only repeat it) and
 *   receives only the events of tasks of that environment; a key lists, tests, deletes and replays only the
 *   webhooks of its own environment.
 *
 * - `create`: a fresh secret (`whsec_` + base64 of 32 random bytes from `node:crypto`), answered only here; the
 *   target's literal host is checked again (the request Schema already did) unless `allowPrivate`, and its name
 *   resolved: a non-global answer, or none within `resolveTimeout` (5 s), is `VALIDATION_ERROR`; an
 *   `Idempotency-Key` replays the original answer for 24 h (another body with the same key: `IDEMPOTENCY_KEY_REUSED`),
 *   to the API key that made the request only (each key has its own Idempotency-Keys).
 * - `list` / `remove` (soft delete: pending deliveries of a deleted webhook fail without a request).
 * - `deliveries`: newest first, keyset cursor (base64url of the last delivery id), 20 per page, each with its
 *   attempt log (status, duration, response excerpt; the dashboard's deliveries view).
 * - `replay`: a new delivery of the same event (same event id, attempts from 0, due at once) to the webhook's
 *   current URL; it re-enables a webhook that a `410 Gone` disabled.
 * - `test`: one synchronous signed delivery of a sample `task.completed` event (`metadata: { test: true }`) with
 *   `X-Webhook-Test: true`; not stored, not retried.
 *
 * @since 0.1.0
 */
import { Address, Envelope, Errors, type Security, Services, Tracing, type Webhook } from "@mediagate/contract"
import { PinnedHttp } from "@mediagate/outbound"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import { toUnavailable } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { randomBytes } from "node:crypto"
import { configuredHeaders, defaultTimeoutMs } from "./Dispatcher.js"
import { type Resolver, WebhookSender } from "./Outbound.js"
import {
  type AttemptRow,
  byDelivery,
  type DeliveryRow,
  webhookId,
  type WebhookRow,
  WebhookStore
} from "./WebhookStore.js"

/**
 * Deliveries per page.
 *
 * @since 0.1.0
 * @category constants
 */
export const deliveryPageSize = 20

/**
 * Options of the service.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServiceOptions {
  /** Allow loopback and private targets (`MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`). Default false. */
  readonly allowPrivate?: boolean
  /** Time limit of the test delivery. Default 10 s. */
  readonly timeout?: Duration.DurationInput
  /** DNS resolver for the registration check (tests). */
  readonly lookup?: Resolver
  /** How long registration waits for the target name to resolve; past it the request is refused. Default 5 s. */
  readonly resolveTimeout?: Duration.DurationInput
}

/**
 * Default of {@link ServiceOptions.resolveTimeout}.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultResolveTimeout: Duration.DurationInput = "5 seconds"

/**
 * A new secret: `whsec_` + base64 of 32 random bytes.
 *
 * @since 0.1.0
 * @category utils
 */
export const newSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`

const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()

/**
 * The public form of a registration (never its secret).
 *
 * @since 0.1.0
 * @category encoding
 */
export const toRecord = (row: WebhookRow): Webhook.WebhookRecord => ({
  id: row.id,
  environment: row.environment,
  url: row.url,
  events: row.events,
  description: row.description,
  enabled: row.enabled,
  // a 410 Gone from the receiver is what disables a webhook (a deleted one is not listed)
  disabledReason: row.enabled ? null : disabledByGone,
  createdAt: iso(row.createdAt)!
})

/** Why a disabled webhook receives nothing: its receiver answered `410 Gone` (the one cause of a disable). */
const disabledByGone = "the receiver answered 410 Gone: no event is sent to it until it is enabled again"

/**
 * A logged attempt as the API shows it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toAttempt = (row: AttemptRow): Webhook.DeliveryAttempt => ({
  attempt: row.attempt,
  status_code: row.statusCode,
  error: row.error,
  duration_ms: row.durationMs,
  response_excerpt: row.responseExcerpt,
  at: new Date(row.at).toISOString()
})

/**
 * The public form of a delivery.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toDelivery = (row: DeliveryRow): Webhook.Delivery => ({
  id: row.id,
  event_id: row.eventId,
  event_type: row.eventType,
  status: row.status,
  attempts: row.attempts,
  last_status_code: row.lastStatusCode,
  last_error: row.lastError,
  next_attempt_at: row.status === "pending" ? iso(row.nextAttemptAt) : null,
  created_at: iso(row.createdAt)!
})

/**
 * The id of the task a delivery's body is about (`data.task.id` of the event), or null for a body that names none.
 *
 * @since 0.1.0
 * @category utils
 */
export const taskIdOf = (payload: string): string | null => {
  try {
    const id = JSON.parse(payload)?.data?.task?.id
    return typeof id === "string" ? id : null
  } catch {
    return null
  }
}

/**
 * The id a delivery list cursor holds (see `Envelope.decodeIdCursor`).
 *
 * @since 0.1.0
 * @category utils
 */
export const deliveryCursor = (cursor: string | undefined) => Envelope.decodeIdCursor("dlv_", cursor)

/**
 * The sample event of a test delivery.
 *
 * @since 0.1.0
 * @category utils
 */
export const sampleEvent = (now: number): Webhook.WebhookEvent => ({
  id: Ids.eventId(now),
  type: "task.completed",
  created_at: new Date(now).toISOString(),
  data: {
    task: {
      id: Ids.taskId(now),
      type: "image",
      status: "succeeded",
      provider: "vendor4",
      model: "vendor4-5-0-lite",
      created_at: new Date(now - 5000).toISOString(),
      completed_at: new Date(now).toISOString(),
      result: [{
        url: "https://example.com/files/sample.png",
        format: "png",
        size_bytes: 1024,
        width: 1024,
        height: 1024
      }],
      metadata: { test: true }
    }
  }
})

const unavailable = toUnavailable("webhook storage failure")

const webhookNotFound = (id: string) => new Errors.WebhookNotFound({ message: `webhook ${id} not found` })

/**
 * Builds the service on a {@link WebhookStore} and a {@link WebhookSender}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ServiceOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    const allowPrivate = options.allowPrivate === true
    const timeoutMs = Duration.toMillis(options.timeout ?? defaultTimeoutMs)

    const findWebhook = (principal: Security.Principal, id: string) =>
      Effect.flatMap(
        store.getWebhook(principal.accountId, id),
        (found) =>
          Option.isSome(found) && found.value.environment === principal.environment
            ? Effect.succeed(found.value)
            : Effect.fail(webhookNotFound(id))
      )

    const service: Services.WebhookService["Type"] = {
      create: (principal, body, idempotencyKey) =>
        Effect.gen(function*() {
          if (body.environment !== undefined && body.environment !== principal.environment) {
            return yield* new Errors.ValidationError({
              message: `environment: a ${principal.environment} key registers ${principal.environment} webhooks only`
            })
          }
          const url = Address.parseHttpUrl(body.url)
          if (url === undefined) {
            return yield* new Errors.ValidationError({ message: "url: must be an absolute http(s) URL" })
          }
          if (!allowPrivate) {
            const problem = Address.literalHostProblem(url)
            if (problem !== undefined) return yield* new Errors.ValidationError({ message: `url: ${problem}` })
            // a name that resolves to a non-global address, or does not answer within the deadline, is refused
            // now; one that does not exist (yet) is accepted and checked again, on the address actually connected
            // to, at every delivery
            const resolved = yield* Effect.either(PinnedHttp.checkTarget(url, {
              allowPrivate: false,
              lookup: options.lookup,
              resolveTimeout: options.resolveTimeout ?? defaultResolveTimeout
            }))
            if (
              resolved._tag === "Left" && (resolved.left.reason === "address" || resolved.left.reason === "timeout")
            ) {
              return yield* new Errors.ValidationError({ message: `url: ${resolved.left.message}` })
            }
          }
          const now = yield* store.now
          const row: WebhookRow = {
            id: webhookId(now),
            accountId: principal.accountId,
            environment: principal.environment,
            url: body.url,
            events: [...new Set(body.events)],
            description: body.description ?? null,
            enabled: true,
            secret: newSecret(),
            createdAt: now,
            deletedAt: null
          }
          // the record is the calling API key's (the key id is part of the remembered key): only that key is ever
          // answered a replay (and the secret in it); another key's request with the same Idempotency-Key is its own
          const claim = idempotencyKey === undefined
            ? undefined
            : IdempotencyWindow.claim(`${principal.keyId}:${idempotencyKey}`, ["webhooks.create", body], now)
          const result = yield* store.createWebhook(row, claim)
          return { ...toRecord(result.webhook), secret: result.webhook.secret }
        }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("WebhookService.create")),

      list: (principal) =>
        store.listWebhooks(principal.accountId).pipe(
          Effect.map((rows) => rows.filter((row) => row.environment === principal.environment).map(toRecord)),
          Effect.catchTag("PersistenceError", unavailable),
          Tracing.span("WebhookService.list")
        ),

      remove: (principal, id) =>
        Effect.gen(function*() {
          yield* findWebhook(principal, id)
          const now = yield* store.now
          const removed = yield* store.removeWebhook(principal.accountId, id, now)
          if (!removed) return yield* webhookNotFound(id)
          return { id, deleted: true as const }
        }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("WebhookService.remove")),

      enable: (principal, id) =>
        Effect.gen(function*() {
          const webhook = yield* findWebhook(principal, id)
          if (!webhook.enabled) yield* store.setEnabled(webhook.id, true)
          return toRecord({ ...webhook, enabled: true })
        }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("WebhookService.enable")),

      deliveries: (principal, id, query) =>
        Effect.gen(function*() {
          const beforeId = yield* deliveryCursor(query.cursor)
          yield* findWebhook(principal, id)
          const page = yield* store.listDeliveries(principal.accountId, id, {
            beforeId,
            limit: deliveryPageSize,
            status: query.status
          })
          // the page's attempt logs in one read
          const logs = byDelivery(yield* store.attemptsOf(page.items.map((row) => row.id)))
          const data = page.items.map((row) => ({
            ...toDelivery(row),
            task_id: taskIdOf(row.payload),
            attempt_log: (logs.get(row.id) ?? []).map(toAttempt)
          }))
          return Envelope.idPage(page, data)
        }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("WebhookService.deliveries")),

      replay: (principal, id, deliveryId) =>
        Effect.gen(function*() {
          const webhook = yield* findWebhook(principal, id)
          const original = yield* store.getDelivery(principal.accountId, id, deliveryId)
          if (Option.isNone(original)) {
            return yield* new Errors.DeliveryNotFound({ message: `delivery ${deliveryId} not found` })
          }
          const now = yield* store.now
          const row = yield* store.addDelivery(
            {
              webhookId: webhook.id,
              accountId: webhook.accountId,
              eventId: original.value.eventId,
              eventType: original.value.eventType,
              url: webhook.url,
              payload: original.value.payload
            },
            now,
            { enableWebhook: true }
          )
          return toDelivery(row)
        }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("WebhookService.replay")),

      test: (principal, id) =>
        Effect.gen(function*() {
          const webhook = yield* findWebhook(principal, id)
          const now = yield* Clock.currentTimeMillis
          const event = sampleEvent(now)
          const body = JSON.stringify(event)
          const headers = {
            ...configuredHeaders(webhook.secret, event.id, Math.floor(now / 1000), body),
            "x-webhook-test": "true"
          }
          const result = yield* sender.send({ url: webhook.url, headers, body, timeoutMs })
          const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode <= 299
          return {
            delivered,
            statusCode: result.statusCode,
            durationMs: result.durationMs,
            error: delivered ? null : result.error ?? `HTTP ${result.statusCode}`
          }
        }).pipe(Effect.catchTag("PersistenceError", unavailable), Tracing.span("WebhookService.test"))
    }
    return service
  })

/**
 * The service as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: ServiceOptions = {}
): Layer.Layer<Services.WebhookService, never, WebhookStore | WebhookSender> =>
  Layer.effect(Services.WebhookService, make(options))
