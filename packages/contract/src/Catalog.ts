/**
 * The model catalog: upstream families, generation endpoints, operations, models and media types, derived from the
 * registry (`families/index.ts`). Everything that enumerates "which models exist where" reads this module.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Rec from "effect/Record"
import { registry } from "./families/index.js"
import { type EndpointOf, endpointsOf, type ModelOf, type NameOf } from "./Family.js"
import * as Records from "./internal/records.js"

/**
 * Operation names: the `type` of a creation acknowledgement and the last segment of a generation path.
 *
 * @since 0.1.0
 * @category constants
 */
export const operations = [
  "multimodal-video",
  "image-to-video",
  "text-to-video",
  "video-to-video",
  "text-to-image",
  "image-to-image"
] as const
/**
 * An operation name.
 *
 * @since 0.1.0
 * @category models
 */
export type Operation = typeof operations[number]

/**
 * Media types of a task (`type` of a task read).
 *
 * @since 0.1.0
 * @category constants
 */
export const mediaTypes = ["video", "image", "audio", "music"] as const
/**
 * A task's media type.
 *
 * @since 0.1.0
 * @category models
 */
export type MediaType = typeof mediaTypes[number]

/**
 * The families that create generation tasks, in registry order.
 *
 * @since 0.1.0
 * @category constants
 */
export const taskFamilies: Arr.NonEmptyReadonlyArray<TaskFamily> = Arr.map(registry, (family) => family.name)
/**
 * A family that creates generation tasks; the `provider` of a task.
 *
 * @since 0.1.0
 * @category models
 */
export type TaskFamily = NameOf<typeof registry>

/**
 * Every upstream family word (used in paths, the `provider` field and model ids): vendor9 only lists voices.
 *
 * @since 0.1.0
 * @category constants
 */
export const families = [...taskFamilies, "vendor9"] as const
/**
 * An upstream family word.
 *
 * @since 0.1.0
 * @category models
 */
export type Family = typeof families[number]

/**
 * A model id of any family.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelId = ModelOf<typeof registry>

/**
 * Every model id, per family.
 *
 * @since 0.1.0
 * @category constants
 */
export const models: { readonly [F in TaskFamily]: ReadonlyArray<ModelId> } = Rec.map(
  Records.indexBy(registry, (family) => family.name),
  (family) => family.models
)

/**
 * Every model id in one list.
 *
 * @since 0.1.0
 * @category constants
 */
export const modelIds = Records.nonEmpty<ModelId>(registry.flatMap((family) => family.models), "model ids")

/**
 * All generation endpoints in specification order.
 *
 * @since 0.1.0
 * @category constants
 */
export const endpointList = endpointsOf(registry)

/**
 * The generation endpoints by key (`<family>/<operation>`).
 *
 * @since 0.1.0
 * @category constants
 */
export const endpoints = Records.indexBy(endpointList, (endpoint) => endpoint.key)

/**
 * Key of a generation endpoint, `<family>/<operation>`.
 *
 * @since 0.1.0
 * @category models
 */
export type EndpointKey = EndpointOf<typeof registry>["key"]

/**
 * The family and operation of an endpoint key. A key of a larger registry (a test family) splits alike: the ports
 * type its parts as the registry's, as they type the key itself; the overload states that, no value is converted.
 *
 * @since 0.1.0
 * @category utils
 */
export function partsOf(key: EndpointKey): readonly [TaskFamily, Operation]
export function partsOf(key: string): readonly [string, string] {
  const slash = key.indexOf("/")
  return [key.slice(0, slash), key.slice(slash + 1)]
}
