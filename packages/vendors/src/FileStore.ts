/**
 * Result files: where they are stored ({@link FileStore}, with a local-disk implementation), how their URLs are
 * signed ({@link UrlSigner}), and the `FileService` port of the HTTP layer built from both ({@link layerFileService}).
 *
 * - Keys are relative paths such as `tasks/<taskId>/video-0.mp4`: segments of `[A-Za-z0-9_.~-]` separated by `/`,
 *   none empty or starting with `.` (so no `..`, no hidden or temporary files), no leading `/`, no NUL, no `\`,
 *   at most 512 characters. Such keys never escape the store's directory and need no escaping in a URL.
 * - The content type is a function of the key's extension ({@link contentTypeOf}); `put` refuses a content type that
 *   the extension would not give back, so what is served is always what was stored (no metadata next to the files).
 * - Writes are atomic: a temporary file in the same directory, then a rename. Keys are meant to be written once;
 *   writing a key again replaces the file atomically.
 * - URLs: `<publicBaseUrl>/files/<key>?expires=<unix seconds>&signature=<hex HMAC-SHA256 over "<key>:<expires>">`
 *   (decisions.md §3), checked in constant time when served.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Errors, Services } from "@mediagate/contract"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import { ResultLinks } from "@mediagate/engine/ResultLinks"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

// ---------------------------------------------------------------------------------------------------------------
// Keys and content types

/** A key the store refuses: it could escape the root, or it breaks the key rules. */
export class InvalidFileKey extends Data.TaggedError("InvalidFileKey")<{
  readonly key: string
  readonly message: string
}> {}

/** The storage failed (disk full, permissions, I/O). */
export class FileStoreError extends Data.TaggedError("FileStoreError")<{
  readonly operation: "put" | "open" | "read" | "remove"
  readonly key: string
  readonly message: string
  readonly cause?: unknown
}> {}

/** A byte range that no byte of the file satisfies (RFC 9110 §14.1.1). */
export class UnsatisfiableRange extends Data.TaggedError("UnsatisfiableRange")<{
  readonly key: string
  readonly size: number
}> {}

/** Longest key. */
export const maxKeyLength = 512

const segmentPattern = /^[A-Za-z0-9_~-][A-Za-z0-9_.~-]*$/

/** Why a key is refused, or `undefined` when it is valid. */
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

/** Whether a key is valid (see {@link keyProblem}). */
export const isValidKey = (key: string): boolean => keyProblem(key) === undefined

/** The segments of a valid key, or why it is refused. */
export const parseKey = (key: string): Effect.Effect<ReadonlyArray<string>, InvalidFileKey> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key.split("/"))
    : Effect.fail(new InvalidFileKey({ key, message: `file key ${JSON.stringify(key)}: ${problem}` }))
}

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

/** The content type a key is served with, from its extension (`application/octet-stream` when unknown). */
export const contentTypeOf = (key: string): string => {
  const name = key.slice(key.lastIndexOf("/") + 1)
  const dot = name.lastIndexOf(".")
  return (dot > 0 ? contentTypes[name.slice(dot + 1).toLowerCase()] : undefined) ?? "application/octet-stream"
}

const essence = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase()

// ---------------------------------------------------------------------------------------------------------------
// Byte ranges

/** A `Range` request before the file size is known: `bytes=<start>-[<end>]` or `bytes=-<suffix length>`. */
export type RangeRequest =
  | { readonly _tag: "FromTo"; readonly start: number; readonly end: number | undefined }
  | { readonly _tag: "Suffix"; readonly length: number }

/** A byte range of a file, both ends included. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

const toPosition = (digits: string): number | undefined => {
  if (digits === "") return undefined
  const value = Number(digits)
  return Number.isSafeInteger(value) ? value : undefined
}

/**
 * Parses a `Range` header. Only a single `bytes` range is understood; anything else (other units, several ranges,
 * bad syntax, `last < first`) gives `undefined`, and the whole file is served, as RFC 9110 allows.
 */
export const parseRangeHeader = (header: string | undefined): RangeRequest | undefined => {
  if (header === undefined) return undefined
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header)
  if (match === null) return undefined
  const [, first = "", last = ""] = match
  if (first === "") {
    const length = toPosition(last)
    return length === undefined ? undefined : { _tag: "Suffix", length }
  }
  const start = toPosition(first)
  if (start === undefined) return undefined
  const end = toPosition(last)
  if (last !== "" && (end === undefined || end < start)) return undefined
  return { _tag: "FromTo", start, end }
}

