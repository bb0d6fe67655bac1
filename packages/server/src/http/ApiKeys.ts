/**
 * Handlers of `/api/v1/api-keys` (`api-keys:write`).
 *
 * @since 0.1.0
 */
import { Api, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"

/** The API-key group. */
export const layer = Envelope.group(Api.MediagateApi, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Services.KeyService
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function*() {
          const principal = yield* Authorization.require("api-keys:write")
          return yield* keys.create(principal, payload, headers["idempotency-key"])
        }).pipe(Effect.withSpan("ApiKeys.create")))
      .handle("list", () =>
        Effect.gen(function*() {
          const principal = yield* Authorization.require("api-keys:write")
          return yield* keys.list(principal)
        }).pipe(Effect.withSpan("ApiKeys.list")))
      .handle("delete", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* Authorization.require("api-keys:write")
          return yield* keys.revoke(principal, path.id)
        }).pipe(Effect.withSpan("ApiKeys.delete")))
  }))
