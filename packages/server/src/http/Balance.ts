/**
 * Handlers of `GET /api/v1/balance` and `GET /api/v1/balance/ledger` (both `balance:read`).
 *
 * @since 0.1.0
 */
import { Api, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Authorization from "../Authorization.js"
import * as Envelope from "../Envelope.js"

/**
 * The balance group.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Envelope.group(Api.MediagateApi, "balance", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* Services.BillingService
    const reader = Authorization.require("balance:read")
    return handlers
      .handle("get", () => Effect.flatMap(reader, billing.balance).pipe(Tracing.span("Balance.get")))
      .handle("ledger", ({ urlParams }) =>
        Effect.flatMap(reader, (principal) =>
          billing.ledger(principal, urlParams)).pipe(Tracing.span("Balance.ledger")))
  }))
