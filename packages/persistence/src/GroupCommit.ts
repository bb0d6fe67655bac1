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

/** Resumes after the I/O callbacks of the event loop's current turn (`setImmediate`). */
const afterIo: Effect.Effect<void> = Effect.async<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/** A call waiting in a batch. */
interface Waiting<I, A, E> {
  readonly input: I
  readonly done: Deferred.Deferred<A, E>
}

/**
 * A batcher: `run` gets the inputs of one batch (in call order, at least one) and answers one exit per input, in
 * the same order. `run` must not fail; a defect or an interruption of a batch fails every call in it.
 *
 * - `fibers` above 1: that many batches may run at once (each takes what is waiting when it starts), for writes
 *   bound by round trips rather than by one connection, e.g. on a PostgreSQL pool.
 * - `partition` (with `fibers`): each fiber has a queue of its own and a call joins the queue of its partition
 *   (`partition(input)` modulo `fibers`): the calls of one partition are never in two batches at once, and a batch
 *   holds calls of one partition only. For batches that lock rows by a key (an account's), so that two batches
 *   running at once never wait for each other's rows: a key's calls make one batch at a time, as large as what
 *   waits, while other keys' batches run beside it.
 * - `gather`: a batch starts once the I/O that has already arrived is handled (the rest of the event loop's turn,
 *   `setImmediate`), so that the calls of requests that arrived together join it. For a `run` that is synchronous
 *   (SQLite): its fiber runs to the end without yielding, nothing is queued meanwhile, and without `gather` every
 *   batch would hold only the call that woke the batcher.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <I, A, E, R>(
  max: number,
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, never, R>,
  options: {
    readonly fibers?: number | undefined
    readonly gather?: boolean | undefined
    readonly partition?: ((input: I) => number) | undefined
  } = {}
): Effect.Effect<(input: I) => Effect.Effect<A, E>, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const fibers = Math.max(1, options.fibers ?? 1)
    const partition = options.partition
    const queues: Array<Queue.Queue<Waiting<I, A, E>>> = []
    for (let i = 0; i < (partition === undefined ? 1 : fibers); i++) {
      queues.push(yield* Queue.unbounded<Waiting<I, A, E>>())
    }
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
    const take = (queue: Queue.Queue<Waiting<I, A, E>>) =>
      options.gather === true
        ? Effect.flatMap(Queue.take(queue), (first) =>
          Effect.zipRight(
            afterIo,
            Effect.map(Queue.takeUpTo(queue, max - 1), (rest) => [first, ...Chunk.toReadonlyArray(rest)])
          ))
        : Effect.map(Queue.takeBetween(queue, 1, max), Chunk.toReadonlyArray)
    for (let i = 0; i < fibers; i++) {
      const queue = queues[i % queues.length]!
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(take(queue), batch)))
    }
    yield* Effect.addFinalizer(() =>
      Effect.forEach(queues, (queue) =>
        Effect.flatMap(Queue.takeAll(queue), (rest) =>
          Effect.forEach(rest, (w) =>
            Deferred.interrupt(w.done), { discard: true })).pipe(
            Effect.zipRight(Queue.shutdown(queue))
          ), { discard: true })
    )
    const queueOf = partition === undefined
      ? () =>
        queues[0]!
      : (input: I) =>
        queues[Math.abs(partition(input) | 0) % queues.length]!
    return (input: I) =>
      Effect.flatMap(
        Deferred.make<A, E>(),
        (done) => Effect.zipRight(Queue.offer(queueOf(input), { input, done }), Deferred.await(done))
      )
  })
