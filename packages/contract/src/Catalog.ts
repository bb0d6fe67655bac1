/**
 * The model catalog: upstream families, generation endpoints, operations, models and media types.
 *
 * Everything that enumerates "which models exist where" reads this module; the request Schemas, the HttpApi
 * definition, the vendor layers and the permission checks all derive from it.
 *
 * @since 0.1.0
 */

/** Every upstream family word (used in paths, the `provider` field and model ids). */
export const families = [
  "vendor1",
  "vendor2",
  "vendor3",
  "vendor4",
  "vendor5",
  "vendor6",
  "vendor7",
  "vendor8",
  "vendor9"
] as const
/** An upstream family word. */
export type Family = typeof families[number]

/** The families that create generation tasks (vendor9 only lists voices). */
export const taskFamilies = [
  "vendor1",
  "vendor2",
  "vendor3",
  "vendor4",
  "vendor5",
  "vendor6",
  "vendor7",
  "vendor8"
] as const
/** A family that creates generation tasks; the `provider` of a task. */
export type TaskFamily = typeof taskFamilies[number]

/** Operation names: the `type` of a creation acknowledgement and the last segment of a generation path. */
export const operations = [
  "multimodal-video",
  "image-to-video",
  "text-to-video",
  "video-to-video",
  "text-to-image",
  "image-to-image"
] as const
/** An operation name. */
export type Operation = typeof operations[number]

/** Media types of a task (`type` of a task read). */
export const mediaTypes = ["video", "image", "audio", "music"] as const
/** A task's media type. */
export type MediaType = typeof mediaTypes[number]

/** Every model id, per family. */
export const models = {
  vendor1: [
    "vendor1-2",
    "vendor1-1-5-pro",
    "vendor1-1-0-pro",
    "vendor1-1-0-pro-fast",
    "vendor1-1-0-lite-i2v",
    "vendor1-1-0-lite-t2v"
  ],
  vendor2: ["vendor2-v3", "vendor2-v2-6"],
  vendor3: ["vendor3-3", "vendor3-3_fast"],
  vendor4: ["vendor4-5-0-lite", "vendor4-4-5", "vendor4-4-0", "vendor4-3-0-t2i"],
  vendor5: ["vendor5q3-pro", "vendor5q3-turbo"],
  vendor6: ["vendor6-2"],
  vendor7: ["vendor7-imagine/text-to-video"],
  vendor8: ["vendor8/2-6-text-to-video", "vendor8/2-6-image-to-video", "vendor8/2-6-video-to-video"]
} as const satisfies Record<TaskFamily, ReadonlyArray<string>>

/** A model id of any family. */
export type ModelId = typeof models[TaskFamily][number]

/** Every model id in one list. */
export const modelIds: ReadonlyArray<ModelId> = Object.values(models).flat()

/** The static description of one generation endpoint. */
export interface EndpointInfo {
  /** Stable key, `<family>/<operation>`. */
  readonly key: string
  /** Name of the endpoint in the HttpApi (and in the derived client). */
  readonly name: string
  readonly family: TaskFamily
  readonly operation: Operation
  readonly mediaType: MediaType
  /** Path below `/api/v1`. */
  readonly path: `/${string}`
  /** The models this endpoint accepts, in the order of the specification. */
  readonly models: readonly [ModelId, ...Array<ModelId>]
}

