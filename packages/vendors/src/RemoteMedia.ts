/**
 * Remote media inputs: fetching a URL safely (decisions.md §2 and §6) and reading what the bytes are.
 *
 * - {@link fetchMedia} fetches through `@mediagate/outbound`'s {@link PinnedHttp.request}: `http`/`https` only,
 *   every resolved address checked (unless `allowPrivate`), the connection pinned to the checked address, each
 *   redirect checked again, the body abandoned as soon as it exceeds `maxBytes`, one deadline for the whole fetch.
 *   Only 2xx answers are read.
 * - {@link inspectImage} / {@link checkImage} read an image's format and pixel size and check them against
 *   {@link Fields.ImageRules}; {@link checkRemoteImage} combines fetch and check.
 * - {@link mp4DurationSeconds} reads an MP4/MOV duration from `moov/mvhd`; {@link audioType} names an audio file's
 *   type from its magic bytes.
 *
 * @since 0.1.0
 */
import { Address, DataUri, Fields, type InputMedia } from "@mediagate/contract"
import { PinnedHttp } from "@mediagate/outbound"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { imageSize } from "image-size"

/**
 * Why a remote media file could not be used.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RemoteMediaReason = Schema.Literal("address", "status", "too_large", "timeout", "network", "format")
/**
 * Why a remote media file could not be used: one of the {@link RemoteMediaReason} literals.
 *
 * @since 0.1.0
 * @category schemas
 */
export type RemoteMediaReason = typeof RemoteMediaReason.Type

/**
 * A remote media file could not be fetched or breaks a rule; `message` is safe to show to the client.
 *
 * @since 0.1.0
 * @category errors
 */
export class RemoteMediaError extends Schema.TaggedError<RemoteMediaError>()("RemoteMediaError", {
  reason: RemoteMediaReason,
  message: Schema.String
}) {}

/**
 * Resolves a host name to all its addresses (tests).
 *
 * @since 0.1.0
 * @category models
 */
export type Resolver = PinnedHttp.Resolver

/**
 * Options of {@link fetchMedia}.
 *
 * @since 0.1.0
 * @category models
 */
export interface FetchOptions extends PinnedHttp.TargetOptions {
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number
  /** Deadline of the whole fetch (DNS, redirects and body); default 15 s. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Most redirects followed; default 3. */
  readonly maxRedirects?: number | undefined
}

/**
 * A fetched media file.
 *
 * @since 0.1.0
 * @category models
 */
export interface FetchedMedia {
  readonly bytes: Uint8Array
  readonly contentType: string | undefined
  /** The URL the bytes came from, after redirects. */
  readonly finalUrl: string
}

const defaultMaxRedirects = 3

const fail = (host: string, reason: RemoteMediaReason, problem: string) =>
  new RemoteMediaError({ reason, message: `media URL (host ${host}): ${problem}` })

const reasons: Record<PinnedHttp.Reason, RemoteMediaReason> = {
  url: "address",
  address: "address",
  dns: "network",
  refused: "network",
  network: "network",
  timeout: "timeout",
  status: "status",
  redirect: "status",
  too_large: "too_large"
}

const toMediaError = (error: PinnedHttp.OutboundError) =>
  error.host === undefined
    ? new RemoteMediaError({ reason: "address", message: "media URL must be an absolute http(s) URL" })
    : fail(error.host, reasons[error.reason], error.message)

/**
 * Fetches a media URL under the address rules of decisions.md §2/§6, following at most `maxRedirects` redirects
 * (each re-checked) and reading at most `maxBytes` bytes within `timeout`.
 *
 * @since 0.1.0
 * @category utils
 */
export const fetchMedia = Effect.fn("RemoteMedia.fetchMedia")(function*(url: string, options: FetchOptions) {
  const response = yield* PinnedHttp.request(url, {
    ...options,
    headers: { accept: "*/*", "user-agent": "mediagate-media-fetcher" },
    timeout: options.timeout ?? "15 seconds",
    maxRedirects: options.maxRedirects ?? defaultMaxRedirects,
    acceptStatus: (status) => status >= 200 && status <= 299
  }).pipe(Effect.mapError(toMediaError))
  const contentType = response.headers["content-type"]
  return { bytes: response.body, contentType, finalUrl: response.url } satisfies FetchedMedia
})

/**
 * What an image file is, read from its bytes.
 *
 * @since 0.1.0
 * @category models
 */
export type ImageInfo = Pick<DataUri.DataUriImage, "format" | "width" | "height">

/**
 * The format and pixel size of an image, or undefined when the bytes are not a readable image.
 *
 * @since 0.1.0
 * @category utils
 */
export const inspectImage = (bytes: Uint8Array): ImageInfo | undefined => {
  try {
    const size = imageSize(bytes)
    return { format: DataUri.formatOfType(size.type), width: size.width, height: size.height }
  } catch {
    return undefined
  }
}

