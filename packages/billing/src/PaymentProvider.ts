/**
 * The payment provider port of auto top-up (decisions.md §5). Billing asks it for a top-up of an account when a
 * prepaid charge leaves the balance below the account's `autoTopUpThreshold`.
 *
 * The provider answers whether it credited the money at once (`Credited`: billing writes the `top_up` ledger entry
 * in the same step) or only took the request (`Requested`: a real provider settles later, through
 * `BillingAccounts.credit`). Billing records every request, whatever the answer, in its top-up request log
 * (`billing_top_up_requests` on SQL), and a failing provider never fails the charge that triggered it (the request
 * is recorded as `failed`).
 *
 * Billing calls the provider inside the charge's transaction (while the account row is locked): a provider must
 * answer quickly. A provider that talks to a payment network should queue the request and answer `Requested`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/**
 * A top-up request.
 *
 * @since 0.1.0
 * @category models
 */
export interface TopUpRequest {
  readonly accountId: string
  readonly amountMicros: number
}

/**
 * What the provider did with a request.
 *
 * @since 0.1.0
 * @category models
 */
export type TopUpOutcome =
  /** Taken; the money arrives later (if ever) as a credit. */
  | { readonly _tag: "Requested" }
  /** The money is there: billing credits the account at once. */
  | { readonly _tag: "Credited" }

/**
 * The provider could not take the request.
 *
 * @since 0.1.0
 * @category errors
 */
export class PaymentProviderError extends Schema.TaggedError<PaymentProviderError>()("PaymentProviderError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * The payment provider port.
 *
 * @since 0.1.0
 * @category services
 */
export class PaymentProvider extends Context.Tag("@mediagate/billing/PaymentProvider")<PaymentProvider, {
  /** The provider's name, recorded with each request (`none`, `simulated`, ...). */
  readonly name: string
  readonly requestTopUp: (request: TopUpRequest) => Effect.Effect<TopUpOutcome, PaymentProviderError>
}>() {}

/**
 * The default provider: nothing happens; billing records the request (status `requested`) and credits nothing.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNone: Layer.Layer<PaymentProvider> = Layer.succeed(PaymentProvider, {
  name: "none",
  requestTopUp: () => Effect.succeed({ _tag: "Requested" } as const)
})

/**
 * A development provider that pays at once: billing writes a `top_up` ledger entry in the same step.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSimulated: Layer.Layer<PaymentProvider> = Layer.succeed(PaymentProvider, {
  name: "simulated",
  requestTopUp: () => Effect.succeed({ _tag: "Credited" } as const)
})
