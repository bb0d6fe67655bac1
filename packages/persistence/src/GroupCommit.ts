/**
 * Group commit: calls made while a write is under way queue up, and one fiber runs them together (up to `max` at
 * a time), so that a burst of writes costs one transaction instead of one each. An idle batcher runs a call at
 * once: batching adds no latency, it only takes what is already waiting.
 *
 * The fiber lives in the scope of its creator; a call waiting when that scope closes is interrupted. Used by the
 * engine (accepts, steps, finishes) and the webhook dispatcher (delivery outcomes).
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/** A call waiting in a batch. */
interface Waiting<I, A, E> {
  readonly input: I
  readonly done: Deferred.Deferred<A, E>
}

/**
 * A batcher: `run` gets the inputs of one batch (in call order, at least one) and answers one exit per input, in
 * the same order. `run` must not fail; a defect or an interruption of a batch fails every call in it. With
 * `fibers` above 1, that many batches may run at once (each takes what is waiting when it starts): for writes
 * bound by round trips rather than by one connection, e.g. on a PostgreSQL pool.
 */
export const make = <I, A, E, R>(
  max: number,
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, never, R>,
  fibers = 1
): Effect.Effect<(input: I) => Effect.Effect<A, E>, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Waiting<I, A, E>>()
    const batch = (waiting: ReadonlyArray<Waiting<I, A, E>>) =>
      run(waiting.map((w) => w.input)).pipe(
        Effect.flatMap((exits) =>
          Effect.forEach(waiting, (w, i) => {
            const exit = exits[i]
            return Deferred.done(w.done, exit ?? Exit.die(new Error("group commit: no answer for a call")))
          }, { discard: true })
        ),
        // an interrupted or broken batch answers every call it held that is still waiting
        Effect.onExit((exit) =>
          Exit.isSuccess(exit)
            ? Effect.void
            : Effect.forEach(waiting, (w) => Deferred.failCause(w.done, exit.cause), { discard: true })
        )
      )
    const batcher = Effect.forever(
      Effect.flatMap(Queue.takeBetween(queue, 1, max), (chunk) => batch(Chunk.toReadonlyArray(chunk)))
    )
    for (let i = 0; i < fibers; i++) yield* Effect.forkScoped(batcher)
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) =>
        Effect.forEach(rest, (w) => Deferred.interrupt(w.done), { discard: true })).pipe(Effect.zipRight(Queue.shutdown(queue)))
    )
    return (input: I) =>
      Effect.flatMap(Deferred.make<A, E>(), (done) => Effect.zipRight(Queue.offer(queue, { input, done }), Deferred.await(done)))
  })
