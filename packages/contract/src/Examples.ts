/**
 * A minimal valid generation request for every endpoint and model (each family states its own): documentation for
 * clients, and the seed of the table-driven tests of every package (HTTP, engine, end-to-end).
 *
 * @since 0.1.0
 */
import { type EndpointKey, endpointList, type ModelId } from "./Catalog.js"
import type * as Family from "./Family.js"

/**
 * One minimal request body per endpoint and model.
 *
 * @since 0.1.0
 * @category constants
 */
export const minimalRequests: ReadonlyArray<{
  readonly endpoint: EndpointKey
  readonly model: ModelId
  readonly body: { readonly model: ModelId; readonly input: Record<string, unknown> }
}> = endpointList.flatMap((endpoint) => {
  const info: Family.Endpoint = endpoint
  return endpoint.models.map((model) => ({
    endpoint: endpoint.key,
    model,
    body: { model, input: info.example(model) }
  }))
})