/** `image-to-video` → `ImageToVideo`, at the type level. */
type PascalCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Capitalize<Head>}${PascalCase<Tail>}`
  : Capitalize<S>

/** The HttpApi endpoint name of a family and operation: `vendor1` + `image-to-video` → `vendor1ImageToVideo`. */
export type EndpointName<F extends string, O extends string> = `${F}${PascalCase<O>}`

/** The static description of one endpoint, with its literal types. */
export interface EndpointOf<
  F extends TaskFamily,
  O extends Operation,
  T extends MediaType,
  M extends readonly [ModelId, ...Array<ModelId>]
> extends EndpointInfo {
  readonly key: `${F}/${O}`
  readonly name: EndpointName<F, O>
  readonly family: F
  readonly operation: O
  readonly mediaType: T
  readonly path: `/${F}/${O}`
  readonly models: M
}

const endpoint = <
  const F extends TaskFamily,
  const O extends Operation,
  const T extends MediaType,
  const M extends readonly [typeof models[F][number], ...Array<typeof models[F][number]>]
>(family: F, operation: O, mediaType: T, endpointModels: M): EndpointOf<F, O, T, M> => ({
  key: `${family}/${operation}`,
  name: (family + operation.split("-").map((w) => w[0]!.toUpperCase() + w.slice(1)).join("")) as EndpointName<F, O>,
  family,
  operation,
  mediaType,
  path: `/${family}/${operation}`,
  models: endpointModels
})

/** The 15 generation endpoints of the specification. */
export const endpoints = {
  "vendor1/multimodal-video": endpoint("vendor1", "multimodal-video", "video", ["vendor1-2"]),
  "vendor1/image-to-video": endpoint("vendor1", "image-to-video", "video", [
    "vendor1-1-5-pro",
    "vendor1-1-0-pro",
    "vendor1-1-0-pro-fast",
    "vendor1-1-0-lite-i2v"
  ]),
  "vendor1/text-to-video": endpoint("vendor1", "text-to-video", "video", [
    "vendor1-1-5-pro",
    "vendor1-1-0-pro",
    "vendor1-1-0-pro-fast",
    "vendor1-1-0-lite-t2v"
  ]),
  "vendor2/image-to-video": endpoint("vendor2", "image-to-video", "video", ["vendor2-v3", "vendor2-v2-6"]),
  "vendor2/text-to-video": endpoint("vendor2", "text-to-video", "video", ["vendor2-v3", "vendor2-v2-6"]),
  "vendor3/text-to-video": endpoint("vendor3", "text-to-video", "video", ["vendor3-3", "vendor3-3_fast"]),
  "vendor4/text-to-image": endpoint("vendor4", "text-to-image", "image", [
    "vendor4-5-0-lite",
    "vendor4-4-5",
    "vendor4-4-0",
    "vendor4-3-0-t2i"
  ]),
  "vendor4/image-to-image": endpoint("vendor4", "image-to-image", "image", [
    "vendor4-5-0-lite",
    "vendor4-4-5",
    "vendor4-4-0"
  ]),
  "vendor5/image-to-video": endpoint("vendor5", "image-to-video", "video", ["vendor5q3-pro", "vendor5q3-turbo"]),
  "vendor5/text-to-video": endpoint("vendor5", "text-to-video", "video", ["vendor5q3-pro", "vendor5q3-turbo"]),
  "vendor6/image-to-image": endpoint("vendor6", "image-to-image", "image", ["vendor6-2"]),
  "vendor7/text-to-video": endpoint("vendor7", "text-to-video", "video", ["vendor7-imagine/text-to-video"]),
  "vendor8/text-to-video": endpoint("vendor8", "text-to-video", "video", ["vendor8/2-6-text-to-video"]),
  "vendor8/image-to-video": endpoint("vendor8", "image-to-video", "video", ["vendor8/2-6-image-to-video"]),
  "vendor8/video-to-video": endpoint("vendor8", "video-to-video", "video", ["vendor8/2-6-video-to-video"])
} as const

/** Key of a generation endpoint, `<family>/<operation>`. */
export type EndpointKey = keyof typeof endpoints

/** All generation endpoints in specification order. */
export const endpointList: ReadonlyArray<EndpointInfo> = Object.values(endpoints)

/** The family a model id belongs to. */
export const familyOfModel = (model: string): TaskFamily | undefined =>
  taskFamilies.find((family) => (models[family] as ReadonlyArray<string>).includes(model))
