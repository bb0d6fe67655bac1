/**
 * The shape of a family: one upstream family (`vendorN`) with everything that defines it, in one folder
 * (`families/vendorN/`): its endpoints (request Schemas with their rules and defaults, a minimal example, the files
 * a job produces, the default estimate, the URL inputs fetched as input media), its prices (table entries, default
 * prices, price function) and the charges it measures while a task runs. The registry (`families/index.ts`) lists
 * the families; the catalog, the HttpApi group, the handlers, the price table and the vendor layers derive from it.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import type * as Schema from "effect/Schema"
import type { MediaType, Operation } from "./Catalog.js"
import type { AnyGenerationRequest } from "./Generation.js"
import type { GenerationRequestSchema } from "./GenerationRequest.js"
import type * as InputMedia from "./InputMedia.js"
import type * as Outputs from "./Outputs.js"

/** `image-to-video` → `ImageToVideo`, at the type level. */
type PascalCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Capitalize<Head>}${PascalCase<Tail>}`
  : Capitalize<S>

/** The HttpApi endpoint name of a family and operation: `vendor1` + `image-to-video` → `vendor1ImageToVideo`. */
export type EndpointName<F extends string, O extends string> = `${F}${PascalCase<O>}`

/** The request Schema of any endpoint. */
export type AnyRequest = GenerationRequestSchema<any, any, any>

/** The models a request Schema accepts. */
export type ModelsOf<S extends AnyRequest> = S["models"][number]

/** An extra charge measured while a task runs (a separate ledger entry). */
export interface Charge {
  readonly amountMicros: number
  readonly description: string
}

/** What a family module states about one endpoint; {@link endpoint} adds its key, path and models. */
export interface EndpointSpec<F extends string, O extends Operation, S extends AnyRequest> {
  readonly family: F
  readonly operation: O
  /** The HttpApi endpoint name, the method of the typed client (`vendor3TextToVideo`). */
  readonly name: NoInfer<EndpointName<F, O>>
  readonly mediaType: MediaType
  /** The request Schema: field rules, per-model rules and defaults (`GenerationRequest.make`). */
  readonly request: S
  /** The smallest valid `input` for a model: documentation, and the seed of every table-driven test. */
  readonly example: (model: ModelsOf<S>) => Record<string, unknown>
  /** The files a job of a (normalized) request produces; the simulated upstream renders exactly them. */
  readonly outputs: (request: AnyGenerationRequest) => ReadonlyArray<Outputs.OutputSpec>
  /** Seconds a job usually takes, before recent durations of its model are known. */
  readonly estimateSeconds: (request: AnyGenerationRequest) => number
  /** The URL inputs fetched and checked when a task runs, with their rules (none when absent). */
  readonly inputMedia?: (model: string) => ReadonlyArray<InputMedia.Field>
}

/** One generation endpoint of a family: `POST /api/v1/<family>/<operation>`. */
export interface Endpoint<F extends string = string, O extends Operation = Operation, S extends AnyRequest = AnyRequest> {
  /** `<family>/<operation>`: the endpoint's key everywhere (tasks store it). */
  readonly key: `${F}/${O}`
  readonly name: EndpointName<F, O>
  readonly family: F
  readonly operation: O
  readonly mediaType: MediaType
  /** Path below `/api/v1`. */
  readonly path: `/${F}/${O}`
  /** The models the endpoint accepts, in the order of the specification. */
  readonly models: ReadonlyArray<ModelsOf<S>>
  readonly request: S
  example(model: string): Record<string, unknown>
  outputs(request: AnyGenerationRequest): ReadonlyArray<Outputs.OutputSpec>
  estimateSeconds(request: AnyGenerationRequest): number
  inputMedia(model: string): ReadonlyArray<InputMedia.Field>
}

/** A family's part of the price table (decisions.md §4). */
export interface Prices<P extends Schema.Struct.Fields = Schema.Struct.Fields> {
  /** The Schemas of the family's entries of the price table, one per model id. */
  readonly fields: P
  /** The family's default prices, in USD. */
  readonly defaults: Schema.Struct.Type<P>
  /**
   * The price charged at accept, in integer micro-dollars, of a validated (normalized) request to one of the
   * family's endpoints (see `Pricing` for the building blocks; throw `Pricing.UnpriceableRequestError` for a value
   * the table has no price for).
   */
  price(endpoint: string, request: AnyGenerationRequest, table: Schema.Struct.Type<P>): number
}

/** One family (built with {@link make}). */
export interface Family<
  F extends string = string,
  E extends Endpoint<F> = Endpoint<F>,
  P extends Schema.Struct.Fields = Schema.Struct.Fields
> {
  /** The family word: in paths, the `provider` of its tasks, the prefix of its endpoint names. */
  readonly name: F
  readonly endpoints: readonly [E, ...Array<E>]
  /** Every model of the family, in the order of the specification. */
  readonly models: ReadonlyArray<E["models"][number]>
  readonly prices: Prices<P>
  /** Charges measured while a task is submitted (e.g. the seconds of reference videos), priced from `table`. */
  charges(endpoint: string, request: AnyGenerationRequest, measured: InputMedia.Measured, table: Schema.Struct.Type<P>):
    ReadonlyArray<Charge>
}

/** Any family. */
export type Any = Family<string, Endpoint, Schema.Struct.Fields>

/** The registry: every family, in the order of the specification. */
export type Registry = readonly [Any, ...Array<Any>]

/** The endpoints of a registry's families. */
export type EndpointOf<R extends Registry> = R[number]["endpoints"][number]

/** The family words of a registry. */
export type NameOf<R extends Registry> = R[number]["name"]

/** The model ids of a registry. */
export type ModelOf<R extends Registry> = R[number]["models"][number]

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never

/** The fields of the whole price table of a registry: every family's entries. */
export type PriceFields<R extends Registry> = UnionToIntersection<R[number]["prices"]["fields"]> extends
  infer F extends Schema.Struct.Fields ? F : never

/** Values the families' examples use. */
export const samples = {
  prompt: "a lighthouse at dawn",
  image: "https://example.com/frame.png",
  video: "https://example.com/clip.mp4"
} as const

const noInputMedia = (): ReadonlyArray<InputMedia.Field> => []
const noCharges = (): ReadonlyArray<Charge> => []

/** Builds one endpoint of a family. */
export const endpoint = <const F extends string, const O extends Operation, S extends AnyRequest>(
  spec: EndpointSpec<F, O, S>
): Endpoint<F, O, S> => ({
  ...spec,
  key: `${spec.family}/${spec.operation}`,
  path: `/${spec.family}/${spec.operation}`,
  models: spec.request.models,
  inputMedia: spec.inputMedia ?? noInputMedia
})

/** Builds a family: its endpoints and prices (every model priced), and the charges it measures while tasks run. */
export const make = <
  const F extends string,
  const Es extends readonly [Endpoint<F>, ...Array<Endpoint<F>>],
  P extends Schema.Struct.Fields & { readonly [M in Es[number]["models"][number]]: Schema.Schema.AnyNoContext }
>(family: {
  readonly name: F
  readonly endpoints: Es
  readonly prices: Prices<P>
  readonly charges?: Family<F, Es[number], P>["charges"]
}): Family<F, Es[number], P> => ({
  name: family.name,
  endpoints: family.endpoints,
  models: Arr.dedupe(family.endpoints.flatMap((endpoint) => endpoint.models)),
  prices: family.prices,
  charges: family.charges ?? noCharges
})

/** Every endpoint of a registry, in registry order. */
export const endpointsOf = <R extends Registry>(registry: R): Arr.NonEmptyReadonlyArray<EndpointOf<R>> =>
  Arr.flatMap(registry, (family): Arr.NonEmptyReadonlyArray<EndpointOf<R>> => family.endpoints)

/** The endpoint of a key in a registry, or undefined. */
export const findEndpoint = (registry: Registry, key: string): Endpoint | undefined =>
  endpointsOf(registry).find((endpoint) => endpoint.key === key)

/** The family of an endpoint key (`vendor1/text-to-video` → vendor1) in a registry, or undefined. */
export const familyOf = (registry: Registry, key: string): Any | undefined =>
  registry.find((family) => family.endpoints.some((endpoint) => endpoint.key === key))
