/**
 * Where result files are stored: the {@link FileStore} port and its local-disk implementation (the S3-compatible one
 * is `S3FileStore`; URLs are signed by `UrlSigner`, files answered by `FileService`).
 *
 * - Keys are relative paths such as `tasks/2026-11-25/1305/<taskId>-output-0.mp4` ({@link resultKey}): segments of
 *   `[A-Za-z0-9_.~-]` separated by `/`, none empty or starting with `.` (so no `..`, no hidden or temporary files),
 *   no leading `/`, no NUL, no `\`, at most 512 characters. Such keys never escape the store's directory and need no
 *   escaping in a URL.
 * - The content type is a function of the key's extension ({@link contentTypeOf}); `put` refuses a content type that
 *   the extension would not give back, so what is served is always what was stored (no metadata next to the files).
 * - Writes are atomic: a temporary file in the same directory, then a rename. Keys are meant to be written once;
 *   writing a key again replaces the file atomically.
 * - Keys under {@link sharedPrefix} name files that many tasks' results share (the simulated upstream's renderings):
 *   the retention pruner leaves them.
 * - `open` reads a byte range ({@link RangeRequest}, parsed from the `Range` header by `FileService`) lazily.
 *
 * @since 0.1.0
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { rmdir } from "node:fs/promises"
import { basename, dirname, join } from "node:path"

/**
 * A key the store refuses: it could escape the root, or it breaks the key rules.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidFileKey extends Schema.TaggedError<InvalidFileKey>()("InvalidFileKey", {
  key: Schema.String,
  message: Schema.String
}) {}

/**
 * The storage failed (disk full, permissions, I/O).
 *
 * @since 0.1.0
 * @category errors
 */
