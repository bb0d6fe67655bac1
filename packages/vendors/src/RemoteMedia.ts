/**
 * Remote media inputs: fetching a URL safely (decisions.md §2 and §6) and reading what the bytes are.
 *
 * - {@link fetchMedia} accepts `http`/`https` only, resolves the host, refuses when any resolved address is not a
 *   public address (unless `allowPrivate`), then connects to the checked address itself (a custom `lookup` hands the
 *   socket the address that was checked, so a second DNS answer cannot differ; Host header and SNI keep the name).
 *   Redirects are followed by hand, each hop checked again. The body is streamed and abandoned as soon as it exceeds
 *   `maxBytes`; the whole fetch has one deadline.
 * - {@link inspectImage} / {@link checkImage} read an image's format and pixel size and check them against
 *   {@link Fields.ImageRules}; {@link checkRemoteImage} combines fetch and check.
 * - {@link mp4DurationSeconds} reads an MP4/MOV duration from `moov/mvhd`; {@link audioType} names an audio file's
 *   type from its magic bytes.
 *
 * @since 0.1.0
 */
import { Address, DataUri, Fields } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { imageSize } from "image-size"
import { lookup as dnsLookup } from "node:dns/promises"
import * as http from "node:http"
import * as https from "node:https"
import type { LookupFunction } from "node:net"
import ipaddr from "ipaddr.js"

/** Why a remote media file could not be used. */
export const RemoteMediaReason = Schema.Literal("address", "status", "too_large", "timeout", "network", "format")
export type RemoteMediaReason = typeof RemoteMediaReason.Type

/** A remote media file could not be fetched or breaks a rule; `message` is safe to show to the client. */
export class RemoteMediaError extends Schema.TaggedError<RemoteMediaError>()("RemoteMediaError", {
  reason: RemoteMediaReason,
  message: Schema.String
}) {}

/** One resolved address of a host name. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Resolves a host name to all its addresses (default: `node:dns/promises` `lookup(host, { all: true })`). */
export type Resolver = (host: string) => Promise<ReadonlyArray<ResolvedAddress>>

/** Options of {@link fetchMedia}. */
export interface FetchOptions {
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number
  /** Deadline of the whole fetch (DNS, redirects and body), in milliseconds; default 15000. */
  readonly timeoutMs?: number | undefined
  /** Allow loopback and private targets (`MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`: development and tests). */
  readonly allowPrivate?: boolean | undefined
  /** Most redirects followed; default 3. */
  readonly maxRedirects?: number | undefined
  /** DNS resolver (tests). */
  readonly lookup?: Resolver | undefined
  /**
   * Whether a resolved address may be connected to (tests). Default: any address under `allowPrivate`, otherwise
   * public unicast addresses only ({@link Address.isPublicAddress}). When given, it replaces the literal-host name
   * check too.
   */
  readonly isAllowedAddress?: ((address: string) => boolean) | undefined
}

/** A fetched media file. */
export interface FetchedMedia {
  readonly bytes: Uint8Array
  readonly contentType: string | undefined
  /** The URL the bytes came from, after redirects. */
  readonly finalUrl: string
}

const defaultTimeoutMs = 15_000
const defaultMaxRedirects = 3

const defaultResolver: Resolver = (host) => dnsLookup(host, { all: true })

const hostLabel = (url: URL): string => Address.urlHost(url)

const fail = (host: string, reason: RemoteMediaReason, problem: string) =>
  new RemoteMediaError({ reason, message: `media URL (host ${host}): ${problem}` })

const formatMegabytes = (bytes: number): string => {
  const mb = bytes / (1024 * 1024)
  return mb >= 1 ? `${Math.round(mb * 10) / 10} MB` : `${bytes} bytes`
}

