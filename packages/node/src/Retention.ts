/**
 * Retention (docs/operations.md "Retention"): what Mediagate deletes, when, and the storage quota of test keys.
 *
 * - **Result files** of tasks created more than `MEDIAGATE_RETENTION_RESULTS` ago (live keys, default 30 days) or
 *   `MEDIAGATE_RETENTION_TEST_RESULTS` ago (test keys, default 1 day) are deleted from the file store; the task
 *   keeps its result (URLs, sizes), and a URL of a deleted file answers `404 NOT_FOUND`. Tasks are walked in id
 *   (creation) order behind a cursor per environment ({@link RetentionCursors}, shared by every node), so each is
 *   handled once; the walk waits at a task that is still running.
 * - **Webhook deliveries** that are settled (succeeded or failed) and their attempt logs after
 *   `MEDIAGATE_RETENTION_DELIVERIES` (default 30 days); pending deliveries are never deleted.
 * - **Outbox rows** after `MEDIAGATE_RETENTION_OUTBOX` (default 7 days), and only those the webhook dispatcher's
 *   cursor has passed: an event not yet fanned out is never deleted.
 * - **Idempotency records** of API keys and webhook registrations past their 24-hour window (the engine's worker
 *   prunes the task ones itself).
 * - **Test storage quota** (`MEDIAGATE_TEST_STORAGE_QUOTA`, default 256 MiB per account): a test-key generation or
 *   retry of an account whose test-key result files (of tasks still inside the test retention) hold the quota or
 *   more is refused with `429 RATE_LIMITED` and `Retry-After`, until pruning frees space.
 *
 * The pruner is a scoped fiber ({@link layerPruner}) on every node that runs workers, every
 * `MEDIAGATE_RETENTION_INTERVAL` (default 10 minutes) from its start; several nodes pruning at once only repeat
 * each other's deletions. A retention of `0` or `off` keeps that data forever; a quota of `0` or `off` is none.
 *
 * @since 0.1.0
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { IdempotencyStore } from "@mediagate/accounts/Idempotency"
import { Errors, type Security, Services, Tracing } from "@mediagate/contract"
import { TaskOutbox } from "@mediagate/engine/TaskOutbox"
import { isTerminal } from "@mediagate/engine/TaskRecord"
import { TaskRetention } from "@mediagate/engine/TaskRetention"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as Ids from "@mediagate/persistence/Ids"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Durations from "@mediagate/vendors/Durations"
import { FileStore, type FileStoreError, isSharedKey } from "@mediagate/vendors/FileStore"
import { WebhookStore } from "@mediagate/webhooks/WebhookStore"
import * as Cache from "effect/Cache"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"

// -----------------------------------------------------------------------------------------------------------------
// settings
// -----------------------------------------------------------------------------------------------------------------

/**
 * Retention settings; a retention or quota of `undefined` is off (kept forever, no quota). Durations in ms.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly results: number | undefined
  readonly testResults: number | undefined
  readonly deliveries: number | undefined
  readonly outbox: number | undefined
  /** How often the pruner runs. */
  readonly interval: number
  /** Bytes of test-key result files per account. */
  readonly testStorageQuota: number | undefined
}

/**
 * The defaults of docs/configuration.md.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: Settings = {
  results: 30 * 86_400_000,
  testResults: 86_400_000,
  deliveries: 30 * 86_400_000,
  outbox: 7 * 86_400_000,
  interval: 10 * 60_000,
  testStorageQuota: 256 * 1024 ** 2
}

const isOff = (text: string) => /^\s*(0|off|never)\s*$/i.test(text)

/** A retention variable: a duration (`30d`, `12h`), or `0`/`off` to keep forever. */
const retention = (name: string, fallback: number | undefined): Config.Config<number | undefined> =>
  Config.string(name).pipe(
    Config.mapOrFail((text) =>
      isOff(text)
        ? Either.right(undefined)
        : Either.mapLeft(Durations.parseDuration(text), (message) =>
          ConfigError.InvalidData([name], `${message}, or 0/off to keep forever`))
    ),
    Config.withDefault(fallback)
  )

const units: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3
}

