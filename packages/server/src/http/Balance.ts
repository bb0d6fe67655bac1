/**
 * Handler of `GET /api/v1/balance` (`balance:read`).
 *
 * @since 0.1.0
 */
import { Api, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"

/** The balance group. */
export const layer = Envelope.group(Api.MediagateApi, "balance", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* Services.BillingService
    return handlers.handle("get", () =>
      Effect.flatMap(Authorization.require("balance:read"), billing.balance).pipe(Tracing.span("Balance.get")))
  }))