/**
 * Why image bytes break the rules (format, bytes, sides, ratio), or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkImage = (bytes: Uint8Array, rules: Fields.ImageRules): string | undefined => {
  const info = inspectImage(bytes)
  if (info === undefined) return "the file is not a readable image"
  return Fields.imageProblem({ ...info, bytes: bytes.length }, rules)
}

/**
 * Fetches an image URL and checks it against the rules; a breach is `reason: "format"` with the rule's message.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkRemoteImage = (
  url: string,
  rules: Fields.ImageRules,
  options: Omit<FetchOptions, "maxBytes"> & { readonly maxBytes?: number | undefined }
): Effect.Effect<void, RemoteMediaError> =>
  Effect.flatMap(fetchMedia(url, { ...options, maxBytes: options.maxBytes ?? rules.maxBytes }), (media) => {
    const problem = checkImage(media.bytes, rules)
    if (problem === undefined) return Effect.void
    return Effect.fail(fail(Address.urlHost(new URL(media.finalUrl)), "format", problem))
  })

const ascii = (bytes: Uint8Array, start: number, length: number): string =>
  start + length > bytes.length ? "" : String.fromCharCode(...bytes.subarray(start, start + length))

interface Box {
  readonly type: string
  /** Start of the payload. */
  readonly start: number
  /** End of the box. */
  readonly end: number
}

/** The ISO BMFF boxes in `[start, end)`; stops at the first malformed box. */
const boxes = (view: DataView, start: number, end: number): Array<Box> => {
  const result: Array<Box> = []
  let offset = start
  while (offset + 8 <= end) {
    let size = view.getUint32(offset)
    const type = String.fromCharCode(...new Uint8Array(view.buffer, view.byteOffset + offset + 4, 4))
    let header = 8
    if (size === 1) {
      if (offset + 16 > end) break
      const large = view.getBigUint64(offset + 8)
      if (large > BigInt(end - offset)) break
      size = Number(large)
      header = 16
    } else if (size === 0) {
      size = end - offset
    }
    if (size < header || offset + size > end) break
    result.push({ type, start: offset + header, end: offset + size })
    offset += size
  }
  return result
}

/**
 * The duration in seconds of an MP4/MOV file from its `moov/mvhd` box (versions 0 and 1), or undefined when the
 * bytes are not an MP4/MOV or carry no usable duration.
 *
 * @since 0.1.0
 * @category utils
 */
export const mp4DurationSeconds = (bytes: Uint8Array): number | undefined => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const moov = boxes(view, 0, bytes.length).find((box) => box.type === "moov")
  if (moov === undefined) return undefined
  const mvhd = boxes(view, moov.start, moov.end).find((box) => box.type === "mvhd")
  if (mvhd === undefined || mvhd.start + 4 > mvhd.end) return undefined
  const version = view.getUint8(mvhd.start)
  let timescale: number
  let duration: number
  if (version === 1) {
    if (mvhd.start + 4 + 28 > mvhd.end) return undefined
    timescale = view.getUint32(mvhd.start + 4 + 16)
    const long = view.getBigUint64(mvhd.start + 4 + 20)
    if (long === 0xffffffffffffffffn) return undefined
    duration = Number(long)
  } else if (version === 0) {
    if (mvhd.start + 4 + 16 > mvhd.end) return undefined
    timescale = view.getUint32(mvhd.start + 4 + 8)
    duration = view.getUint32(mvhd.start + 4 + 12)
    if (duration === 0xffffffff) return undefined
  } else {
    return undefined
  }
  return timescale === 0 ? undefined : duration / timescale
}

/**
 * Audio types the spec names for reference audio.
 *
 * @since 0.1.0
 * @category models
 */
export type AudioType = InputMedia.AudioType

/**
 * The type of an audio file from its magic bytes, or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const audioType = (bytes: Uint8Array): AudioType | undefined => {
  if (ascii(bytes, 0, 3) === "ID3") return "mpeg"
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WAVE") return "wav"
  if (ascii(bytes, 0, 4) === "OggS") return "ogg"
  if (ascii(bytes, 4, 4) === "ftyp") return "mp4"
  if (ascii(bytes, 0, 4) === "ADIF") return "aac"
  if (bytes.length >= 4 && bytes[0] === 0xff && (bytes[1]! & 0xf0) === 0xf0 && (bytes[1]! & 0x06) === 0) {
    // ADTS: 12-bit sync, layer 00; sampling frequency index 13..15 is reserved
    return ((bytes[2]! >> 2) & 0x0f) < 13 ? "aac" : undefined
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0) {
    // MPEG audio frame: 11-bit sync; version 01, layer 00, bitrate 1111 and sampling rate 11 are reserved
    const version = (bytes[1]! >> 3) & 0x03
    const layer = (bytes[1]! >> 1) & 0x03
    const bitrate = bytes[2]! >> 4
    const rate = (bytes[2]! >> 2) & 0x03
    return version !== 1 && layer !== 0 && bitrate !== 0x0f && rate !== 0x03 ? "mpeg" : undefined
  }
  return undefined
}