export class FileStoreError extends Schema.TaggedError<FileStoreError>()("FileStoreError", {
  operation: Schema.Literal("put", "open", "read", "remove"),
  key: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * A byte range that no byte of the file satisfies (RFC 9110 §14.1.1).
 *
 * @since 0.1.0
 * @category errors
 */
export class UnsatisfiableRange extends Schema.TaggedError<UnsatisfiableRange>()("UnsatisfiableRange", {
  key: Schema.String,
  size: Schema.Number
}) {}

/**
 * Longest key.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxKeyLength = 512

const segmentPattern = /^[A-Za-z0-9_~-][A-Za-z0-9_.~-]*$/

/**
 * Why a key is refused, or `undefined` when it is valid.
 *
 * @since 0.1.0
 * @category utils
 */
export const keyProblem = (key: string): string | undefined => {
  if (key.length === 0) return "must not be empty"
  if (key.length > maxKeyLength) return `must be at most ${maxKeyLength} characters`
  if (key.includes("\0")) return "must not contain NUL"
  if (key.includes("\\")) return "must not contain a backslash"
  if (key.startsWith("/")) return "must be relative"
  for (const segment of key.split("/")) {
    if (segment === "." || segment === "..") return "must not contain . or .. segments"
    if (segment.length === 0) return "must not contain empty segments"
    if (!segmentPattern.test(segment)) return "segments are made of A-Z a-z 0-9 _ . ~ - and do not start with a dot"
  }
  return undefined
}

/**
 * The key of a task's result file: `tasks/<YYYY-MM-DD>/<HHMM>/<taskId>-<name>`, by the minute (UTC) the task was
 * created. One directory per minute of tasks, not one per task: on a local disk a task's files then cost no
 * directory of their own (an inode and a block each, and the slowest part of writing them), and an operator can see
 * and move results by date. The same task always gets the same key (a file written again replaces itself).
 *
 * @since 0.1.0
 * @category utils
 */
export const resultKey = (task: { readonly id: string; readonly createdAt: number }, name: string): string => {
  const at = new Date(task.createdAt).toISOString() // 2026-11-25T13:05:09.123Z
  return `tasks/${at.slice(0, 10)}/${at.slice(11, 13)}${at.slice(14, 16)}/${task.id}-${name}`
}

/**
 * The folder of files that many tasks' results name (the simulated upstream's renderings, `Simulated.renderingKey`).
 *
 * @since 0.1.0
 * @category constants
 */
export const sharedPrefix = "simulated/"

/**
 * Whether a key names a file that many tasks' results share (under {@link sharedPrefix}): the retention pruner
 * never removes one with a task's results.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSharedKey = (key: string): boolean => key.startsWith(sharedPrefix)

/**
 * Whether a key is valid (see {@link keyProblem}).
 *
 * @since 0.1.0
 * @category guards
 */
export const isValidKey = (key: string): boolean => keyProblem(key) === undefined

const contentTypes: Readonly<Record<string, string>> = {
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  m4a: "audio/mp4",
  json: "application/json",
  txt: "text/plain; charset=utf-8"
}

/**
 * The content type a key is served with, from its extension (`application/octet-stream` when unknown).
 *
 * @since 0.1.0
 * @category utils
 */
export const contentTypeOf = (key: string): string => {
  const name = key.slice(key.lastIndexOf("/") + 1)
  const dot = name.lastIndexOf(".")
  return (dot > 0 ? contentTypes[name.slice(dot + 1).toLowerCase()] : undefined) ?? "application/octet-stream"
}

const essence = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase()

/**
 * A `Range` request before the file size is known: `bytes=<start>-[<end>]` or `bytes=-<suffix length>`.
 *
 * @since 0.1.0
 * @category models
 */
export type RangeRequest =
  | { readonly _tag: "FromTo"; readonly start: number; readonly end: number | undefined }
  | { readonly _tag: "Suffix"; readonly length: number }

/**
 * A byte range of a file, both ends included.
 *
 * @since 0.1.0
 * @category models
 */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/**
 * The bytes a range request selects in a file of `size` bytes, or `undefined` when none.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveRange = (request: RangeRequest, size: number): ByteRange | undefined => {
  if (size === 0) return undefined
  if (request._tag === "Suffix") {
    return request.length === 0 ? undefined : { start: Math.max(0, size - request.length), end: size - 1 }
  }
  if (request.start >= size) return undefined
  return { start: request.start, end: Math.min(request.end ?? size - 1, size - 1) }
}

/**
 * What `put` stored.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredFile {
  readonly key: string
  readonly size: number
  readonly contentType: string
}

/**
 * An opened file: its size, type and a lazy stream of the requested bytes (the file is read while streamed).
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenedFile {
  /** The whole file's size. */
  readonly size: number
  readonly contentType: string
  /** The selected range (or the whole file); reading starts when the stream is run. */
  readonly stream: Stream.Stream<Uint8Array, FileStoreError>
  /** Present when a range was requested and satisfiable. */
  readonly range?: ByteRange
}

/**
 * Where result files live.
 *
 * @since 0.1.0
 * @category services
 */
export class FileStore extends Context.Tag("@mediagate/vendors/FileStore")<FileStore, {
  /** Stores `bytes` under `key` atomically (replacing any previous file). */
  readonly put: (
    key: string,
    bytes: Uint8Array,
    contentType: string
  ) => Effect.Effect<StoredFile, InvalidFileKey | FileStoreError>
  /**
   * Moves a local file (a download finished on this machine's disk) into the store under `key`, atomically; the
   * local file is gone afterwards, whether the move succeeded or not. Large files are never read into memory.
   */
  readonly putFile: (
    key: string,
    file: string,
    contentType: string,
    /** The file's size when the caller knows it (a download it just wrote): the store need not look. */
    size?: number
  ) => Effect.Effect<StoredFile, InvalidFileKey | FileStoreError>
  /** Opens a file, optionally a byte range of it; `None` when there is no such file. */
  readonly open: (
    key: string,
    range?: RangeRequest
  ) => Effect.Effect<Option.Option<OpenedFile>, InvalidFileKey | UnsatisfiableRange | FileStoreError>
  /** Removes a file (no-op when absent); the local store also removes its directory once empty. */
  readonly remove: (key: string) => Effect.Effect<void, InvalidFileKey | FileStoreError>
}>() {}

/**
 * A valid key as it is, or why it is refused (every store's keys follow {@link keyProblem}).
 *
 * @since 0.1.0
 * @category utils
 */
export const validKey = (key: string): Effect.Effect<string, InvalidFileKey> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key)
    : Effect.fail(new InvalidFileKey({ key, message: `file key ${JSON.stringify(key)}: ${problem}` }))
}

