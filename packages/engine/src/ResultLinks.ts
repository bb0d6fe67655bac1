/**
 * Fresh links to result files at read time. Stored results carry the URLs signed when the task finished; the
 * vendors' `ResultLinks` signs them anew on every read, so a link read today works for its full lifetime whenever
 * the task finished. {@link layerAsStored} returns stored URLs as they are (an upstream whose links never expire).
 *
 * @since 0.1.0
 */
import type { Task } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Signs result links anew.
 *
 * @since 0.1.0
 * @category services
 */
export class ResultLinks extends Context.Tag("@mediagate/engine/ResultLinks")<ResultLinks, {
  readonly refresh: (items: ReadonlyArray<Task.ResultItem>) => Effect.Effect<ReadonlyArray<Task.ResultItem>>
}>() {}

/**
 * Result links returned as they were stored.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAsStored: Layer.Layer<ResultLinks> = Layer.succeed(ResultLinks, { refresh: Effect.succeed })