/**
 * A size in bytes: `268435456`, `256MiB`, `1GB`; `undefined` for `0`/`off`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseSize = (text: string): Either.Either<number | undefined, string> => {
  if (isOff(text)) return Either.right(undefined)
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?\s*$/i.exec(text)
  const bytes = match === null ? NaN : Number(match[1]) * units[(match[2] ?? "").toLowerCase()]!
  return Number.isFinite(bytes) && bytes >= 1
    ? Either.right(Math.floor(bytes))
    : Either.left(`"${text}" is not a size (write e.g. 268435456, 256MiB, 1GB, or 0/off for no quota)`)
}

/**
 * {@link Settings} from Effect `Config` (the `MEDIAGATE_RETENTION_*` and `MEDIAGATE_TEST_STORAGE_QUOTA` variables).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Settings> = Config.all({
  results: retention("MEDIAGATE_RETENTION_RESULTS", defaults.results),
  testResults: retention("MEDIAGATE_RETENTION_TEST_RESULTS", defaults.testResults),
  deliveries: retention("MEDIAGATE_RETENTION_DELIVERIES", defaults.deliveries),
  outbox: retention("MEDIAGATE_RETENTION_OUTBOX", defaults.outbox),
  interval: Durations.durationConfig("MEDIAGATE_RETENTION_INTERVAL", "10m"),
  testStorageQuota: Config.string("MEDIAGATE_TEST_STORAGE_QUOTA").pipe(
    Config.mapOrFail((text) =>
      Either.mapLeft(parseSize(text), (message) => ConfigError.InvalidData(["MEDIAGATE_TEST_STORAGE_QUOTA"], message))
    ),
    Config.withDefault(defaults.testStorageQuota)
  )
})

// -----------------------------------------------------------------------------------------------------------------
// cursors
// -----------------------------------------------------------------------------------------------------------------

/**
 * How far the result-file pruning has walked the tasks of each environment (the last task id handled).
 *
 * @since 0.1.0
 * @category services
 */
export class RetentionCursors extends Context.Tag("@mediagate/node/RetentionCursors")<RetentionCursors, {
  /** The cursor `name`, if it was ever written. */
  readonly read: (name: string) => Effect.Effect<string | undefined, PersistenceError>
  /** Moves the cursor `name` forward to `position` (never backwards: a slower node cannot undo a faster one). */
  readonly advance: (name: string, position: string) => Effect.Effect<void, PersistenceError>
}>() {}

/**
 * Cursors in memory (one process).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCursorsMemory: Layer.Layer<RetentionCursors> = Layer.sync(RetentionCursors, () => {
  const cursors = new Map<string, string>()
  return {
    read: (name) => Effect.sync(() => cursors.get(name)),
    advance: (name, position) =>
      Effect.sync(() => {
        const current = cursors.get(name)
        if (current === undefined || current < position) cursors.set(name, position)
      })
  }
})

const storeName = "retention storage"

/**
 * The table of the cursors under `prefix`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const tables = (prefix: string = SqlStore.defaultPrefix) => ({ cursors: `${prefix}retention_cursors` }) as const

/**
 * The table the retention migrations are recorded in: `<prefix>retention_migrations`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}retention_migrations`

/**
 * The retention migrations (SQLite and PostgreSQL).
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_retention_cursors": Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql.unsafe(`CREATE TABLE ${tables(prefix).cursors} (
  name TEXT PRIMARY KEY NOT NULL,
  position TEXT NOT NULL
)`)
    )
  }))

/**
 * Cursors on SQL (`<prefix>retention_cursors`), shared by every node of the database.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCursorsSql = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<RetentionCursors, SqlError | Migrator.MigrationError | PersistenceError, SqlClient.SqlClient> =>
  Layer.effect(
    RetentionCursors,
    Effect.gen(function*() {
      const { prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
      const persistence = SqlStore.persistence(storeName)
      const row = SqlRows.decoder(tables(prefix).cursors, Schema.Struct({ position: Schema.String }))
      return {
        read: (name) =>
          sql`SELECT position FROM ${t.cursors} WHERE name = ${name}`.pipe(
            Effect.flatMap(row.first),
            Effect.map((found) => found._tag === "Some" ? found.value.position : undefined),
            persistence("read")
          ),
        advance: (name, position) =>
          sql`INSERT INTO ${t.cursors} (name, position) VALUES (${name}, ${position})
            ON CONFLICT (name) DO UPDATE SET position = excluded.position
            WHERE ${t.cursors}.position < excluded.position`.pipe(Effect.asVoid, persistence("advance"))
      }
    })
  )

// -----------------------------------------------------------------------------------------------------------------
// pruning
// -----------------------------------------------------------------------------------------------------------------

/**
 * What one pruning run deleted.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  /** Tasks whose result files were deleted, and the files. */
  readonly resultTasks: number
  readonly resultFiles: number
  readonly deliveries: number
  readonly outbox: number
  readonly idempotency: number
}