/** Resolves and checks the host of one hop; the address to connect to. */
const checkedAddress = (url: URL, options: FetchOptions): Effect.Effect<ResolvedAddress, RemoteMediaError> => {
  const host = hostLabel(url)
  const allowPrivate = options.allowPrivate === true
  const allowed = options.isAllowedAddress ?? (allowPrivate ? () => true : Address.isPublicAddress)
  return Effect.gen(function*() {
    if (!allowPrivate && options.isAllowedAddress === undefined) {
      const problem = Address.literalHostProblem(url)
      if (problem !== undefined) return yield* fail(host, "address", problem)
    }
    const addresses: ReadonlyArray<ResolvedAddress> = ipaddr.isValid(host)
      ? [{ address: host, family: ipaddr.parse(host).kind() === "ipv6" ? 6 : 4 }]
      : yield* Effect.tryPromise({
        try: () => (options.lookup ?? defaultResolver)(host),
        catch: () => fail(host, "network", "the host name could not be resolved")
      })
    if (addresses.length === 0) return yield* fail(host, "network", "the host name could not be resolved")
    for (const { address } of addresses) {
      if (!allowed(address)) return yield* fail(host, "address", `address ${address} is not a public address`)
    }
    return addresses[0]!
  })
}

type Hop =
  | { readonly _tag: "Body"; readonly bytes: Uint8Array; readonly contentType: string | undefined }
  | { readonly _tag: "Redirect"; readonly location: string }

const redirectStatuses = new Set([301, 302, 303, 307, 308])

/** One request to an already-checked address. */
const requestHop = (url: URL, target: ResolvedAddress, maxBytes: number): Effect.Effect<Hop, RemoteMediaError> => {
  const host = hostLabel(url)
  return Effect.async<Hop, RemoteMediaError>((resume) => {
    let settled = false
    const settle = (result: Effect.Effect<Hop, RemoteMediaError>) => {
      if (settled) return
      settled = true
      resume(result)
    }
    const failWith = (reason: RemoteMediaReason, problem: string) => settle(Effect.fail(fail(host, reason, problem)))
    // Hands the socket the address that was checked: no second DNS answer is used.
    const pinnedLookup: LookupFunction = (_hostname, lookupOptions, callback) => {
      if (lookupOptions.all === true) callback(null, [{ address: target.address, family: target.family }])
      else callback(null, target.address, target.family)
    }
    const send = url.protocol === "https:" ? https.request : http.request
    const request = send(url, {
      method: "GET",
      agent: false,
      lookup: pinnedLookup,
      headers: { accept: "*/*", "user-agent": "mediagate-media-fetcher" }
    }, (response) => {
      const status = response.statusCode ?? 0
      if (redirectStatuses.has(status)) {
        const location = response.headers.location
        response.destroy()
        request.destroy()
        if (location === undefined || location === "") return failWith("status", `redirect (HTTP ${status}) without a location`)
        return settle(Effect.succeed({ _tag: "Redirect", location }))
      }
      if (status < 200 || status > 299) {
        response.destroy()
        request.destroy()
        return failWith("status", `the server answered HTTP ${status}`)
      }
      const tooLarge = `the file is larger than ${formatMegabytes(maxBytes)}`
      const declared = Number(response.headers["content-length"])
      if (Number.isFinite(declared) && declared > maxBytes) {
        response.destroy()
        request.destroy()
        return failWith("too_large", tooLarge)
      }
      const chunks: Array<Buffer> = []
      let total = 0
      response.on("data", (chunk: Buffer) => {
        if (settled) return
        total += chunk.length
        if (total > maxBytes) {
          response.destroy()
          request.destroy()
          return failWith("too_large", tooLarge)
        }
        chunks.push(chunk)
      })
      response.on("end", () => {
        const body = Buffer.concat(chunks, total)
        settle(Effect.succeed({
          _tag: "Body",
          bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength),
          contentType: response.headers["content-type"]
        }))
      })
      response.on("error", () => failWith("network", "the connection failed while reading the file"))
      response.on("close", () => failWith("network", "the connection closed before the file was complete"))
    })
    request.on("error", () => failWith("network", "the connection failed"))
    request.end()
    return Effect.sync(() => {
      settled = true
      request.destroy()
    })
  })
}

