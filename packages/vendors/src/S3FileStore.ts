/**
 * The {@link FileStore} on an S3-compatible object store (AWS S3, MinIO, R2, Ceph, ...), through the AWS SDK v3
 * client, so that every node of a deployment serves the files any node's workers wrote.
 *
 * - Same keys, content types and range semantics as the local store: a key is validated by `keyProblem`, stored as
 *   the object `<prefix><key>` with the content type its extension gives; `open` reads the object's size
 *   (`HeadObject`), resolves the range with `resolveRange` and streams exactly those bytes with a ranged
 *   `GetObject` once the stream runs (the object is not downloaded first; an interrupted stream closes its socket).
 * - Objects are written in one `PutObject` (S3 writes are atomic: a reader sees the old or the new object).
 * - The SDK is an optional peer dependency ({@link sdk}), loaded and its client constructed only when this store is
 *   built (the local store never loads it); without it the build fails with a `MissingPackage` naming the install line.
 *   Credentials: `MEDIAGATE_S3_ACCESS_KEY_ID`/`MEDIAGATE_S3_SECRET_ACCESS_KEY` when given, otherwise the SDK's own
 *   chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, shared config files, instance roles, ...).
 *
 * @since 0.1.0
 */
import { OptionalPackage } from "@mediagate/contract"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createReadStream } from "node:fs"
import { rm, stat } from "node:fs/promises"
import {
  contentTypeOf,
  FileStore,
  FileStoreError,
  keyProblem,
  type OpenedFile,
  puttable,
  type RangeRequest,
  resolveRange,
  UnsatisfiableRange,
  validKey
} from "./FileStore.js"

/**
 * Settings of the S3 store.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly bucket: string
  /** Prepended to every key (e.g. `mediagate/`), to share a bucket; default none. */
  readonly prefix?: string | undefined
  /** e.g. `us-east-1` (default `us-east-1`; any value for most S3-compatible servers). */
  readonly region?: string | undefined
  /** The service's URL for S3-compatible servers (`http://127.0.0.1:9000`); default AWS. */
  readonly endpoint?: string | undefined
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), which most S3-compatible servers need. Default false. */
  readonly forcePathStyle?: boolean | undefined
  /** Explicit credentials; default the SDK's chain (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, roles, ...). */
  readonly credentials?: {
    readonly accessKeyId: string
    readonly secretAccessKey: Redacted.Redacted<string>
  } | undefined
}

/**
 * The AWS SDK's S3 client: an optional peer dependency of `@mediagate/vendors`, needed by this store only.
 *
 * @since 0.1.0
 * @category constants
 */
export const sdk: OptionalPackage.Spec = { feature: "MEDIAGATE_FILE_STORE=s3", name: "@aws-sdk/client-s3", range: "^3" }

/** Whether an SDK error says that the object (or the bucket) does not exist. */
const isMissing = (error: unknown) => {
  if (typeof error !== "object" || error === null) return false
  const name = "name" in error ? String(error.name) : ""
  const status = "$metadata" in error
    ? (error.$metadata as { httpStatusCode?: number } | undefined)?.httpStatusCode
    : undefined
  return name === "NotFound" || name === "NoSuchKey" || status === 404
}

