/**
 * The shape of a family: one upstream family (`vendorN`) and everything that defines it, in one folder
 * (`families/vendorN/`): its endpoints (request Schema with rules and defaults, a minimal example, the files a job
 * produces, the default estimate, the URL inputs fetched as input media), its prices (table entries, default
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

type PascalCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Capitalize<Head>}${PascalCase<Tail>}`
  : Capitalize<S>

/**
 * The HttpApi endpoint name of a family and operation: `vendor1` + `image-to-video` → `vendor1ImageToVideo`.
 *
 * @since 0.1.0
 * @category models
 */
export type EndpointName<F extends string, O extends string> = `${F}${PascalCase<O>}`

/**
 * The request Schema of any endpoint.
 *
 * @since 0.1.0
 * @category models
 */
export type AnyRequest = GenerationRequestSchema<any, any, any>

/**
 * What a family states about one of its endpoints (besides its operation and media type).
 *
 * @since 0.1.0
 * @category models
 */
export interface EndpointSpec<S extends AnyRequest> {
  /** The request Schema (`GenerationRequest.make`): field rules, per-model rules and defaults. */
  readonly request: S
  /** The smallest valid `input` for a model: documentation, and the seed of every table-driven test. */
  example(model: S["models"][number]): Record<string, unknown>
  /** The files a job of a (normalized) request produces; the simulated upstream renders exactly them. */
  outputs(request: AnyGenerationRequest): ReadonlyArray<Outputs.OutputSpec>
  /** Seconds a job usually takes, before recent durations of its model are known. */
  estimateSeconds(request: AnyGenerationRequest): number
  /** The URL inputs fetched and checked when a task runs, with their rules (none when absent). */
  inputMedia?(model: string): ReadonlyArray<InputMedia.Field>
}

/**
 * One generation endpoint of a family: `POST /api/v1/<family>/<operation>`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Endpoint<F extends string = string, O extends Operation = Operation, S extends AnyRequest = AnyRequest>
  extends EndpointSpec<S>
{
  readonly family: F
  readonly operation: O
  readonly mediaType: MediaType
  /** The HttpApi endpoint name, the method of the typed client: `vendor3` + `text-to-video` → `vendor3TextToVideo`. */
  readonly name: EndpointName<F, O>
  /** `<family>/<operation>`: the endpoint's key everywhere (tasks store it). */
  readonly key: `${F}/${O}`
  /** Path below `/api/v1`. */
  readonly path: `/${F}/${O}`
  /** The models the endpoint accepts, in the order of the specification. */
  readonly models: S["models"]
  inputMedia(model: string): ReadonlyArray<InputMedia.Field>
}

/**
 * A family's part of the price table (decisions.md §4).
 *
 * @since 0.1.0
 * @category models
 */
export interface Prices<P extends Schema.Struct.Fields = Schema.Struct.Fields> {
  /** The Schemas of the family's entries of the price table, one per model id. */
  readonly fields: P
  /** The family's default prices, in USD. */
  readonly defaults: Schema.Struct.Type<P>
  /** The price at accept, in integer micro-dollars, of a validated request (building blocks in `Pricing`). */
  price(endpoint: string, request: AnyGenerationRequest, table: Schema.Struct.Type<P>): number
}

/**
 * One family (built with {@link make}).
 *
 * @since 0.1.0
 * @category models
 */
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
  charges(
    endpoint: string,
    request: AnyGenerationRequest,
    measured: InputMedia.Measured,
    table: Schema.Struct.Type<P>
  ): ReadonlyArray<{ readonly amountMicros: number; readonly description: string }>
}

/**
 * Any family.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = Family<string, Endpoint, Schema.Struct.Fields>

/**
 * The registry: every family, in the order of the specification.
 *
 * @since 0.1.0
 * @category models
 */
export type Registry = readonly [Any, ...Array<Any>]

/**
 * The endpoints of a registry's families.
 *
 * @since 0.1.0
 * @category models
 */
export type EndpointOf<R extends Registry> = R[number]["endpoints"][number]

/**
 * The family words of a registry.
 *
 * @since 0.1.0
 * @category models
 */
export type NameOf<R extends Registry> = R[number]["name"]

/**
 * The model ids of a registry.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelOf<R extends Registry> = R[number]["models"][number]

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never

/**
 * The fields of the whole price table of a registry: every family's entries.
 *
 * @since 0.1.0
 * @category models
 */
export type PriceFields<R extends Registry> = UnionToIntersection<R[number]["prices"]["fields"]> extends
  infer F extends Schema.Struct.Fields ? F : never

/**
 * Values the families' examples use.
 *
 * @since 0.1.0
 * @category constants
 */
export const samples = {
  prompt: "a lighthouse at dawn",
  image: "https://example.com/frame.png",
  video: "https://example.com/clip.mp4"
} as const

/**
 * Builds one endpoint of a family: `POST /api/v1/<family>/<operation>` creating tasks of `mediaType`; `name` is the
 * family and the operation in camel case (`vendor3TextToVideo`, checked by the compiler).
 *
 * @since 0.1.0
 * @category constructors
 */
export const endpoint = <const F extends string, const O extends Operation, S extends AnyRequest>(
  family: F,
  operation: O,
  mediaType: MediaType,
  name: NoInfer<EndpointName<F, O>>,
  spec: EndpointSpec<S>
): Endpoint<F, O, S> => {
  const key = `${family}/${operation}` as const
  return {
    inputMedia: () => [],
    ...spec,
    family,
    operation,
    mediaType,
    name,
    key,
    path: `/${key}`,
    models: spec.request.models
  }
}

/**
 * Builds a family: its endpoints, its prices (every model priced) and the charges it measures (none by default).
 *
 * @since 0.1.0
 * @category constructors
 */
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
  charges: () => [],
  ...family,
  models: Arr.dedupe(family.endpoints.flatMap((endpoint) => endpoint.models))
})

/**
 * Every endpoint of a registry, in registry order.
 *
 * @since 0.1.0
 * @category utils
 */
export const endpointsOf = <R extends Registry>(registry: R): Arr.NonEmptyReadonlyArray<EndpointOf<R>> =>
  Arr.flatMap(registry, (family): Arr.NonEmptyReadonlyArray<EndpointOf<R>> => family.endpoints)

/**
 * The endpoint of a key in a registry, or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const findEndpoint = (registry: Registry, key: string): Endpoint | undefined =>
  endpointsOf(registry).find((endpoint) => endpoint.key === key)

/**
 * The family of an endpoint key in a registry, or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const familyOf = (registry: Registry, key: string): Any | undefined =>
  registry.find((family) => family.endpoints.some((endpoint) => endpoint.key === key))
