/**
 * One result copy for every transport: the files an upstream says a job produced are copied into our file store
 * and served under our signed URLs (clients never see an upstream's URL, which may expire within the hour).
 *
 * - **Guarded**: every upstream-given URL goes through the outbound guard (`PinnedHttp.stream`): addresses checked
 *   when the name is resolved, the connection pinned to the checked address, every redirect checked again. The
 *   channel's own hosts (its `base_url`'s, and the operator's `result_hosts`) are trusted as they are; any other host
 *   must resolve to public addresses. The upstream's credentials (`headers`) are only sent to the first host.
 * - **Streamed**: a download past 256 KiB goes on into a temporary file on the disk as it comes and is moved into
 *   the store (`FileStore.putFile`), never held in memory, within the size cap whether or not the upstream sends
 *   `Content-Length`; a smaller one (an image, most often) is held and stored in one write (`FileStore.put`).
 * - **Off the worker**: a poll that finds a job done asks {@link ResultCopier.collect}: the copy runs on the copier's
 *   own fibers (at most `concurrency` downloads per process). The poll waits for it one short step (`inlineWait`,
 *   default 1 s): a copy done by then is the poll's answer, and the task ends in the same step. A longer copy goes
 *   on alone: the poll answers `Running` (progress 99), and the task id is reported on
 *   {@link ResultCopier.changes} when the copy ended, so the task is polled again and finishes. A slow download
 *   therefore holds a worker slot one short step at most. Its headers must come within the channel's timeout, no
 *   read may wait longer than that for a byte, and once it has run that long it must keep 16 KiB/s on average (a
 *   trickle gives its download slot up to the others and is tried again later); the whole copy ends by the task's
 *   deadline.
 * - **Retried**: a failed download is tried again after 1 s, 2 s, 4 s, ... 30 s while the task's deadline allows;
 *   then the copy fails (`PROVIDER_ERROR`, the task is refunded). A refused address, a file over the cap or a
 *   malformed `data:` URI fail at once: trying again cannot change them.
 * - **Idempotent**: the files get the task's keys (`tasks/<date>/<minute>/<task>-output-<n>.<ext>`). A copy that
 *   outlives the poll that started it stores a manifest (`...-copy-<job hash>.json`) before it is reported; the poll
 *   that follows, on another node or after a restart, finds it (the task is at 99%) and answers the copied files
 *   without copying again. A copy answered inline ends its task in the same step and needs none: a step lost there
 *   copies again under the same keys. A copy in flight on another node may be made twice (the last write wins).
 * - `data:` URIs (OpenAI's `b64_json`) are decoded and stored directly.
 *
 * @since 0.1.0
 */
