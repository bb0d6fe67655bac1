/**
 * Fresh links to result files at read time. Stored results carry the URLs signed when the task finished; with a
 * `ResultLinks` service in context, task reads sign them anew, so a link read today works for its full lifetime
 * whenever the task finished. Without one, stored URLs are returned as they are.
 *
 * @since 0.1.0
 */
import type { Task } from "@mediagate/contract"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/** Signs result links anew. */
export class ResultLinks extends Context.Tag("@mediagate/engine/ResultLinks")<ResultLinks, {
  readonly refresh: (items: ReadonlyArray<Task.ResultItem>) => Effect.Effect<ReadonlyArray<Task.ResultItem>>
}>() {}
