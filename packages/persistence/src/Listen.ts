/**
 * PostgreSQL wakeups that survive a lost `LISTEN` connection.
 *
 * The driver's `listen` stream does not end when its connection is lost (the database restarted, the backend
 * killed by `pg_terminate_backend`): it just stops delivering. So the listening process checks its own connection:
 * every `probeInterval` it sends a probe (`pg_notify(<channel>, 'probe')`, cheap and answered by whichever
 * connection listens); when nothing (probe or wakeup) has arrived for `deadline`, the connection is taken for lost,
 * the stream is closed (the driver releases the connection) and `LISTEN` is opened again on a new one, every
 * second until the database answers. Probes are never wakeups. Wakeups lost meanwhile cost latency only: workers
 * also look for due work on their idle backstop.
 *
 * The watchdog runs on wall-clock time (`Clock.make()`), not the fiber's clock: it watches a network connection,
 * and a test clock must not make it open and close connections.
 *
 * Used by the task storage (wakeups, outbox signals) and the channel store (channel changes).
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/**
 * The payload of a liveness probe (wakeups carry another one).
 *
 * @since 0.1.0
 * @category constants
 */
export const probePayload = "probe"

/** Nothing arrived on the `LISTEN` connection for the deadline. */
class ListenLost extends Data.TaggedError("ListenLost")<{ readonly silentMs: number }> {}

/**
 * Watchdog settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** How often a probe is sent. Default 2 s. */
  readonly probeInterval?: Duration.DurationInput
  /** Silence after which the connection is taken for lost. Default 2.5 × the probe interval. */
  readonly deadline?: Duration.DurationInput
}

/**
 * The notifications of `channel` (probes left out) as wakeups that never fail: `listen` is the driver's LISTEN,
 * `probe` sends a probe on `channel` (its failures are ignored: a silent connection is what counts).
 *
 * @since 0.1.0
 * @category utils
 */
export const wakeups = (
  listen: (channel: string) => Stream.Stream<string, SqlError>,
  probe: Effect.Effect<unknown, unknown>,
  channel: string,
  options: Options = {}
): Stream.Stream<void> => {
  const intervalMs = Duration.toMillis(options.probeInterval ?? "2 seconds")
  const deadlineMs = options.deadline === undefined ? Math.round(intervalMs * 2.5) : Duration.toMillis(options.deadline)
  const once = Stream.unwrap(Effect.sync(() => {
    let heard = Date.now()
    const notifications = listen(channel).pipe(
      Stream.tap(() => Effect.sync(() => (heard = Date.now()))),
      Stream.filter((payload) => payload !== probePayload),
      Stream.as<void>(undefined)
    )
    const watchdog = Effect.gen(function*() {
      for (;;) {
        yield* Effect.sleep(Duration.millis(intervalMs))
        yield* probe.pipe(Effect.timeout(Duration.millis(intervalMs)), Effect.ignore)
        const silentMs = Date.now() - heard
        if (silentMs > deadlineMs) return yield* new ListenLost({ silentMs })
      }
    }).pipe(Effect.withClock(Clock.make()))
    return Stream.merge(notifications, Stream.drain(Stream.fromEffect(watchdog)))
  }))
  return once.pipe(
    Stream.tapError((error) =>
      error._tag === "ListenLost"
        ? Effect.logWarning(
          `LISTEN ${channel}: nothing heard for ${error.silentMs} ms; listening again on a new connection`
        )
        : Effect.logDebug(`LISTEN ${channel} failed; trying again in 1 s`, error)
    ),
    // the driver may die releasing a lost connection (UNLISTEN on a closed client): a defect is retried too
    Stream.catchAllCause((cause) => Stream.fail(cause)),
    Stream.retry(Schedule.spaced(Duration.seconds(1))),
    Stream.catchAllCause(() => Stream.empty)
  )
}

/** The one method of the PostgreSQL client (`PgClient` of the driver) used here: LISTEN. */
interface Listener {
  readonly listen: (channel: string) => Stream.Stream<string, SqlError>
}

/** Whether a client can LISTEN (PostgreSQL's can), checked on the client so that no store loads the driver. */
const canListen = (client: SqlClient.SqlClient): client is SqlClient.SqlClient & Listener =>
  "listen" in client && typeof client.listen === "function"

/**
 * The {@link wakeups} of `channel` on `client` when it can LISTEN (PostgreSQL: the driver's client is one object
 * under both tags, `SqlClient` and `PgClient`, so the driver package stays optional for SQLite-only hosts), probed
 * through the same client; nothing on a client that cannot (SQLite).
 *
 * @since 0.1.0
 * @category utils
 */
export const notifications = (
  client: SqlClient.SqlClient,
  channel: string,
  options: Options = {}
): Stream.Stream<void> =>
  canListen(client)
    ? wakeups((name) => client.listen(name), client`SELECT pg_notify(${channel}, ${probePayload})`, channel, options)
    : Stream.empty

/**
 * Wakeups between the threads of one process, for a database that cannot LISTEN (SQLite: the production server
 * runs its workers on a worker thread, `@mediagate/node`'s `Server`): `post` reaches the {@link threadNotifications}
 * of `channel` on every other thread of the process (a `BroadcastChannel`; none in the posting thread itself, whose
 * wakeups are local). Posting when no thread listens costs a message to nobody. The channel is closed with the scope.
 *
 * @since 0.1.0
 * @category utils
 */
export const threadPoster = (channel: string): Effect.Effect<Effect.Effect<void>, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => unref(new BroadcastChannel(channel))),
      (broadcast) => Effect.sync(() => broadcast.close())
    ),
    (broadcast) => Effect.sync(() => broadcast.postMessage(0))
  )

/**
 * The wakeups other threads of the process post on `channel` ({@link threadPoster}), as a stream that never fails;
 * its `BroadcastChannel` keeps no process alive and is closed when the stream ends.
 *
 * @since 0.1.0
 * @category utils
 */
export const threadNotifications = (channel: string): Stream.Stream<void> =>
  Stream.async<void>((emit) => {
    const broadcast = unref(new BroadcastChannel(channel))
    broadcast.onmessage = () => void emit.single(undefined)
    return Effect.sync(() => broadcast.close())
  }, { bufferSize: 1, strategy: "sliding" })

/** A channel that keeps no process alive (Node's `BroadcastChannel.unref`, missing from the DOM type). */
const unref = (broadcast: BroadcastChannel): BroadcastChannel => {
  ;(broadcast as BroadcastChannel & { unref?: () => void }).unref?.()
  return broadcast
}
