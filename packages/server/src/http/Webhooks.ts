/**
 * Handlers of `/api/v1/webhooks` (all need `webhooks:write`).
 *
 * @since 0.1.0
 */
import { Api, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"
import { RateLimiter } from "../RateLimit.js"

const authorized = Authorization.require("webhooks:write")

/**
 * The webhooks group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Services.WebhookService
    const limiter = yield* RateLimiter
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.flatMap(authorized, (principal) =>
          webhooks.create(principal, payload, headers["idempotency-key"]))
          .pipe(Tracing.span("Webhooks.create")))
      .handle("list", () =>
        Effect.flatMap(authorized, (principal) =>
          webhooks.list(principal)).pipe(Tracing.span("Webhooks.list")))
      .handle("delete", ({ path }) =>
        Effect.flatMap(authorized, (principal) =>
          webhooks.remove(principal, path.id))
          .pipe(Tracing.span("Webhooks.delete")))
      .handle("test", ({ path }) =>
        Effect.flatMap(authorized, (principal) =>
          Effect.zipRight(limiter.webhookAction(principal), webhooks.test(principal, path.id)))
          .pipe(Tracing.span("Webhooks.test")))
      .handle("enable", ({ path }) =>
        Effect.flatMap(authorized, (principal) =>
          webhooks.enable(principal, path.id))
          .pipe(Tracing.span("Webhooks.enable")))
      .handle("deliveries", ({ path, urlParams }) =>
        Effect.flatMap(authorized, (principal) =>
          webhooks.deliveries(principal, path.id, urlParams))
          .pipe(Tracing.span("Webhooks.deliveries")))
      .handle("replay", ({ path }) =>
        Effect.flatMap(authorized, (principal) =>
          Effect.zipRight(limiter.webhookAction(principal), webhooks.replay(principal, path.id, path.deliveryId)))
          .pipe(Tracing.span("Webhooks.replay")))
  }))
