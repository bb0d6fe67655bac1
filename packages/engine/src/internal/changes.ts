/**
 * An account's change stream (`TaskService.changes`, `GET /api/v1/tasks/events`): its tasks' changes read from the
 * storage's changes index every `every` ms, oldest first, each task's state sent once.
 *
 * Changes are ordered by `changed_at` (the storage clock at the write) and the task id. A write may commit a little
 * after the time it records (a transaction, a batch waiting its turn, another node's clock), so each read looks
 * {@link lookbackMs} behind the latest change it has seen; what it has seen (a task's id and change time) is
 * remembered for that long and not sent again. Only the index entries of known changes are read again.
 */
import type * as Services from "@mediagate/contract/Services"
import type * as Task from "@mediagate/contract/Task"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ChangeKey, ChangePage, ChangeQuery } from "../TaskReads.js"
import type { TaskRecord } from "../TaskRecord.js"

/** How far behind the latest change seen each read looks, for writes that commit after the time they record. */
export const lookbackMs = 5_000

/** The most changes one read covers (a stream catching up reads page after page, as its client takes them). */
const pageSize = 500

/** A change's event id: its time (epoch ms), `.`, the task id. */
export const changeId = (key: ChangeKey): string => `${key.changedAt}.${key.id}`

/** The time of a change's event id (`Last-Event-ID`), or undefined when it is not one. */
export const changeTimeOf = (id: string | undefined): number | undefined => {
  const match = id === undefined ? null : /^(\d{1,15})\.task_[0-9A-Za-z]{1,64}$/.exec(id)
  return match === null ? undefined : Number(match[1])
}

interface Round {
  /** The lower bound of the current read round. */
  readonly since: number
  /** The latest change time read so far. */
  readonly latest: number
  /** Within a round of several pages: the key after which the next page starts. */
  readonly next: ChangeKey | undefined
  /** Whether the next read is the stream's first (no wait before it). */
  readonly first: boolean
  /**
   * Whether the next read is of the first round of a stream that starts now: its changes older than the start are
   * recorded as known without being sent.
   */
  readonly silent: boolean
}

/**
 * The stream of an account's changes: after `after` (a change time: a resumed stream sends the changes from
 * {@link lookbackMs} before it on, some of which its client may have), or from now on (without one, or with one
 * later than now).
 */
export const stream = <E>(options: {
  readonly read: (page: Pick<ChangeQuery, "since" | "after" | "known" | "limit">) => Effect.Effect<ChangePage, E>
  readonly present: (task: TaskRecord) => Effect.Effect<Task.Task, E>
  readonly after: number | undefined
  readonly every: number
}): Stream.Stream<Services.TaskChange, E> =>
  Stream.unwrap(Effect.map(Clock.currentTimeMillis, (now) => {
    // each task's change time already sent or passed over (by id); entries older than the look-back are dropped
    const known = new Map<string, number>()
    const isKnown = (key: ChangeKey) => known.get(key.id) === key.changedAt
    // a change time from the future (a made-up id) starts from now, as no id does
    const after = options.after !== undefined && options.after <= now ? options.after : undefined
    const start: Round = { since: 0, latest: after ?? now, next: undefined, first: true, silent: after === undefined }
    const wait = Effect.sleep(Duration.millis(options.every))
    return Stream.unfoldChunkEffect(start, (round) => {
      const since = round.next === undefined ? Math.max(0, round.latest - lookbackMs) : round.since
      return (round.first || round.next !== undefined ? Effect.void : wait).pipe(
        Effect.zipRight(options.read({ since, after: round.next, known: isKnown, limit: pageSize })),
        Effect.flatMap((page) =>
          Effect.map(
            Effect.forEach(
              round.silent ? page.items.filter((task) => (task.changedAt ?? 0) >= now) : page.items,
              (task) =>
                Effect.map(options.present(task), (read) => ({
                  id: changeId({ changedAt: task.changedAt ?? 0, id: task.id }),
                  task: read
                }))
            ),
            (changes) => {
              let latest = round.latest
              for (const key of page.keys) {
                known.set(key.id, key.changedAt)
                if (key.changedAt > latest) latest = key.changedAt
              }
              if (page.next === undefined) {
                for (const [id, at] of known) if (at < latest - lookbackMs) known.delete(id)
              }
              const next: Round = {
                since,
                latest,
                next: page.next,
                first: false,
                silent: round.silent && page.next !== undefined
              }
              return Option.some([Chunk.unsafeFromArray(changes), next] as const)
            }
          )
        )
      )
    })
  }))
