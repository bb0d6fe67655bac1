/**
 * The dispatcher's background loops: the fan-out loop (woken by the outbox's signals, polled as a backstop) and the
 * delivery loop (claims of due deliveries), sharing the send slots, the settles in batches and the storage clock
 * estimated in the process; both back off while the storage fails.
 */
import { TaskOutbox } from "@mediagate/engine/TaskOutbox"
import { TaskReads } from "@mediagate/engine/TaskReads"
import * as Backoff from "@mediagate/persistence/Backoff"
import * as GroupCommit from "@mediagate/persistence/GroupCommit"
import * as Ids from "@mediagate/persistence/Ids"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { hostname } from "node:os"
import { WebhookSender } from "../../Outbound.js"
import { WebhookStore } from "../../WebhookStore.js"
import type { ClaimedDelivery, Settle } from "../store/records.js"
import { attemptWith, type Recorder } from "./attempt.js"
import { fanOutPage, type KnownCursor } from "./fanOut.js"
import { defaultIdle, type DispatcherOptions, maxSettleBatch, resolve } from "./options.js"

/** Runs fan-out and delivery until the scope closes. */
export const run = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    const tasks = yield* TaskOutbox
    // the tasks' reads, when the engine is in context: an attempt's span continues the trace of its task's request
    const reads = yield* Effect.serviceOption(TaskReads)
    const resolved = resolve(options)
    const concurrency = Math.max(1, options.concurrency ?? 16)
    const leaseMs = Duration.toMillis(options.lease ?? resolved.timeoutMs + 30_000)
    const idleMs = Duration.toMillis(options.idle ?? defaultIdle)
    const deliveryIdleMs = Duration.toMillis(options.deliveryIdle ?? "1 second")
    const batchSize = options.batchSize ?? 500
    const owner = options.owner ?? `${hostname()}:${process.pid}:${Ids.ulid()}`
    const pokes = yield* Queue.sliding<void>(1)
    const poke = Queue.offer(pokes, undefined)
    const sends = yield* FiberSet.make<void, never>()
    let running = 0

    // the storage clock, estimated in the process: Effect's clock plus the offset to the storage clock measured
    // when the delivery loop runs out of work (and at the start), instead of a read before every claim and attempt
    let offset = 0
    const measure = Effect.flatMap(store.now, (storage) =>
      Effect.map(Clock.currentTimeMillis, (local) => {
        offset = storage - local
        return storage
      }))
    const storageNow = Effect.map(Clock.currentTimeMillis, (local) => Math.floor(local + offset))
    yield* Effect.ignore(measure)

    /**
     * The earliest retry this process scheduled since the delivery loop last asked the storage (`nextDueAt`):
     * while deliveries keep coming, the loop waits for it (or a poke) without asking.
     */
    let knownDue = Number.POSITIVE_INFINITY
    // attempts settle in batches: the outcomes of the sends that finish while one batch is written go in the next
    const settleBatch = GroupCommit.make(maxSettleBatch, (batch: ReadonlyArray<Settle>) =>
      Effect.flatMap(Effect.exit(store.settleAll(batch)), (exit) =>
        Exit.isSuccess(exit)
          ? Effect.succeed(exit.value.map((recorded) =>
            Exit.succeed(recorded)
          ))
          : batch.length === 1
          ? Effect.succeed([Exit.failCause(exit.cause)])
          // the batch failed as a whole: each on its own, so that one failure fails only its own settle
          : Effect.forEach(
            batch,
            (one) => Effect.exit(Effect.map(store.settleAll([one]), (answers) => answers[0] === true))
          )))
    const settleOne = yield* settleBatch
    const settleAndNote = (settle: Settle) =>
      Effect.tap(settleOne(settle), (recorded) =>
        Effect.suspend(() => {
          if (!recorded || settle.settlement.status !== "pending" || settle.settlement.nextAttemptAt >= knownDue) {
            return Effect.void
          }
          // a retry earlier than the loop knows of: it looks again (and waits for it)
          knownDue = settle.settlement.nextAttemptAt
          return poke
        }))
    /**
     * Outcomes being settled: a send frees its slot once its answer is in, and its settle completes in the
     * background (at most {@link maxSettleBatch} at once: the loop claims no more until they are written). An outcome
     * that could not be recorded is sent again when its lease runs out (at least once).
     */
    let settling = 0
    const recorder: Recorder = {
      now: storageNow,
      settle: (settle) =>
        Effect.suspend(() => {
          settling++
          return FiberSet.run(
            sends,
            settleAndNote(settle).pipe(
              Effect.catchAllCause((cause) =>
                Effect.logError(
                  `delivery ${settle.delivery.id}: the attempt was not recorded (sent again after its lease)`,
                  cause
                )
              ),
              Effect.asVoid,
              Effect.ensuring(Effect.suspend(() => settling-- >= maxSettleBatch ? poke : Effect.void))
            )
          )
        }).pipe(Effect.as(true))
    }
    const provide = <A, E>(effect: Effect.Effect<A, E, WebhookStore | WebhookSender | TaskOutbox>) =>
      effect.pipe(
        Effect.provideService(WebhookStore, store),
        Effect.provideService(WebhookSender, sender),
        Effect.provideService(TaskOutbox, tasks),
        Option.isSome(reads) ? Effect.provideService(TaskReads, reads.value) : (self) => self
      )

    // outbox signals (terminal transitions here, or on PostgreSQL anywhere): one waiting is enough; a signal that
    // arrives while a round reads is kept for the next wait, so none is lost
    const outboxPokes = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(Stream.runForEach(tasks.outboxWakeups, () => Queue.offer(outboxPokes, undefined)))
    /**
     * The wait before looking again while entries are held back (PostgreSQL: a transaction older than them still
     * runs, and may not be one that signals when it ends): 5 ms after a round that fanned something out (under
     * load, entries are held back by short transactions all the time), otherwise doubling up to 100 ms (a long
     * transaction: at most ten looks a second).
     */
    let heldBackMs = 0
    const cursor: KnownCursor = { known: false, value: undefined }
    /** The delivery loop waits for a free slot (a fan-out that reserved slots and used fewer pokes it). */
    let deliveryWaitsForSlot = false
    /** Send slots free now: below the concurrency, and below the most outcomes being settled. */
    const freeSlots = () => Math.min(concurrency - running, maxSettleBatch - settling)
    /**
     * Runs `effect` (a fan-out round or a claim) with `slots` send slots reserved, so that the two loops never
     * lease more than the concurrency between them; the slots it did not fill (`used`) are freed when it ends.
     */
    const reserving = <A, E>(slots: number, effect: Effect.Effect<A, E>, used: (done: A) => number) => {
      running += slots
      return Effect.onExit(effect, (exit) =>
        Effect.sync(() => {
          running -= slots - (Exit.isSuccess(exit) ? used(exit.value) : 0)
        }))
    }

    // a failure (storage unavailable) ends the round: the loop backs off (see the fibers below)
    const fanOutLoop = Effect.gen(function*() {
      // the deliveries a round creates are leased to this dispatcher as they are inserted, as many as it has free
      // slots (reserved for the round), and sent at once: no claim, no wake-up of the delivery loop
      const free = Math.max(0, freeSlots())
      const round = yield* reserving(
        free,
        provide(fanOutPage(batchSize, storageNow, cursor, free > 0 ? { owner, leaseMs, limit: free } : undefined)),
        (done) => done.leased.length
      )
      for (const delivery of round.leased) yield* FiberSet.run(sends, send(delivery))
      // the rest of the new deliveries are due now (the delivery loop claims them at once), and slots reserved
      // but not used may be what a full delivery loop waits for
      if (round.created > round.leased.length || (free > round.leased.length && deliveryWaitsForSlot)) yield* poke
      if (round.again) return
      if (round.heldBack) {
        heldBackMs = round.consumed > 0 ? 5 : Math.min(100, Math.max(5, heldBackMs * 2))
        return yield* Effect.race(Queue.take(outboxPokes), Effect.sleep(Duration.millis(Math.min(heldBackMs, idleMs))))
      }
      heldBackMs = 0
      // the poll is only the backstop of a lost signal
      yield* Effect.race(Queue.take(outboxPokes), Effect.sleep(Duration.millis(idleMs)))
    })

    // a send that frees a slot pokes the delivery loop if it waits for one (a full dispatcher; slots reserved by a
    // fan-out round count as taken)
    const send = (delivery: ClaimedDelivery) =>
      provide(attemptWith(delivery, resolved, recorder)).pipe(
        Effect.catchAllCause((cause) => Effect.logError(`delivery ${delivery.id} failed`, cause)),
        Effect.asVoid,
        Effect.ensuring(Effect.suspend(() => {
          running--
          return deliveryWaitsForSlot ? poke : Effect.void
        }))
      )

    const deliverLoop = Effect.gen(function*() {
      const free = freeSlots()
      if (free <= 0) {
        deliveryWaitsForSlot = true
        return yield* Effect.ensuring(
          Queue.take(pokes),
          Effect.sync(() => {
            deliveryWaitsForSlot = false
          })
        )
      }
      const now = yield* storageNow
      const claimed = yield* reserving(free, store.claimDue(owner, free, leaseMs, now), (done) => done.length)
      for (const delivery of claimed) yield* FiberSet.run(sends, send(delivery))
      // the claim took what was due (a full claim: the loop looks again at once)
      if (knownDue <= now) knownDue = Number.POSITIVE_INFINITY
      if (claimed.length >= free) return
      let wait: number
      if (claimed.length === 0) {
        // nothing due: the storage tells when something is (a retry of any process, a lease that runs out), and
        // the clock's offset is measured again
        const at = yield* measure
        const due = yield* store.nextDueAt
        knownDue = Number.POSITIVE_INFINITY
        wait = Option.match(due, {
          onNone: () => deliveryIdleMs,
          onSome: (dueAt) => Math.min(deliveryIdleMs, Math.max(0, dueAt - at))
        })
      } else {
        wait = Math.min(deliveryIdleMs, Math.max(0, knownDue - now))
      }
      if (wait > 0) yield* Effect.race(Queue.take(pokes), Effect.sleep(Duration.millis(wait)))
    })

    const fanOutFiber = yield* Effect.forkScoped(Backoff.loop("webhook fan-out", fanOutLoop, options.backoff))
    const deliverFiber = yield* Effect.forkScoped(Backoff.loop("webhook delivery claim", deliverLoop, options.backoff))
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(fanOutFiber)
        yield* Fiber.interrupt(deliverFiber)
        yield* Effect.interruptible(FiberSet.awaitEmpty(sends)).pipe(
          Effect.timeout(Duration.millis(resolved.timeoutMs + 1000)),
          Effect.ignore
        )
        yield* FiberSet.clear(sends)
        yield* store.releaseAll(owner).pipe(Effect.ignore)
      })
    )
  })
