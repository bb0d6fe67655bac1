/**
 * A fiber-local value changed for the run of an effect, more cheaply than `Effect.locally` (see {@link whileRunning}).
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

/**
 * `effect` with the fiber-local `ref` changed by `f` while it runs, and set back when it ends with a success or a
 * failure: `Effect.locally` without its uninterruptible acquire-use-release (a dozen more allocations and fiber
 * steps), for the envelope's own request-wide values (the request's log annotation, the request with its read
 * body). An interruption leaves the value as it is: the fiber it belongs to is ending (a request's fiber whose
 * client went away).
 */
export const whileRunning = <V, A, E, R>(
  ref: FiberRef.FiberRef<V>,
  f: (current: V) => V,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(FiberRef.getAndUpdate(ref, f), (before) => {
    const restore = FiberRef.set(ref, before)
    return Effect.matchCauseEffect(effect, {
      onSuccess: (answer) => Effect.as(restore, answer),
      onFailure: (cause) => Effect.zipRight(restore, Effect.failCause(cause))
    })
  })

/** Services by key, to add to a fiber's context. */
export type Services = ReadonlyArray<readonly [key: string, service: unknown]>

/**
 * `effect` with `services` added to the fiber's context while it runs: one copy of the context, where
 * `Effect.provideService` per service would make one each and a `locally` around it.
 */
export const withServices = <A, E, R>(services: Services, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  services.length === 0 ? effect : whileRunning(FiberRef.currentContext, (context) => {
    const map = new Map(context.unsafeMap)
    for (const [key, service] of services) map.set(key, service)
    return Context.unsafeMake(map)
  }, effect)