/**
 * Fetches a media URL under the address rules of decisions.md §2/§6, following at most `maxRedirects` redirects
 * (each re-checked) and reading at most `maxBytes` bytes within `timeoutMs`.
 */
export const fetchMedia = (url: string, options: FetchOptions): Effect.Effect<FetchedMedia, RemoteMediaError> => {
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs
  const maxRedirects = options.maxRedirects ?? defaultMaxRedirects
  const first = Address.parseHttpUrl(url)
  if (first === undefined) {
    return Effect.fail(new RemoteMediaError({ reason: "address", message: "media URL must be an absolute http(s) URL" }))
  }
  return Effect.gen(function*() {
    let current = first
    for (let redirects = 0;; redirects++) {
      const target = yield* checkedAddress(current, options)
      const hop = yield* requestHop(current, target, options.maxBytes)
      if (hop._tag === "Body") return { bytes: hop.bytes, contentType: hop.contentType, finalUrl: current.href }
      if (redirects >= maxRedirects) {
        return yield* fail(hostLabel(current), "status", `more than ${maxRedirects} redirects`)
      }
      const next = URL.canParse(hop.location, current) ? Address.parseHttpUrl(new URL(hop.location, current).href) : undefined
      if (next === undefined) return yield* fail(hostLabel(current), "address", "redirect to a URL that is not http(s)")
      current = next
    }
  }).pipe(
    Effect.timeoutFail({
      duration: timeoutMs,
      onTimeout: () => fail(hostLabel(first), "timeout", `no complete answer within ${timeoutMs / 1000} s`)
    })
  )
}

/** What an image file is, read from its bytes. */
export interface ImageInfo {
  readonly format: DataUri.ImageFormat | "other"
  readonly width: number
  readonly height: number
}


/** The format and pixel size of an image, or undefined when the bytes are not a readable image. */
export const inspectImage = (bytes: Uint8Array): ImageInfo | undefined => {
  try {
    const size = imageSize(bytes)
    return { format: DataUri.formatOfType(size.type), width: size.width, height: size.height }
  } catch {
    return undefined
  }
}

/** Why image bytes break the rules (format, bytes, sides, ratio), or undefined. */
export const checkImage = (bytes: Uint8Array, rules: Fields.ImageRules): string | undefined => {
  const info = inspectImage(bytes)
  if (info === undefined) return "the file is not a readable image"
  return Fields.imageProblem({
    mimeType: info.format === "other" ? "application/octet-stream" : `image/${info.format}`,
    format: info.format,
    bytes: bytes.length,
    width: info.width,
    height: info.height
  }, rules)
}

/** Fetches an image URL and checks it against the rules; a breach is `reason: "format"` with the rule's message. */
export const checkRemoteImage = (
  url: string,
  rules: Fields.ImageRules,
  options: Omit<FetchOptions, "maxBytes"> & { readonly maxBytes?: number | undefined }
): Effect.Effect<void, RemoteMediaError> =>
  Effect.flatMap(fetchMedia(url, { ...options, maxBytes: options.maxBytes ?? rules.maxBytes }), (media) => {
    const problem = checkImage(media.bytes, rules)
    if (problem === undefined) return Effect.void
    const host = hostLabel(new URL(media.finalUrl))
    return Effect.fail(fail(host, "format", problem))
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
    const type = String.fromCharCode(
      view.getUint8(offset + 4),
      view.getUint8(offset + 5),
      view.getUint8(offset + 6),
      view.getUint8(offset + 7)
    )
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

/** Audio types the spec names for reference audio. */
export type AudioType = "mpeg" | "wav" | "aac" | "mp4" | "ogg"

/** The type of an audio file from its magic bytes, or undefined. */
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
