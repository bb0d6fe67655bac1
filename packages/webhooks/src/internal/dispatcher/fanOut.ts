/**
 * The fan-out: one page of the engine's outbox after the dispatcher's durable cursor turned into deliveries, in one
 * step with moving the cursor (`WebhookStore.fanOutLeased`).
 */
import { TaskOutbox } from "@mediagate/engine/TaskOutbox"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { WebhookStore } from "../../WebhookStore.js"
import type { ClaimedDelivery, FanOutLease } from "../store/records.js"

/**
 * Fans out one page of the outbox after the durable cursor; answers how many outbox entries it consumed (0 when
 * there were none, or when another dispatcher moved the cursor first).
 */
export const fanOutOnce = (batchSize = 100) =>
  Effect.flatMap(WebhookStore, (store) => Effect.map(fanOutPage(batchSize, store.now), (round) => round.consumed))

/**
 * The dispatcher's outbox cursor as this process last wrote or read it: the background loop does not read it
 * again after its own compare-and-set succeeded (a failed one, or a failure, makes it unknown: read again).
 */
export interface KnownCursor {
  known: boolean
  value: string | undefined
}

/** What one fan-out round found. */
export interface FanOutRound {
  /** Outbox entries fanned out. */
  readonly consumed: number
  /** Look again at once: the page was full, or another dispatcher moved the cursor first. */
  readonly again: boolean
  /** Entries are held back for now (see `OutboxPage.heldBack`): look again shortly. */
  readonly heldBack: boolean
  /** Deliveries created. */
  readonly created: number
  /** The deliveries created and leased to the caller (`WebhookStore.fanOutLeased`): to send now. */
  readonly leased: ReadonlyArray<ClaimedDelivery>
}

export const fanOutPage = (
  batchSize: number,
  now: Effect.Effect<number, PersistenceError>,
  known?: KnownCursor,
  lease?: FanOutLease
) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const tasks = yield* TaskOutbox
    const cursor = known?.known === true ? known.value : yield* store.readCursor
    if (known !== undefined) {
      known.known = true
      known.value = cursor
    }
    const page = yield* tasks.readOutbox(cursor, batchSize)
    const heldBack = page.heldBack === true
    const none: FanOutRound = { consumed: 0, again: false, heldBack, created: 0, leased: [] }
    if (page.entries.length === 0 && page.cursor === cursor) return none
    // unknown until the compare-and-set is known to have moved it (a failure may or may not have committed)
    if (known !== undefined) known.known = false
    const done = yield* store.fanOutLeased(cursor, page.cursor, page.entries, yield* now, lease)
    if (known !== undefined && Option.isSome(done)) {
      known.known = true
      known.value = page.cursor
    }
    return Option.isSome(done)
      ? { ...done.value, consumed: page.entries.length, again: page.entries.length >= batchSize, heldBack }
      : { ...none, again: true }
  })
