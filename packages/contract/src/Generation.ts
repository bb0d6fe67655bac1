/**
 * The request Schema of every generation endpoint, keyed like the catalog (`<family>/<operation>`).
 *
 * @since 0.1.0
 */
import * as Rec from "effect/Record"
import type * as Schema from "effect/Schema"
import { type EndpointKey, endpoints } from "./Catalog.js"
import type { AnyRequest } from "./Family.js"
import type { GenerationBody } from "./GenerationRequest.js"

/**
 * Request Schemas by endpoint key.
 *
 * @since 0.1.0
 * @category constants
 */
export const requests: { readonly [K in EndpointKey]: AnyRequest } = Rec.map(endpoints, (endpoint) => endpoint.request)

/**
 * A validated, normalized generation request of any endpoint.
 *
 * @since 0.1.0
 * @category models
 */
export type AnyGenerationRequest = GenerationBody<string, Readonly<Record<string, unknown>>>

/**
 * The request Schema of an endpoint, typed for code that handles every endpoint alike.
 *
 * @since 0.1.0
 * @category schemas
 */
export const requestSchema = (
  endpoint: EndpointKey
): Schema.Schema<AnyGenerationRequest, GenerationBody<string, Record<string, unknown>>> => requests[endpoint]

/**
 * A generation request together with the endpoint it was sent to (what the task service accepts).
 *
 * @since 0.1.0
 * @category models
 */
export interface GenerationCommand {
  readonly endpoint: EndpointKey
  readonly request: AnyGenerationRequest
  /** `Idempotency-Key` header, when sent. */
  readonly idempotencyKey: string | undefined
}