/**
 * The file-store key of a result URL of ours (`.../files/<key>?expires&signature`), or `undefined`.
 *
 * @since 0.1.0
 * @category utils
 */
export const fileKeyOf = (url: string): string | undefined => {
  if (!URL.canParse(url)) return undefined
  const parsed = new URL(url)
  const at = parsed.pathname.indexOf("/files/")
  if (at < 0 || !parsed.searchParams.has("signature")) return undefined
  try {
    return decodeURIComponent(parsed.pathname.slice(at + "/files/".length))
  } catch {
    return undefined
  }
}

/** Tasks read per page of the result walk. */
const pageSize = 200

/**
 * The pruner's service: one run of every pruning (the scheduled fiber is {@link layerPruner}).
 *
 * @since 0.1.0
 * @category services
 */
export class Pruner extends Context.Tag("@mediagate/node/Pruner")<Pruner, {
  /** Runs every pruning once, with "now" from Effect's `Clock`. */
  readonly run: Effect.Effect<Report, PersistenceError | FileStoreError>
}>() {}

/**
 * Builds the pruner on the stores in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (settings: Settings) =>
  Effect.gen(function*() {
    const tasks = yield* TaskRetention
    const taskOutbox = yield* TaskOutbox
    const webhooks = yield* WebhookStore
    const keyIdempotency = yield* IdempotencyStore
    const files = yield* FileStore
    const cursors = yield* RetentionCursors

    /** Deletes the result files of the tasks of `environment` older than `retention` (off: none), behind the cursor. */
    const pruneResults = (environment: "live" | "test", retention: number | undefined, now: number) =>
      Effect.gen(function*() {
        if (retention === undefined) return { resultTasks: 0, resultFiles: 0 }
        const name = `results:${environment}`
        const bound = Ids.taskIdFloor(now - retention)
        let after = yield* cursors.read(name)
        let resultTasks = 0
        let resultFiles = 0
        while (true) {
          const page = yield* tasks.scanResults(environment, after, bound, pageSize)
          let last: string | undefined
          let waiting = false
          for (const task of page) {
            // a task still running keeps the walk here until it ends (it may yet write files)
            if (!isTerminal(task.status)) {
              waiting = true
              break
            }
            // a file that other tasks' results name too (a simulated rendering) stays
            const keys = (task.result ?? []).flatMap((item) => {
              const key = fileKeyOf(item.url)
              return key === undefined || isSharedKey(key) ? [] : [key]
            })
            for (const key of keys) {
              yield* files.remove(key).pipe(Effect.catchTag("InvalidFileKey", () => Effect.void))
            }
            if (keys.length > 0) resultTasks++
            resultFiles += keys.length
            last = task.id
          }
          if (last !== undefined) {
            yield* cursors.advance(name, last)
            after = last
          }
          if (waiting || page.length < pageSize) return { resultTasks, resultFiles }
        }
      })

    const run = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const live = yield* pruneResults("live", settings.results, now)
      const test = yield* pruneResults("test", settings.testResults, now)
      const deliveries = settings.deliveries === undefined
        ? 0
        : yield* webhooks.pruneDeliveries(now - settings.deliveries)
      const outbox = settings.outbox === undefined
        ? 0
        : yield* Effect.flatMap(webhooks.readCursor, (cursor) => taskOutbox.pruneOutbox(cursor, now - settings.outbox!))
      const windowStart = IdempotencyWindow.start(now)
      const idempotency = (yield* keyIdempotency.prune(windowStart)) + (yield* webhooks.pruneIdempotency(windowStart))
      const report: Report = {
        resultTasks: live.resultTasks + test.resultTasks,
        resultFiles: live.resultFiles + test.resultFiles,
        deliveries,
        outbox,
        idempotency
      }
      yield* Object.values(report).some((n) => n > 0)
        ? Effect.logInfo("retention: pruned", report)
        : Effect.logDebug("retention: nothing to prune")
      return report
    }).pipe(Tracing.span("Retention.prune"))
    return Pruner.of({ run })
  })

