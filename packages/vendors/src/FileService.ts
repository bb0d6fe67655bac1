/**
 * The HTTP layer's `FileService` port over the {@link FileStore} and the {@link UrlSigner}: the signature is checked,
 * then the file (or the byte range a `Range` header asks for, {@link parseRangeHeader}) is answered with every
 * response header (200, 206; 403, 404, 416 as typed errors).
 *
 * @since 0.1.0
 */
import { Errors, Services, Tracing } from "@mediagate/contract"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { FileStore, type FileStoreError, type RangeRequest } from "./FileStore.js"
import { type SignatureCheck, UrlSigner } from "./UrlSigner.js"

const toPosition = (digits: string): number | undefined => {
  if (digits === "") return undefined
  const value = Number(digits)
  return Number.isSafeInteger(value) ? value : undefined
}

/**
 * Parses a `Range` header. Only a single `bytes` range is understood; anything else (other units, several ranges,
 * bad syntax, `last < first`) gives `undefined`, and the whole file is served, as RFC 9110 allows.
 *
 * @since 0.1.0
 * @category encoding
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

const denied: Record<Exclude<SignatureCheck, "valid">, string> = {
  missing: "file URL is not signed: the expires and signature query parameters are required",
  invalid: "file URL signature is invalid",
  expired: "file URL has expired"
}

const unavailable = (error: FileStoreError) =>
  new Errors.ServiceUnavailable({ message: `file storage is unavailable (${error.operation})` })

/**
 * The `FileService` port: signature check, then the file (or a range of it) with every response header.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
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
              Effect.fail(Errors.RangeNotSatisfiable.ofSize(
                `range ${rangeHeader ?? ""} is not satisfiable: the file has ${e.size} bytes`,
                e.size
              )),
            FileStoreError: (e) => Effect.fail(unavailable(e))
          })
        )
        if (Option.isNone(opened)) return yield* notFound
        const file = opened.value
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const { range, size } = file
        const headers = {
          "content-type": file.contentType,
          "accept-ranges": "bytes",
          "cache-control": `private, max-age=${Math.max(0, Number(query.expires) - now)}`,
          "x-content-type-options": "nosniff",
          "content-length": String(range === undefined ? size : range.end - range.start + 1),
          ...(range === undefined ? {} : { "content-range": `bytes ${range.start}-${range.end}/${size}` })
        }
        const status = range === undefined ? 200 as const : 206 as const
        return { status, headers, body: Stream.mapError(file.stream, unavailable) }
      }).pipe(Tracing.span("FileService.open"))
  })
})

/**
 * The `FileService` port over the {@link FileStore} and {@link UrlSigner} in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services.FileService, never, FileStore | UrlSigner> = Layer.effect(
  Services.FileService,
  make
)