/** The bytes a range request selects in a file of `size` bytes, or `undefined` when none. */
export const resolveRange = (request: RangeRequest, size: number): ByteRange | undefined => {
  if (size === 0) return undefined
  if (request._tag === "Suffix") {
    return request.length === 0 ? undefined : { start: Math.max(0, size - request.length), end: size - 1 }
  }
  if (request.start >= size) return undefined
  return { start: request.start, end: Math.min(request.end ?? size - 1, size - 1) }
}

// ---------------------------------------------------------------------------------------------------------------
// The store

/** What `put` stored. */
export interface StoredFile {
  readonly key: string
  readonly size: number
  readonly contentType: string
}

/** An opened file: its size, type and a lazy stream of the requested bytes (the file is read while streamed). */
export interface OpenedFile {
  /** The whole file's size. */
  readonly size: number
  readonly contentType: string
  /** The selected range (or the whole file); reading starts when the stream is run. */
  readonly stream: Stream.Stream<Uint8Array, FileStoreError>
  /** Present when a range was requested and satisfiable. */
  readonly range?: ByteRange
}

/** Where result files live. */
export class FileStore extends Context.Tag("@mediagate/vendors/FileStore")<FileStore, {
  /** Stores `bytes` under `key` atomically (replacing any previous file). */
  readonly put: (
    key: string,
    bytes: Uint8Array,
    contentType: string
  ) => Effect.Effect<StoredFile, InvalidFileKey | FileStoreError>
  /** Opens a file, optionally a byte range of it; `None` when there is no such file. */
  readonly open: (
    key: string,
    range?: RangeRequest
  ) => Effect.Effect<Option.Option<OpenedFile>, InvalidFileKey | UnsatisfiableRange | FileStoreError>
  /** Removes a file (no-op when absent). */
  readonly remove: (key: string) => Effect.Effect<void, InvalidFileKey | FileStoreError>
}>() {}

const isNotFound = (error: unknown) =>
  typeof error === "object" && error !== null && "_tag" in error && error._tag === "SystemError" &&
  "reason" in error && error.reason === "NotFound"

/** The store on a local directory (created when missing), through `@effect/platform`'s `FileSystem`. */
export const makeLocal = (options: { readonly directory: string }) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const root = path.resolve(options.directory)
    yield* fs.makeDirectory(root, { recursive: true }).pipe(Effect.orDie)

    const failure = (operation: FileStoreError["operation"], key: string) => (cause: unknown) =>
      new FileStoreError({ operation, key, message: `file store: ${operation} ${key} failed`, cause })

    const locate = (key: string) => Effect.map(parseKey(key), (segments) => path.join(root, ...segments))

    const put = (key: string, bytes: Uint8Array, contentType: string) =>
      Effect.gen(function*() {
        const file = yield* locate(key)
        const served = contentTypeOf(key)
        if (essence(served) !== essence(contentType)) {
          return yield* new InvalidFileKey({
            key,
            message: `file key ${JSON.stringify(key)}: its extension serves ${served}, not ${contentType}`
          })
        }
        const directory = path.dirname(file)
        const temporary = path.join(directory, `.${path.basename(file)}.${randomBytes(8).toString("hex")}.tmp`)
        yield* fs.makeDirectory(directory, { recursive: true }).pipe(Effect.mapError(failure("put", key)))
        yield* fs.writeFile(temporary, bytes).pipe(
          Effect.zipRight(fs.rename(temporary, file)),
          Effect.mapError(failure("put", key)),
          Effect.tapError(() => Effect.ignore(fs.remove(temporary)))
        )
        return { key, size: bytes.byteLength, contentType: served }
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
        const opened: OpenedFile = selected === undefined
          ? { size, contentType: contentTypeOf(key), stream }
          : { size, contentType: contentTypeOf(key), stream, range: selected }
        return Option.some(opened)
      })

    const remove = (key: string) =>
      Effect.flatMap(locate(key), (file) =>
        fs.remove(file).pipe(
          Effect.catchIf(isNotFound, () => Effect.void),
          Effect.mapError(failure("remove", key))
        ))

    return FileStore.of({ put, open, remove })
  })

/** The local-disk store on `directory`. */
export const layerLocal = (options: { readonly directory: string }): Layer.Layer<
  FileStore,
  never,
  FileSystem.FileSystem | Path.Path
> => Layer.effect(FileStore, makeLocal(options))