/**
 * The {@link Pruner} with the given settings (no fiber: run it yourself, e.g. in tests).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  settings: Settings
): Layer.Layer<
  Pruner,
  never,
  TaskRetention | TaskOutbox | WebhookStore | IdempotencyStore | FileStore | RetentionCursors
> => Layer.effect(Pruner, make(settings))

/**
 * The pruner running every `settings.interval` from its start, for the life of the layer's scope; a failed run is
 * logged and the next one tries again.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPruner = (
  settings: Settings
): Layer.Layer<
  never,
  never,
  TaskRetention | TaskOutbox | WebhookStore | IdempotencyStore | FileStore | RetentionCursors
> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const pruner = yield* make(settings)
    yield* Effect.forkScoped(
      pruner.run.pipe(
        Effect.catchAll((error) => Effect.logWarning("retention: pruning failed; trying again at the next run", error)),
        Effect.repeat(Schedule.spaced(settings.interval))
      )
    )
  }))

// -----------------------------------------------------------------------------------------------------------------
// test storage quota
// -----------------------------------------------------------------------------------------------------------------

/**
 * How long a measured usage is reused (bursts of test generations cost one query a second per account).
 *
 * @since 0.1.0
 * @category constants
 */
export const usageTtl = "1 second"

/**
 * The `TaskService` with the test storage quota in front of the one in context: a test-key `create` or `retry`
 * is refused with `429 RATE_LIMITED` (and `Retry-After`: the pruner's interval) while the account's test-key
 * result files hold `settings.testStorageQuota` bytes or more. Live keys are never refused by it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerQuota = (
  settings: Settings
): Layer.Layer<Services.TaskService, never, Services.TaskService | TaskRetention> =>
  Layer.effect(
    Services.TaskService,
    Effect.gen(function*() {
      const inner = yield* Services.TaskService
      const quota = settings.testStorageQuota
      if (quota === undefined) return inner
      const storage = yield* TaskRetention
      const usage = yield* Cache.make({
        capacity: 10_000,
        timeToLive: usageTtl,
        lookup: (accountId: string) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            storage.resultBytes(
              accountId,
              "test",
              settings.testResults === undefined ? "task_" : Ids.taskIdFloor(now - settings.testResults)
            ))
      })
      const retryAfter = Math.max(1, Math.ceil(settings.interval / 1000))
      const check = (principal: Security.Principal) =>
        principal.environment !== "test"
          ? Effect.void
          : usage.get(principal.accountId).pipe(
            Effect.catchTag(
              "PersistenceError",
              () => Effect.fail(new Errors.ServiceUnavailable({ message: "storage is unavailable; try again shortly" }))
            ),
            Effect.flatMap((used) =>
              used < quota ? Effect.void : Effect.zipRight(
                HttpApp.appendPreResponseHandler((_request, response) =>
                  Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(retryAfter)))
                ),
                Effect.fail(
                  new Errors.RateLimited({
                    message:
                      `test storage quota exceeded: the account's test-key result files use ${used} of ${quota} ` +
                      `bytes; test-key files are deleted ${
                        describe(settings.testResults)
                      } after their task was created ` +
                      `(use a live key, or retry in ${retryAfter} s)`
                  })
                )
              )
            )
          )
      return Services.TaskService.of({
        ...inner,
        create: (principal, command) => Effect.zipRight(check(principal), inner.create(principal, command)),
        retry: (principal, id, idempotencyKey) =>
          Effect.zipRight(check(principal), inner.retry(principal, id, idempotencyKey))
      })
    })
  )

const describe = (ms: number | undefined) =>
  ms === undefined
    ? "never"
    : ms % 86_400_000 === 0
    ? `${ms / 86_400_000} d`
    : ms % 3_600_000 === 0
    ? `${ms / 3_600_000} h`
    : `${Math.round(ms / 1000)} s`