/**
 * Builds the store on a client of its own (destroyed with the scope); checks that the bucket answers.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const s3 = yield* OptionalPackage.load(sdk, () => import("@aws-sdk/client-s3"))
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new s3.S3Client({
          region: options.region ?? "us-east-1",
          ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
          forcePathStyle: options.forcePathStyle ?? false,
          ...(options.credentials === undefined ? {} : {
            credentials: {
              accessKeyId: options.credentials.accessKeyId,
              secretAccessKey: Redacted.value(options.credentials.secretAccessKey)
            }
          })
        })
      ),
      (client) => Effect.sync(() => client.destroy())
    )
    const bucket = options.bucket
    const prefix = options.prefix ?? ""

    const failure = (operation: FileStoreError["operation"], key: string) => (cause: unknown) =>
      new FileStoreError({
        operation,
        key,
        message: `file store (s3): ${operation} ${key} failed: ${
          cause instanceof Error ? cause.message : String(cause)
        }`,
        cause
      })

    const send = <A>(operation: FileStoreError["operation"], key: string, call: (signal: AbortSignal) => Promise<A>) =>
      Effect.tryPromise({ try: call, catch: failure(operation, key) })

    /** The object of a valid key, or why the key is refused. */
    const locate = (key: string) => Effect.map(validKey(key), (valid) => `${prefix}${valid}`)

    // fail fast (and retry the start) when the bucket is not there or the credentials are refused
    yield* send("open", "", (abortSignal) => client.send(new s3.HeadBucketCommand({ Bucket: bucket }), { abortSignal }))
      .pipe(
        Effect.mapError((error) =>
          new FileStoreError({
            operation: "open",
            key: "",
            message: `file store (s3): bucket ${bucket} does not answer: ${error.message}`,
            cause: error.cause
          })
        )
      )

    const put = (key: string, bytes: Uint8Array, contentType: string) =>
      Effect.gen(function*() {
        const served = yield* puttable(key, contentType)
        const object = `${prefix}${key}`
        yield* send("put", key, (abortSignal) =>
          client.send(
            new s3.PutObjectCommand({
              Bucket: bucket,
              Key: object,
              Body: bytes,
              ContentType: served,
              ContentLength: bytes.byteLength
            }),
            { abortSignal }
          ))
        return { key, size: bytes.byteLength, contentType: served }
      })

    // the file's bytes streamed from the disk, with their length known: one PutObject, nothing held in memory
    const putFile = (key: string, file: string, contentType: string, known?: number) =>
      Effect.gen(function*() {
        const served = yield* puttable(key, contentType)
        const size = known ?? (yield* send("put", key, () => stat(file).then((info) => info.size)))
        yield* send("put", key, (abortSignal) =>
          client.send(
            new s3.PutObjectCommand({
              Bucket: bucket,
              Key: `${prefix}${key}`,
              Body: createReadStream(file),
              ContentType: served,
              ContentLength: size
            }),
            { abortSignal }
          ))
        return { key, size, contentType: served }
      }).pipe(Effect.ensuring(Effect.promise(() => rm(file, { force: true }))))

    /** The bytes `start..end` of an object, requested when the stream runs; the response is closed with it. */
    const read = (key: string, object: string, start: number, end: number): Stream.Stream<Uint8Array, FileStoreError> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const output = yield* Effect.acquireRelease(
          send("read", key, (abortSignal) =>
            client.send(
              new s3.GetObjectCommand({ Bucket: bucket, Key: object, Range: `bytes=${start}-${end}` }),
              { abortSignal }
            )),
          (output) => Effect.sync(() => (output.Body as { destroy?: () => void } | undefined)?.destroy?.())
        )
        const body = output.Body as AsyncIterable<Uint8Array> | undefined
        return body === undefined ? Stream.empty : Stream.fromAsyncIterable(body, failure("read", key))
      }))

    const open = (key: string, range?: RangeRequest) =>
      Effect.gen(function*() {
        const object = yield* locate(key)
        const head = yield* send(
          "open",
          key,
          (abortSignal) => client.send(new s3.HeadObjectCommand({ Bucket: bucket, Key: object }), { abortSignal })
        ).pipe(
          Effect.map(Option.some),
          Effect.catchIf((error) => isMissing(error.cause), () => Effect.succeed(Option.none()))
        )
        if (Option.isNone(head)) return Option.none<OpenedFile>()
        const size = Number(head.value.ContentLength ?? 0)
        const selected = range === undefined ? undefined : resolveRange(range, size)
        if (range !== undefined && selected === undefined) return yield* new UnsatisfiableRange({ key, size })
        const contentType = contentTypeOf(key)
        if (size === 0) return Option.some<OpenedFile>({ size, contentType, stream: Stream.empty })
        const { end, start } = selected ?? { start: 0, end: size - 1 }
        const opened: OpenedFile = { size, contentType, stream: read(key, object, start, end) }
        return Option.some(selected === undefined ? opened : { ...opened, range: selected })
      })

    const remove = (key: string) =>
      Effect.flatMap(locate(key), (object) =>
        send(
          "remove",
          key,
          (abortSignal) => client.send(new s3.DeleteObjectCommand({ Bucket: bucket, Key: object }), { abortSignal })
        ).pipe(
          Effect.asVoid,
          Effect.catchIf((error) => isMissing(error.cause), () => Effect.void)
        ))

    return FileStore.of({ put, putFile, open, remove })
  })

/**
 * The S3 store with the given settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<FileStore, FileStoreError | OptionalPackage.MissingPackage> =>
  Layer.scoped(FileStore, make(options))

const isPrefix = (prefix: string) =>
  prefix === "" || (prefix.endsWith("/") && keyProblem(prefix.slice(0, -1)) === undefined)

/**
 * The S3 settings from Effect `Config`: `MEDIAGATE_S3_BUCKET` (required), `MEDIAGATE_S3_PREFIX`,
 * `MEDIAGATE_S3_REGION` (default `AWS_REGION`, then `us-east-1`), `MEDIAGATE_S3_ENDPOINT`,
 * `MEDIAGATE_S3_FORCE_PATH_STYLE` (default false), `MEDIAGATE_S3_ACCESS_KEY_ID` with
 * `MEDIAGATE_S3_SECRET_ACCESS_KEY` (default: the SDK's credential chain).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Options> = Config.all({
  bucket: Config.nonEmptyString("MEDIAGATE_S3_BUCKET"),
  prefix: Config.string("MEDIAGATE_S3_PREFIX").pipe(
    Config.withDefault(""),
    Config.validate({ message: "must be empty or key segments ending with /, e.g. mediagate/", validation: isPrefix })
  ),
  region: Config.string("MEDIAGATE_S3_REGION").pipe(
    Config.orElse(() => Config.string("AWS_REGION")),
    Config.withDefault("us-east-1")
  ),
  endpoint: Config.option(Config.url("MEDIAGATE_S3_ENDPOINT")).pipe(
    Config.map(Option.map((url) => url.toString().replace(/\/$/, ""))),
    Config.map(Option.getOrUndefined)
  ),
  forcePathStyle: Config.boolean("MEDIAGATE_S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false)),
  credentials: Config.option(Config.all({
    accessKeyId: Config.nonEmptyString("MEDIAGATE_S3_ACCESS_KEY_ID"),
    secretAccessKey: Config.redacted("MEDIAGATE_S3_SECRET_ACCESS_KEY")
  })).pipe(Config.map(Option.getOrUndefined))
})

/**
 * The S3 store with its settings from Effect `Config` ({@link config}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<
  FileStore,
  ConfigError.ConfigError | FileStoreError | OptionalPackage.MissingPackage
> = Layer.unwrapEffect(
  Effect.map(config, layer)
)
