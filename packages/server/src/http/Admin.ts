/**
 * Handlers of the operator API `/admin/v1`.
 *
 * @since 0.1.0
 */
import { Api, Services } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Envelope from "../Envelope.js"

/** The admin group. */
export const layer = Envelope.group(Api.MediagateApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Services.AdminService
    return handlers
      .handle("createAccount", ({ payload }) =>
        admin.createAccount(payload).pipe(Effect.withSpan("Admin.createAccount")))
      .handle("getAccount", ({ path }) =>
        admin.getAccount(path.id).pipe(Effect.withSpan("Admin.getAccount")))
      .handle("updateAccount", ({ path, payload }) =>
        admin.updateAccount(path.id, payload).pipe(
          Effect.withSpan("Admin.updateAccount")
        ))
      .handle("credit", ({ path, payload }) =>
        admin.credit(path.id, payload).pipe(Effect.withSpan("Admin.credit")))
      .handle("createKey", ({ path, payload }) =>
        admin.createKey(path.id, payload).pipe(Effect.withSpan("Admin.createKey")))
  }))
