/**
 * Accounts and API keys in memory (one process, nothing persisted): the same services as `SqlAccounts`, for tests
 * and the in-memory example setup. Billing stays behind `BillingAccounts` (provide billing's memory implementation).
 *
 * @since 0.1.0
 */
import type { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import type { Services } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AccountStore from "./AccountStore.js"
import * as Idempotency from "./Idempotency.js"
import * as KeyService from "./KeyService.js"

/**
 * Fresh memory stores (accounts and keys, idempotent answers).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStore: Layer.Layer<AccountStore.AccountStore | Idempotency.IdempotencyStore> = Layer.effectContext(
  Effect.sync(() =>
    Context.make(AccountStore.AccountStore, AccountStore.makeMemory()).pipe(
      Context.add(Idempotency.IdempotencyStore, Idempotency.makeMemory())
    )
  )
)

/**
 * The accounts services in memory: `KeyService` (with `KeyUsage` and `KeyCache`) and the stores. The
 * `AdminService` (`AdminService.layer`) also needs the engine's and the webhooks' operator ports.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: KeyService.Options = {}
): Layer.Layer<
  | Services.KeyService
  | KeyService.KeyUsage
  | KeyService.KeyCache
  | AccountStore.AccountStore
  | Idempotency.IdempotencyStore,
  never,
  BillingAccounts
> => KeyService.layer(options).pipe(Layer.provideMerge(layerStore))
