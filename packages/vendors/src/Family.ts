/**
 * The shape every family module has (`families/vendorN.ts`): adding a family is copying one.
 *
 * @since 0.1.0
 */
import type { Catalog, Generation } from "@mediagate/contract"
import type { OutputSpec } from "./Outputs.js"

/** A family's description of its endpoints. */
export interface Family {
  readonly family: Catalog.TaskFamily
  /** The endpoints of the family. */
  readonly endpoints: ReadonlyArray<Catalog.EndpointKey>
  /** Seconds a job usually takes, before recent durations of the model are known. */
  readonly defaultEstimateSeconds: (endpoint: Catalog.EndpointKey, request: Generation.AnyGenerationRequest) => number
  /** The files a job of a (normalized) request produces. */
  readonly outputs: (
    endpoint: Catalog.EndpointKey,
    request: Generation.AnyGenerationRequest
  ) => ReadonlyArray<OutputSpec>
}
