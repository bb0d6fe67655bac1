/**
 * One result file fetched for the copy: an upstream URL downloaded through the outbound guard to a file on the disk
 * (streamed, capped, each read within the channel's timeout, a trickle dropped), or a `data:` URI decoded.
 */
import * as PinnedHttp from "@mediagate/outbound/PinnedHttp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { createWriteStream, type WriteStream } from "node:fs"
import type { ResultSource } from "../../Mapping.js"
import type { CopyPolicy } from "../../ResultCopy.js"

/** The slowest average a download may keep (past the channel's timeout) before it gives its slot up. */
const defaultMinBytesPerSecond = 16 * 1024

/** A failed attempt: `final` when trying again cannot help. */
export class CopyFailure extends Schema.TaggedError<CopyFailure>()("CopyFailure", {
  message: Schema.String,
  final: Schema.Boolean
}) {}

/** A file downloaded: to the disk (`file`), or, up to {@link inMemoryBytes}, in memory (`data`). */
export interface Downloaded {
  readonly file: string
  readonly bytes: number
  readonly head: Uint8Array
  readonly contentType: string | undefined
  readonly data?: Uint8Array
}

/** The largest download kept in memory (then stored in one write): a larger one goes to its file as it comes. */
export const inMemoryBytes = 256 * 1024

/** Why a download the task's deadline ended failed. */
const pastDeadlineMessage = "the task's deadline came while copying its result"
/** The failure of a download the task's deadline ended. */
const pastDeadline = () => new CopyFailure({ message: pastDeadlineMessage, final: true })

/**
 * Downloads `url` to `file` under the policy: streamed, capped, each read within the timeout, the whole download by
 * `deadlineAt` (epoch ms, the task's deadline).
 */
export const download = (source: ResultSource, file: string, policy: CopyPolicy, deadlineAt: number) =>
  Effect.scoped(Effect.gen(function*() {
    const left = deadlineAt - Date.now()
    if (left <= 0) return yield* pastDeadline()
    const response = yield* PinnedHttp.stream(source.url, {
      trustedHosts: policy.trustedHosts,
      allowPrivate: policy.allowPrivate,
      lookup: policy.lookup,
      timeout: Duration.millis(Math.min(policy.timeoutMs, left)),
      maxBytes: policy.maxBytes,
      maxRedirects: 3,
      headers: source.headers,
      // an upstream's files come from a few hosts again and again (its own, its CDN's)
      keepAlive: true
    }).pipe(Effect.mapError((error) => {
      if (error.reason === "timeout" && Date.now() >= deadlineAt) return pastDeadline()
      const status = error.status
      // an address refused, too large, not a URL: the same next time; a 4xx other than 404/408/429 too
      const final = error.reason === "address" || error.reason === "url" || error.reason === "too_large" ||
        (status !== undefined && status >= 400 && status < 500 && status !== 404 && status !== 408 && status !== 429)
      return new CopyFailure({ message: `${error.message} (${error.host ?? "?"})`, final })
    }))
    const contentType = response.headers["content-type"]
    const written = yield* Effect.async<
      { bytes: number; head: Uint8Array; data: Uint8Array | undefined },
      CopyFailure
    >((resume) => {
      const body = response.body
      // the bytes so far while they fit in memory; past that, the file they go on into
      let held: Array<Buffer> | undefined = []
      let out: WriteStream | undefined
      const head: Array<Buffer> = []
      let headBytes = 0
      let bytes = 0
      let done = false
      let lastData = Date.now()
      const started = lastData
      const minRate = policy.minBytesPerSecond ?? defaultMinBytesPerSecond
      /** Ends the download with a failure (the partial file is removed by the caller). */
      const fail = (message: string, final = false) => {
        if (done) return
        done = true
        clearInterval(watch)
        body.destroy()
        out?.destroy()
        resume(Effect.fail(new CopyFailure({ message, final })))
      }
      // no byte for the channel's timeout, or (once it has run that long) slower on average than the minimum rate:
      // the download gives its slot up and is tried again later
      const watch = setInterval(() => {
        const now = Date.now()
        if (now >= deadlineAt) return fail(pastDeadlineMessage, true)
        if (now - lastData >= policy.timeoutMs) {
          return fail(`no data for ${Math.round(policy.timeoutMs / 100) / 10} s while downloading`)
        }
        const seconds = (now - started) / 1000
        if (now - started >= policy.timeoutMs && bytes / seconds < minRate) {
          fail(`the download ran slower than ${Math.round(minRate / 1024)} KiB/s`)
        }
      }, Math.max(10, Math.min(1000, Math.floor(policy.timeoutMs / 4))))
      body.on("data", (chunk: Buffer) => {
        if (done) return
        bytes += chunk.length
        if (bytes > policy.maxBytes) return fail(`the file is larger than ${policy.maxBytes} bytes`, true)
        if (headBytes < 16) {
          head.push(chunk.subarray(0, 16 - headBytes))
          headBytes += Math.min(16, chunk.length)
        }
        lastData = Date.now()
        if (held !== undefined && bytes <= inMemoryBytes) return void held.push(chunk)
        if (out === undefined) {
          out = createWriteStream(file, { flags: "wx" })
          out.on("error", (error) => fail(`writing the download failed: ${error.message}`))
          for (const part of held ?? []) out.write(part)
          held = undefined
        }
        if (!out.write(chunk)) {
          body.pause()
          out.once("drain", () => body.resume())
        }
      })
      body.on("end", () => {
        if (done) return
        clearInterval(watch)
        if (out === undefined) {
          done = true
          return resume(Effect.succeed({ bytes, head: Buffer.concat(head), data: Buffer.concat(held ?? []) }))
        }
        out.end(() => {
          if (done) return
          done = true
          resume(Effect.succeed({ bytes, head: Buffer.concat(head), data: undefined }))
        })
      })
      body.on("error", () => fail("the connection broke while downloading"))
      body.on("aborted", () => fail("the connection broke while downloading"))
      return Effect.sync(() => fail("interrupted"))
    })
    return {
      file,
      bytes: written.bytes,
      head: written.head,
      contentType: Array.isArray(contentType) ? contentType[0] : contentType,
      ...(written.data === undefined ? {} : { data: written.data })
    } satisfies Downloaded
  }))

/** A `data:` URI's bytes and type (base64 only), within the cap. */
export const decodeDataUri = (
  url: string,
  maxBytes: number
): Effect.Effect<Downloaded & { data: Uint8Array }, CopyFailure> => {
  const match = /^data:([a-z]+\/[a-z0-9.+-]+)(?:;[a-z0-9=-]+)*;base64,([A-Za-z0-9+/=\s]*)$/i.exec(url)
  if (match === null) return Effect.fail(new CopyFailure({ message: "a result data: URI is not base64", final: true }))
  if (match[2]!.length * 0.75 > maxBytes + 3) {
    return Effect.fail(new CopyFailure({ message: `a result is larger than ${maxBytes} bytes`, final: true }))
  }
  const data = Buffer.from(match[2]!, "base64")
  return Effect.succeed({ file: "", bytes: data.length, head: data.subarray(0, 16), contentType: match[1], data })
}