/**
 * Checks that a `put` may store `contentType` under `key` (a valid key whose extension serves that content type)
 * and answers the content type the key serves.
 *
 * @since 0.1.0
 * @category utils
 */
export const puttable = (key: string, contentType: string): Effect.Effect<string, InvalidFileKey> =>
  Effect.flatMap(validKey(key), () => {
    const served = contentTypeOf(key)
    return essence(served) === essence(contentType)
      ? Effect.succeed(served)
      : Effect.fail(
        new InvalidFileKey({
          key,
          message: `file key ${JSON.stringify(key)}: its extension serves ${served}, not ${contentType}`
        })
      )
  })

/** Whether an error is `@effect/platform`'s `SystemError` of `reason`. */
const hasReason = (reason: string) => (error: unknown) =>
  typeof error === "object" && error !== null && "_tag" in error && error._tag === "SystemError" &&
  "reason" in error && error.reason === reason

const isNotFound = hasReason("NotFound")

/** What the local-disk store needs from `@effect/platform`. */
type Platform = FileSystem.FileSystem | Path.Path

/**
 * The largest file the local store writes with synchronous calls (a temporary name, then a rename): a few system
 * calls into the page cache, cheaper than handing four to the thread pool; larger ones are written asynchronously.
 */
const smallFileBytes = 256 * 1024

/** Writes a small file on a temporary name in its directory (made when missing) and renames it into place. */
const putSmall = (file: string, bytes: Uint8Array): void => {
  const temporary = join(dirname(file), `.${basename(file)}.${temporaryName()}.tmp`)
  try {
    writeFileSync(temporary, bytes, { flag: "wx" })
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ENOENT") throw error
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(temporary, bytes, { flag: "wx" })
  }
  try {
    renameSync(temporary, file)
  } catch (error) {
    rmSync(temporary, { force: true })
    throw error
  }
}

/** This process's prefix of temporary names (random once), then a counter: unique without a random read each. */
const temporaryPrefix = randomBytes(6).toString("hex")
let temporaryCount = 0

/**
 * A name no other temporary file has: this process's random prefix and a counter.
 *
 * @since 0.1.0
 * @category utils
 */
export const temporaryName = (): string => `${temporaryPrefix}${(temporaryCount++).toString(36)}`

