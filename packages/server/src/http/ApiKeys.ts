/**
 * Handlers of `/api/v1/api-keys` (`api-keys:write`).
 *
 * @since 0.1.0
 */
import { Api, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"

const authorized = Authorization.require("api-keys:write")

/**
 * The API-key group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Services.KeyService
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.flatMap(authorized, (principal) =>
          keys.create(principal, payload, headers["idempotency-key"]))
          .pipe(Tracing.span("ApiKeys.create")))
      .handle("list", () =>
        Effect.flatMap(authorized, keys.list).pipe(Tracing.span("ApiKeys.list")))
      .handle("delete", ({ path }) =>
        Effect.flatMap(authorized, (principal) => keys.revoke(principal, path.id))
          .pipe(Tracing.span("ApiKeys.delete")))
  }))