/** The local-disk store under `<MEDIAGATE_DATA_DIR>/files` (data directory default `./data`, decisions.md §10). */
export const layerLocalConfig: Layer.Layer<FileStore, ConfigError.ConfigError, FileSystem.FileSystem | Path.Path> = Layer
  .effect(
    FileStore,
    Effect.gen(function*() {
      const dataDir = yield* Config.string("MEDIAGATE_DATA_DIR").pipe(Config.withDefault("./data"))
      const path = yield* Path.Path
      return yield* makeLocal({ directory: path.join(dataDir, "files") })
    })
  )

// ---------------------------------------------------------------------------------------------------------------
// Signed URLs

/** Default lifetime of a signed URL: 7 days. */
export const defaultTtlSeconds = 7 * 24 * 60 * 60

/** The outcome of checking a URL's signature. */
export type SignatureCheck = "valid" | "missing" | "invalid" | "expired"

/** Signs and checks file URLs. */
export class UrlSigner extends Context.Tag("@mediagate/vendors/UrlSigner")<UrlSigner, {
  /** The absolute URL of `key`, valid for `ttlSeconds` (default: the signer's) from now (Effect `Clock`). */
  readonly sign: (key: string, ttlSeconds?: number) => Effect.Effect<string>
  /** Whether `signature` is the signature of `key` until `expires` and `expires` has not passed. Constant-time. */
  readonly verify: (key: string, expires: string | undefined, signature: string | undefined) => Effect.Effect<boolean>
  /** Like {@link verify}, with the reason of a refusal. */
  readonly check: (
    key: string,
    expires: string | undefined,
    signature: string | undefined
  ) => Effect.Effect<SignatureCheck>
}>() {}

/** Settings of {@link layerSigner}. */
export interface SignerOptions {
  /** Absolute http(s) base of file URLs, e.g. `https://media.example.com` (a trailing `/` is dropped). */
  readonly publicBaseUrl: string
  /** The HMAC key (its UTF-8 bytes). */
  readonly secret: Redacted.Redacted<string>
  readonly defaultTtlSeconds?: number | undefined
}

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.search === "" && url.hash === ""
  } catch {
    return false
  }
}

/** The hex HMAC-SHA256 of `"<key>:<expires>"`. */
export const signatureOf = (secret: Redacted.Redacted<string>, key: string, expires: number): string =>
  createHmac("sha256", Redacted.value(secret)).update(`${key}:${expires}`).digest("hex")

/** Builds a signer (dies when the base URL is not an absolute http(s) URL or the TTL is not a positive integer). */
export const makeSigner = (options: SignerOptions): UrlSigner["Type"] => {
  if (!isHttpUrl(options.publicBaseUrl)) {
    throw new Cause.IllegalArgumentException(`publicBaseUrl ${options.publicBaseUrl}: must be an absolute http(s) URL`)
  }
  const ttlDefault = options.defaultTtlSeconds ?? defaultTtlSeconds
  if (!Number.isSafeInteger(ttlDefault) || ttlDefault <= 0) {
    throw new Cause.IllegalArgumentException(`defaultTtlSeconds ${ttlDefault}: must be a positive integer`)
  }
  const base = options.publicBaseUrl.replace(/\/+$/, "")
  const nowSeconds = Effect.map(Clock.currentTimeMillis, (millis) => Math.floor(millis / 1000))

  const check = (key: string, expires: string | undefined, signature: string | undefined) =>
    Effect.map(nowSeconds, (now): SignatureCheck => {
      if (expires === undefined || signature === undefined || expires === "" || signature === "") return "missing"
      if (!/^\d{1,15}$/.test(expires) || !/^[0-9a-f]{64}$/i.test(signature)) return "invalid"
      const expected = Buffer.from(signatureOf(options.secret, key, Number(expires)), "hex")
      if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) return "invalid"
      return Number(expires) < now ? "expired" : "valid"
    })

  return UrlSigner.of({
    sign: (key, ttlSeconds) =>
      Effect.map(nowSeconds, (now) => {
        const expires = now + Math.max(1, Math.floor(ttlSeconds ?? ttlDefault))
        const path = key.split("/").map(encodeURIComponent).join("/")
        return `${base}/files/${path}?expires=${expires}&signature=${signatureOf(options.secret, key, expires)}`
      }),
    verify: (key, expires, signature) => Effect.map(check(key, expires, signature), (result) => result === "valid"),
    check
  })
}

/** A signer with the given settings. */
export const layerSigner = (options: SignerOptions): Layer.Layer<UrlSigner> =>
  Layer.sync(UrlSigner, () => makeSigner(options))