import type { Task } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import type { JobState } from "@mediagate/engine/Upstream"
import type * as PinnedHttp from "@mediagate/outbound/PinnedHttp"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { mkdir, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { contentTypeOf, FileStore, resultKey, temporaryName } from "./FileStore.js"
import { CopyFailure, decodeDataUri, download } from "./internal/resultCopy/download.js"
import { formatOfType, formatOfUrl, keyName, normalFormat, sniffFormat } from "./internal/resultCopy/formats.js"
import type { ResultSource } from "./Mapping.js"
import { UrlSigner } from "./UrlSigner.js"

export {
  /**
   * The format of a file from its first bytes, when they say.
   *
   * @since 0.1.0
   * @category utils
   */
  sniffFormat
} from "./internal/resultCopy/formats.js"

/**
 * The rules one channel's copies follow.
 *
 * @since 0.1.0
 * @category models
 */
export interface CopyPolicy {
  /** Host names (lower case) whose result URLs may be private addresses: the channel's own. */
  readonly trustedHosts: ReadonlyArray<string>
  /** Allow private addresses everywhere (development and tests: `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE`). */
  readonly allowPrivate: boolean
  /** The channel's timeout: until the headers, and between two reads of the body. */
  readonly timeoutMs: number
  /** Largest file, bytes. */
  readonly maxBytes: number
  /** DNS resolver (tests). */
  readonly lookup?: PinnedHttp.Resolver | undefined
  /** A download slower than this on average, once it ran the timeout, is dropped and tried again. Default 16 KiB/s. */
  readonly minBytesPerSecond?: number | undefined
}

/**
 * What the upstream reported a job ran and cost, kept with its copy.
 *
 * @since 0.1.0
 * @category models
 */
export interface JobUsage {
  readonly seconds?: number | undefined
  readonly costMicros?: number | undefined
}

/**
 * Where a copy stands.
 *
 * @since 0.1.0
 * @category models
 */
export type CopyState =
  | { readonly _tag: "Copying" }
  | { readonly _tag: "Copied"; readonly items: ReadonlyArray<Task.ResultItem>; readonly usage: JobUsage }
  | { readonly _tag: "Failed"; readonly message: string; readonly usage: JobUsage }

/**
 * Copies job results into the file store, off the worker (see the module's comment).
 *
 * @since 0.1.0
 * @category services
 */
export class ResultCopier extends Context.Tag("@mediagate/vendors/ResultCopier")<ResultCopier, {
  /**
   * The copy of a job's results: `Copied` once done (here or, through the manifest, on another node), `Failed` when
   * given up, `Copying` while it runs (started now when it does not). `usage`: what the upstream reported the job
   * ran and cost, answered with the copy.
   */
  readonly collect: (
    task: TaskRecord,
    jobId: string,
    sources: ReadonlyArray<ResultSource>,
    policy: CopyPolicy,
    usage?: JobUsage
  ) => Effect.Effect<CopyState>
  /**
   * A copy of this process that has ended (`Copied` or `Failed`), if any: the poll that the copy's end caused is
   * answered from it without asking the upstream again.
   */
  readonly ended: (task: TaskRecord, jobId: string) => CopyState | undefined
  /** Tasks whose copy just ended: polled again at once. */
  readonly changes: Stream.Stream<string>
  /** Downloads running or waiting now. */
  readonly active: Effect.Effect<number>
}>() {}

/** A usage as a job state's fields (none where the upstream reported nothing). */
const usageFields = (usage: JobUsage) => ({
  ...(usage.seconds === undefined ? {} : { seconds: usage.seconds }),
  ...(usage.costMicros === undefined ? {} : { costMicros: usage.costMicros })
})

/**
 * What a poll answers for a copy: `Running` at 99% while it runs; its end with the job's usage.
 *
 * @since 0.1.0
 * @category utils
 */
export const jobState = (state: CopyState): JobState =>
  state._tag === "Copied"
    ? { _tag: "Succeeded", result: state.items, ...usageFields(state.usage) }
    : state._tag === "Failed"
    ? { _tag: "Failed", code: "PROVIDER_ERROR", message: state.message, ...usageFields(state.usage) }
    : { _tag: "Running", progress: 99 }

/**
 * Settings of the copier.
 *
 * @since 0.1.0
 * @category models
 */
export interface CopierOptions {
  /** Downloads at once in this process. Default 16. */
  readonly concurrency?: number
  /** Where downloads are written before they are moved into the store. Default: the system's temporary directory. */
  readonly tempDirectory?: string
  /** Delay before the n-th retry (n from 0). Default 1 s × 2ⁿ, at most 30 s. */
  readonly retryDelay?: (attempt: number) => Duration.DurationInput
  /**
   * How long the poll that starts a copy waits for it before answering `Running` (the copy then goes on alone and
   * its end is reported on `changes`). Default 1 second; 0 answers at once.
   */
  readonly inlineWait?: Duration.DurationInput
}

/** The stored record of a finished copy (the files' keys, not their URLs: those are signed when answered). */
const Manifest = Schema.parseJson(Schema.Struct({
  items: Schema.Array(Schema.Struct({
    key: Schema.String,
    format: Schema.String,
    size_bytes: Schema.Number,
    duration: Schema.optionalWith(Schema.Number, { exact: true }),
    width: Schema.optionalWith(Schema.Number, { exact: true }),
    height: Schema.optionalWith(Schema.Number, { exact: true }),
    kind: Schema.optionalWith(Schema.Literal("output", "last_frame"), { exact: true })
  })),
  seconds: Schema.optionalWith(Schema.Number, { exact: true }),
  costMicros: Schema.optionalWith(Schema.Number, { exact: true })
}))
type Manifest = typeof Manifest.Type

const defaultRetryDelay = (attempt: number) => Duration.millis(Math.min(30_000, 1000 * 2 ** attempt))

const copying: CopyState = { _tag: "Copying" }

/**
 * Builds the copier; its fibers end with the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: CopierOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* FileStore
    const signer = yield* UrlSigner
    const scope = yield* Effect.scope
    const downloads = yield* Effect.makeSemaphore(options.concurrency ?? 16)
    const retryDelay = options.retryDelay ?? defaultRetryDelay
    const tempDirectory = options.tempDirectory ?? join(tmpdir(), "mediagate-downloads")
    yield* Effect.promise(() => mkdir(tempDirectory, { recursive: true }))
    const ended = yield* PubSub.unbounded<string>()
    const inlineWaitMs = Duration.toMillis(options.inlineWait ?? "1 second")
    /**
     * Copies by `<task>:<job>`: running, or ended (kept a while for the poll that follows). `waiter`: the poll that
     * started the copy while it still waits for it (the copy's end is its answer, nothing to report on `changes`).
     */
    const copies = new Map<string, { state: CopyState; at: number; waiter?: (state: CopyState) => void }>()
    let active = 0

    const manifestKey = (task: TaskRecord, jobId: string) =>
      resultKey(task, `copy-${createHash("sha256").update(jobId).digest("hex").slice(0, 20)}.json`)

    /** The items of a manifest, with fresh URLs. */
    const itemsOf = (manifest: Manifest) =>
      Effect.forEach(manifest.items, ({ key, ...item }) =>
        Effect.map(signer.sign(key), (url): Task.ResultItem => ({ ...item, url })))

    const readManifest = (task: TaskRecord, jobId: string) =>
      store.open(manifestKey(task, jobId)).pipe(
        Effect.flatMap(Option.match({
          onNone: () =>
            Effect.succeed(Option.none<Manifest>()),
          onSome: (opened) =>
            opened.stream.pipe(
              Stream.runFold("", (text, chunk) => text + Buffer.from(chunk).toString("utf8")),
              Effect.flatMap(Schema.decode(Manifest)),
              Effect.map(Option.some)
            )
        })),
        Effect.catchAll(() => Effect.succeed(Option.none<Manifest>()))
      )

    /** One attempt at one file: downloaded (or decoded), moved into the store under the task's key. */
    const copyOne = (task: TaskRecord, source: ResultSource, index: number, policy: CopyPolicy) =>
      Effect.gen(function*() {
        const isData = source.url.startsWith("data:")
        const temporary = join(tempDirectory, `${task.id}-${index}-${temporaryName()}.part`)
        const got = isData
          ? yield* decodeDataUri(source.url, policy.maxBytes)
          : yield* downloads.withPermits(1)(download(source, temporary, policy, task.deadlineAt)).pipe(
            // failed or interrupted (the task's deadline): the partial file goes
            Effect.onError(() => Effect.promise(() => rm(temporary, { force: true })))
          )
        const format = (source.format === undefined ? undefined : normalFormat(source.format)) ??
          formatOfType(source.contentType) ?? formatOfType(got.contentType) ?? sniffFormat(got.head) ??
          formatOfUrl(source.url) ?? "bin"
        const key = resultKey(task, keyName(index, source.kind, format))
        // the store serves by the key's extension
        const contentType = contentTypeOf(key)
        const stored = yield* (got.data !== undefined
          ? store.put(key, got.data, contentType)
          : store.putFile(key, temporary, contentType, got.bytes)).pipe(
            Effect.mapError((error) =>
              new CopyFailure({ message: `storing a result failed: ${error.message}`, final: false })
            )
          )
        return {
          key,
          format,
          size_bytes: stored.size,
          ...(source.duration === undefined ? {} : { duration: source.duration }),
          ...(source.width === undefined ? {} : { width: source.width }),
          ...(source.height === undefined ? {} : { height: source.height }),
          ...(source.kind === undefined ? {} : { kind: source.kind })
        }
      })

    /** Every file of a job, retried until the deadline allows no more: the manifest of the copy. */
    const copyAll = (
      task: TaskRecord,
      sources: ReadonlyArray<ResultSource>,
      policy: CopyPolicy,
      usage: JobUsage
    ) =>
      Effect.gen(function*() {
        if (sources.length === 0) {
          return yield* new CopyFailure({ message: "the upstream answered no result file", final: true })
        }
        // an attempt ends by the task's deadline however slowly its bytes come (each read only has to come within
        // the channel's timeout): the download's own watch ends it (no timer fiber per copy)
        const attempt = Effect.forEach(sources, (source, index) => copyOne(task, source, index, policy))
        let tries = 0
        for (;;) {
          const result = yield* Effect.either(attempt)
          if (result._tag === "Right") {
            return { items: result.right, ...usageFields(usage) } satisfies Manifest
          }
          const failure = result.left
          const wait = Duration.toMillis(retryDelay(tries++))
          const now = yield* Clock.currentTimeMillis
          // the next attempt must be able to end (one timeout) before the task's deadline
          if (failure.final || now + wait + policy.timeoutMs >= task.deadlineAt) {
            return yield* failure
          }
          yield* Effect.logWarning(`task ${task.id}: copying its result failed (${failure.message}); trying again`)
          yield* Effect.sleep(wait)
        }
      })

    /** Stores a copy's manifest (for other nodes' polls); a failure only costs them a copy of their own. */
    const storeManifest = (task: TaskRecord, jobId: string, manifest: Manifest) =>
      Schema.encode(Manifest)(manifest).pipe(
        Effect.orDie,
        Effect.flatMap((text) =>
          store.put(manifestKey(task, jobId), new TextEncoder().encode(text), "application/json")
        ),
        Effect.catchAll((error) =>
          Effect.logWarning(`task ${task.id}: storing its copy's manifest failed: ${error.message}`)
        )
      )

    const run = (
      id: string,
      task: TaskRecord,
      jobId: string,
      sources: ReadonlyArray<ResultSource>,
      policy: CopyPolicy,
      usage: JobUsage
    ) => {
      /**
       * A copy's end: the answer of the poll still waiting for it; otherwise kept for the poll that follows, with
       * the manifest stored first (a poll on another node finds it), and the task reported on `changes`.
       */
      const end = (state: CopyState, manifest?: Manifest): Effect.Effect<void> =>
        Effect.suspend(() => {
          const waiter = copies.get(id)?.waiter
          if (waiter !== undefined) {
            copies.set(id, { state, at: Date.now() })
            waiter(state)
            return Effect.void
          }
          return Effect.zipRight(
            manifest === undefined ? Effect.void : storeManifest(task, jobId, manifest),
            Effect.suspend(() => {
              copies.set(id, { state, at: Date.now() })
              return PubSub.publish(ended, task.id)
            })
          )
        })
      return Effect.suspend(() => {
        active++
        return copyAll(task, sources, policy, usage)
      }).pipe(
        Effect.flatMap((manifest) => Effect.map(itemsOf(manifest), (items) => ({ manifest, items }))),
        Effect.matchCauseEffect({
          onSuccess: ({ items, manifest }) => end({ _tag: "Copied", items, usage }, manifest),
          onFailure: (cause) => {
            const failure = cause._tag === "Fail" ? cause.error : undefined
            const message = `copying the upstream's result failed: ${failure?.message ?? "unexpected error"}`
            return Effect.zipRight(
              Effect.logWarning(`task ${task.id}: ${message}`),
              end({ _tag: "Failed", message, usage })
            )
          }
        }),
        Effect.ensuring(Effect.sync(() => active--))
      )
    }

    // ended copies are kept 10 minutes for the poll that follows (a poll after that finds the manifest)
    yield* Effect.forkScoped(Effect.repeat(
      Effect.sync(() => {
        const now = Date.now()
        for (const [id, entry] of copies) {
          if (entry.state._tag !== "Copying" && now - entry.at > 600_000) copies.delete(id)
        }
      }),
      Schedule.spaced("1 minute")
    ))

    const collect: ResultCopier["Type"]["collect"] = (task, jobId, sources, policy, usage = {}) =>
      Effect.gen(function*() {
        const id = `${task.id}:${jobId}`
        const known = copies.get(id)
        if (known !== undefined) return known.state
        // a manifest is only stored for a copy that outlived the poll that started it, which then answered `Running`
        // at 99: a task at less has none to find
        const manifest = task.progress >= 99 ? yield* readManifest(task, jobId) : Option.none<Manifest>()
        if (Option.isSome(manifest)) {
          const { items, ...reported } = manifest.value
          return { _tag: "Copied", items: yield* itemsOf({ items }), usage: reported } as const
        }
        copies.set(id, { state: copying, at: Date.now() })
        yield* Effect.forkIn(run(id, task, jobId, sources, policy, usage), scope)
        if (inlineWaitMs <= 0) return { _tag: "Copying" } as const
        // the copy's end, or `Copying` after the inline wait (a timer and a callback: no fiber of its own); no longer
        // waited for (timed out or interrupted), the copy's end is reported on `changes`
        return yield* Effect.async<CopyState>((resume) => {
          const entry = copies.get(id)
          if (entry === undefined || entry.state._tag !== "Copying") {
            return resume(Effect.succeed(entry?.state ?? copying))
          }
          const detach = () => {
            clearTimeout(timer)
            const current = copies.get(id)
            if (current?.waiter !== undefined) copies.set(id, { state: current.state, at: current.at })
          }
          const timer = setTimeout(() => {
            detach()
            resume(Effect.succeed(copying))
          }, inlineWaitMs)
          copies.set(id, {
            ...entry,
            waiter: (state) => {
              clearTimeout(timer)
              resume(Effect.succeed(state))
            }
          })
          return Effect.sync(detach)
        })
      })

    return ResultCopier.of({
      collect,
      ended: (task, jobId) => {
        const state = copies.get(`${task.id}:${jobId}`)?.state
        return state === undefined || state._tag === "Copying" ? undefined : state
      },
      changes: Stream.fromPubSub(ended),
      active: Effect.sync(() => active)
    })
  })

/**
 * The copier as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: CopierOptions = {}): Layer.Layer<ResultCopier, never, FileStore | UrlSigner> =>
  Layer.scoped(ResultCopier, make(options))

/**
 * The copier from Effect `Config`: downloads under `<MEDIAGATE_DATA_DIR>/tmp/downloads` (the data directory's file
 * system, so a finished download is renamed into the local store), `MEDIAGATE_RESULT_COPY_CONCURRENCY` downloads at
 * once (default 16).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<ResultCopier, ConfigError.ConfigError, FileStore | UrlSigner> = Layer
  .unwrapEffect(
    Effect.map(
      Config.all({
        dataDir: Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data")),
        concurrency: Config.integer("MEDIAGATE_RESULT_COPY_CONCURRENCY").pipe(
          Config.withDefault(16),
          Config.validate({ message: "must be from 1 to 1000", validation: (n) => n >= 1 && n <= 1000 })
        )
      }),
      ({ concurrency, dataDir }) => layer({ concurrency, tempDirectory: join(dataDir, "tmp", "downloads") })
    )
  )
