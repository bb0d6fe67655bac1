/**
 * The storage port of the request-rate limits (security.md "Rate limits"): fixed one-minute windows of named
 * counters (`key:<id>`, `account:<id>`, `admin:<address>`, ...), with the memory implementation. The SQL
 * implementation (`<prefix>rate_windows`, shared by every node on one PostgreSQL) lives in `@mediagate/accounts`.
 *
 * A window is identified by its start (epoch ms, a multiple of its length); a counter is only ever incremented, and
 * windows that ended are pruned by the store.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/**
 * One counter of one window.
 *
 * @since 0.1.0
 * @category models
 */
export interface WindowKey {
  readonly scope: string
  readonly windowStart: number
}

/**
 * Counters of fixed windows. A storage failure is a {@link RateWindowsUnavailable}.
 *
 * @since 0.1.0
 * @category services
 */
export class RateWindows extends Context.Tag("@mediagate/contract/RateWindows")<RateWindows, {
  /**
   * Counts one hit on each counter and answers each counter's count after it (including this hit and every hit of
   * other callers, on every node that shares the store), in the order given. Counters of one call are distinct.
   */
  readonly hit: (keys: ReadonlyArray<WindowKey>) => Effect.Effect<ReadonlyArray<number>, RateWindowsUnavailable>
  /** The current count of a counter, without counting (0 for an unknown one). */
  readonly peek: (key: WindowKey) => Effect.Effect<number, RateWindowsUnavailable>
  /** Whether the counters are shared by every node (a database), or this process's own. */
  readonly shared: boolean
}>() {}

/**
 * The store could not be reached (the limiter lets the request through and logs it).
 *
 * @since 0.1.0
 * @category errors
 */
export class RateWindowsUnavailable extends Schema.TaggedError<RateWindowsUnavailable>()("RateWindowsUnavailable", {
  cause: Schema.Unknown
}) {}

const keyOf = (key: WindowKey) => `${key.windowStart}\u0000${key.scope}`

/**
 * The memory store (one process): a map of counters; windows older than the newest one seen minus `keepMs`
 * (default two minutes) are dropped as new windows begin.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: { readonly keepMs?: number } = {}): RateWindows["Type"] => {
  const keep = options.keepMs ?? 120_000
  const counts = new Map<string, { readonly windowStart: number; n: number }>()
  let newest = 0
  const prune = (windowStart: number) => {
    if (windowStart <= newest) return
    newest = windowStart
    for (const [name, entry] of counts) if (entry.windowStart < newest - keep) counts.delete(name)
  }
  return {
    shared: false,
    hit: (keys) =>
      Effect.sync(() =>
        keys.map((key) => {
          prune(key.windowStart)
          const name = keyOf(key)
          const entry = counts.get(name)
          if (entry !== undefined) return ++entry.n
          counts.set(name, { windowStart: key.windowStart, n: 1 })
          return 1
        })
      ),
    peek: (key) => Effect.sync(() => counts.get(keyOf(key))?.n ?? 0)
  }
}

/**
 * The memory store as a layer, a fresh one per build: for one process (a single node, tests). A composition of
 * several nodes provides the shared store instead, or each node counts only its own requests.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<RateWindows> = Layer.sync(RateWindows, () => makeMemory())