/**
 * A signer from Effect `Config`: `MEDIAGATE_PUBLIC_BASE_URL` (default `http://localhost:$PORT`, `PORT` default
 * 3000) and `MEDIAGATE_FILE_SECRET`. Without a secret, a random one is generated when the layer is built: URLs then
 * stop working when the process exits, and processes sharing a database do not accept each other's URLs (a
 * warning is logged). URLs last 7 days.
 */
export const layerSignerConfig: Layer.Layer<UrlSigner, ConfigError.ConfigError> = Layer.effect(
  UrlSigner,
  Effect.gen(function*() {
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    const publicBaseUrl = yield* Config.string("MEDIAGATE_PUBLIC_BASE_URL").pipe(
      Config.withDefault(`http://localhost:${port}`),
      Config.validate({ message: "must be an absolute http(s) URL without query", validation: isHttpUrl })
    )
    const configured = yield* Config.option(Config.redacted("MEDIAGATE_FILE_SECRET"))
    const secret = Option.isSome(configured) && Redacted.value(configured.value).length > 0
      ? configured.value
      : yield* Effect.as(
        Effect.logWarning(
          "MEDIAGATE_FILE_SECRET is not set: file URLs are signed with a random per-process secret and stop working when this process exits"
        ),
        Redacted.make(randomBytes(32).toString("hex"))
      )
    return makeSigner({ publicBaseUrl, secret, defaultTtlSeconds })
  })
)

// ---------------------------------------------------------------------------------------------------------------
// The FileService port

const denied: Record<Exclude<SignatureCheck, "valid">, string> = {
  missing: "file URL is not signed: the expires and signature query parameters are required",
  invalid: "file URL signature is invalid",
  expired: "file URL has expired"
}

const unavailable = (error: FileStoreError) => new Errors.ServiceUnavailable({ message: `file storage is unavailable (${error.operation})` })

/** The `FileService` port: signature check, then the file (or a range of it) with every response header. */
export const makeFileService = Effect.gen(function*() {
  const store = yield* FileStore
  const signer = yield* UrlSigner
  return Services.FileService.of({
    open: (key, query, rangeHeader) =>
      Effect.gen(function*() {
        const verdict = yield* signer.check(key, query.expires, query.signature)
        if (verdict !== "valid") return yield* new Errors.FileAccessDenied({ message: denied[verdict] })
        const notFound = new Errors.NotFound({ message: `file ${key} not found` })
        const opened = yield* store.open(key, parseRangeHeader(rangeHeader)).pipe(
          Effect.catchTags({
            InvalidFileKey: () => Effect.fail(notFound),
            UnsatisfiableRange: (e) =>
              Effect.fail(
                new Errors.RangeNotSatisfiable({
                  message: `range ${rangeHeader ?? ""} is not satisfiable: the file has ${e.size} bytes`
                })
              ),
            FileStoreError: (e) => Effect.fail(unavailable(e))
          })
        )
        if (Option.isNone(opened)) return yield* notFound
        const file = opened.value
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const headers: Record<string, string> = {
          "content-type": file.contentType,
          "accept-ranges": "bytes",
          "cache-control": `private, max-age=${Math.max(0, Number(query.expires) - now)}`,
          "x-content-type-options": "nosniff"
        }
        const body = Stream.mapError(file.stream, unavailable)
        if (file.range === undefined) {
          headers["content-length"] = String(file.size)
          return { status: 200 as const, headers, body }
        }
        headers["content-length"] = String(file.range.end - file.range.start + 1)
        headers["content-range"] = `bytes ${file.range.start}-${file.range.end}/${file.size}`
        return { status: 206 as const, headers, body }
      })
  })
})

/** The `FileService` port over the {@link FileStore} and {@link UrlSigner} in context. */
export const layerFileService: Layer.Layer<Services.FileService, never, FileStore | UrlSigner> = Layer.effect(
  Services.FileService,
  makeFileService
)

/**
 * Result links signed anew at read time (the engine's `ResultLinks`): every result URL that points at our
 * `/files/` route is signed again for the signer's default lifetime; other URLs are left as they are.
 */
export const layerResultLinks: Layer.Layer<ResultLinks, never, UrlSigner> = Layer.effect(
  ResultLinks,
  Effect.map(UrlSigner, (signer) => ({
    refresh: (items) =>
      Effect.forEach(items, (item) => {
        const url = URL.canParse(item.url) ? new URL(item.url) : undefined
        if (url === undefined || !url.pathname.startsWith("/files/") || !url.searchParams.has("signature")) {
          return Effect.succeed(item)
        }
        return Effect.map(signer.sign(decodeURIComponent(url.pathname.slice("/files/".length))), (fresh) => ({
          ...item,
          url: fresh
        }))
      })
  }))
)
