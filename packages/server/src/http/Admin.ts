/**
 * Handlers of the operator API `/admin/v1` (the new operator views carry their spans in the `AdminService`).
 *
 * @since 0.1.0
 */
import { Api, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Envelope from "../Envelope.js"

/**
 * The admin group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Services.AdminService
    return handlers
      .handle("createAccount", ({ payload }) => admin.createAccount(payload).pipe(Tracing.span("Admin.createAccount")))
      .handle("getAccount", ({ path }) => admin.getAccount(path.id).pipe(Tracing.span("Admin.getAccount")))
      .handle("updateAccount", ({ path, payload }) =>
        admin.updateAccount(path.id, payload).pipe(Tracing.span("Admin.updateAccount")))
      .handle("credit", ({ path, payload }) =>
        admin.credit(path.id, payload).pipe(Tracing.span("Admin.credit")))
      .handle(
        "createKey",
        ({ path, payload }) => admin.createKey(path.id, payload).pipe(Tracing.span("Admin.createKey"))
      )
      .handle("listAccounts", ({ urlParams }) => admin.listAccounts(urlParams))
      .handle("listKeys", ({ path }) => admin.listKeys(path.id))
      .handle("revokeKey", ({ path }) => admin.revokeKey(path.id))
      .handle("listTasks", ({ urlParams }) => admin.listTasks(urlParams))
      .handle("getTask", ({ path }) => admin.getTask(path.id))
      .handle("listDeliveries", ({ urlParams }) => admin.listDeliveries(urlParams))
      .handle("system", () => admin.system)
  }))
