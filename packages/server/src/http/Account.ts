/**
 * Handlers of balance (`balance:read`), voices (`voices:read`) and API keys (`api-keys:write`).
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Api, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Authorization from "../Authorization.js"
import { markHandlerStarted } from "../Envelope.js"

const balance = HttpApiBuilder.group(Api.MediagateApi, "balance", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* Services.BillingService
    return handlers.handle("get", () =>
      Effect.gen(function*() {
        yield* markHandlerStarted
        const principal = yield* Authorization.require("balance:read")
        return yield* billing.balance(principal)
      }).pipe(Effect.withSpan("Balance.get")))
  }))

const voices = HttpApiBuilder.group(Api.MediagateApi, "voices", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Services.VoiceService
    return handlers.handle("list", ({ urlParams }) =>
      Effect.gen(function*() {
        yield* markHandlerStarted
        yield* Authorization.require("voices:read")
        return yield* catalog.list(urlParams.name)
      }).pipe(Effect.withSpan("Voices.list")))
  }))

const apiKeys = HttpApiBuilder.group(Api.MediagateApi, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Services.KeyService
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function*() {
          yield* markHandlerStarted
          const principal = yield* Authorization.require("api-keys:write")
          return yield* keys.create(principal, payload, headers["idempotency-key"])
        }).pipe(Effect.withSpan("ApiKeys.create")))
      .handle("list", () =>
        Effect.gen(function*() {
          yield* markHandlerStarted
          const principal = yield* Authorization.require("api-keys:write")
          return yield* keys.list(principal)
        }).pipe(Effect.withSpan("ApiKeys.list")))
      .handle("delete", ({ path }) =>
        Effect.gen(function*() {
          yield* markHandlerStarted
          const principal = yield* Authorization.require("api-keys:write")
          return yield* keys.revoke(principal, path.id)
        }).pipe(Effect.withSpan("ApiKeys.delete")))
  }))

/** The balance, voices and API-key groups. */
export const layer = Layer.mergeAll(balance, voices, apiKeys)