/**
 * The store on a local directory (created when missing), through `@effect/platform`'s `FileSystem`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeLocal = (options: { readonly directory: string }) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const root = path.resolve(options.directory)
    yield* fs.makeDirectory(root, { recursive: true }).pipe(Effect.orDie)

    const failure = (operation: FileStoreError["operation"], key: string) => (cause: unknown) =>
      new FileStoreError({ operation, key, message: `file store: ${operation} ${key} failed`, cause })

    /** The file of a key (its segments below the root). */
    const fileOf = (key: string) => path.join(root, ...key.split("/"))
    /** The file of a valid key, or why the key is refused. */
    const locate = (key: string) => Effect.map(validKey(key), fileOf)

    /** Makes `file` with `write` on a temporary name in its directory, then renames it into place. */
    const replace = (file: string, write: (temporary: string) => Effect.Effect<void, PlatformError>) => {
      const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${temporaryName()}.tmp`)
      return write(temporary).pipe(
        Effect.zipRight(fs.rename(temporary, file)),
        Effect.tapError(() => Effect.ignore(fs.remove(temporary)))
      )
    }

    /**
     * Runs `write`, which makes `file`; when that finds no directory (NotFound), makes the directory and runs `write`
     * again. Most writes go to a directory that is there already (results share a directory per minute): one system
     * call fewer than making the directory first every time.
     */
    const inDirectory = <A>(file: string, write: Effect.Effect<A, PlatformError>) =>
      Effect.catchIf(
        write,
        isNotFound,
        () => Effect.zipRight(fs.makeDirectory(path.dirname(file), { recursive: true }), write)
      )

    const put = (key: string, bytes: Uint8Array, contentType: string) =>
      Effect.gen(function*() {
        const served = yield* puttable(key, contentType)
        const file = fileOf(key)
        yield* (bytes.byteLength <= smallFileBytes
          ? Effect.try({ try: () => putSmall(file, bytes), catch: failure("put", key) })
          : inDirectory(file, replace(file, (temporary) => fs.writeFile(temporary, bytes))).pipe(
            Effect.mapError(failure("put", key))
          ))
        return { key, size: bytes.byteLength, contentType: served }
      })

    // a rename into place when the file is on the store's file system, else a copy on a temporary name renamed; the
    // source is removed unless the rename took it
    const putFile = (key: string, source: string, contentType: string, size?: number) =>
      Effect.suspend(() => {
        let renamed = false
        return Effect.gen(function*() {
          const served = yield* puttable(key, contentType)
          const file = fileOf(key)
          const moved = fs.rename(source, file).pipe(
            Effect.map(() => {
              renamed = true
            }),
            Effect.catchIf(
              (error) => !isNotFound(error),
              () => replace(file, (temporary) => fs.copyFile(source, temporary))
            )
          )
          yield* inDirectory(file, moved).pipe(Effect.mapError(failure("put", key)))
          const stored = size ?? Number((yield* fs.stat(file).pipe(Effect.mapError(failure("put", key)))).size)
          return { key, size: stored, contentType: served }
        }).pipe(Effect.ensuring(Effect.suspend(() => renamed ? Effect.void : Effect.ignore(fs.remove(source)))))
      })

    const open = (key: string, range?: RangeRequest) =>
      Effect.gen(function*() {
        const file = yield* locate(key)
        const info = yield* fs.stat(file).pipe(
          Effect.map(Option.some),
          Effect.catchIf(isNotFound, () => Effect.succeed(Option.none())),
          Effect.mapError(failure("open", key))
        )
        if (Option.isNone(info) || info.value.type !== "File") return Option.none<OpenedFile>()
        const size = Number(info.value.size)
        const selected = range === undefined ? undefined : resolveRange(range, size)
        if (range !== undefined && selected === undefined) return yield* new UnsatisfiableRange({ key, size })
        const stream = fs.stream(
          file,
          selected === undefined
            ? { chunkSize: 64 * 1024 }
            : { chunkSize: 64 * 1024, offset: selected.start, bytesToRead: selected.end - selected.start + 1 }
        ).pipe(Stream.mapError(failure("read", key)))
        const opened: OpenedFile = { size, contentType: contentTypeOf(key), stream }
        return Option.some(selected === undefined ? opened : { ...opened, range: selected })
      })

    /**
     * Removes a directory below the root, and then its parents, while they are empty (a pruned minute of results
     * leaves no directories behind). `rmdir` refuses a directory that is not empty in the same system call, so a file
     * written into it meanwhile is never removed with it.
     */
    const removeIfEmpty = (directory: string): Effect.Effect<void> =>
      directory === root || !directory.startsWith(root + path.sep)
        ? Effect.void
        : Effect.tryPromise(() => rmdir(directory)).pipe(
          Effect.matchEffect({ onFailure: () => Effect.void, onSuccess: () => removeIfEmpty(path.dirname(directory)) })
        )

    const remove = (key: string) =>
      Effect.flatMap(locate(key), (file) =>
        fs.remove(file).pipe(
          Effect.catchIf(isNotFound, () => Effect.void),
          Effect.mapError(failure("remove", key)),
          Effect.zipRight(removeIfEmpty(path.dirname(file)))
        ))

    return FileStore.of({ put, putFile, open, remove })
  })

/**
 * The local-disk store on `directory`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLocal = (options: { readonly directory: string }): Layer.Layer<FileStore, never, Platform> =>
  Layer.effect(FileStore, makeLocal(options))

/**
 * The local-disk store under `<MEDIAGATE_DATA_DIR>/files` (data directory default `./data`, decisions.md §10).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLocalConfig: Layer.Layer<FileStore, ConfigError.ConfigError, Platform> = Layer.effect(
  FileStore,
  Effect.gen(function*() {
    const dataDir = yield* Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data"))
    return yield* makeLocal({ directory: (yield* Path.Path).join(dataDir, "files") })
  })
)
