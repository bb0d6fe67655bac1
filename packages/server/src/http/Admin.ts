/**
 * Handlers of the operator API `/admin/v1`.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Api, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import { markHandlerStarted } from "../Envelope.js"

/** The admin group. */
export const layer = HttpApiBuilder.group(Api.MediagateApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Services.AdminService
    return handlers
      .handle("createAccount", ({ payload }) =>
        Effect.zipRight(markHandlerStarted, admin.createAccount(payload)).pipe(Effect.withSpan("Admin.createAccount")))
      .handle("getAccount", ({ path }) =>
        Effect.zipRight(markHandlerStarted, admin.getAccount(path.id)).pipe(Effect.withSpan("Admin.getAccount")))
      .handle("updateAccount", ({ path, payload }) =>
        Effect.zipRight(markHandlerStarted, admin.updateAccount(path.id, payload)).pipe(
          Effect.withSpan("Admin.updateAccount")
        ))
      .handle("credit", ({ path, payload }) =>
        Effect.zipRight(markHandlerStarted, admin.credit(path.id, payload)).pipe(Effect.withSpan("Admin.credit")))
      .handle("createKey", ({ path, payload }) =>
        Effect.zipRight(markHandlerStarted, admin.createKey(path.id, payload)).pipe(Effect.withSpan("Admin.createKey")))
  }))
