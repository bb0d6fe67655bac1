import { afterAll, assert, beforeAll, describe, expect, it } from "@effect/vitest"
import type { Fields } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { PNG } from "pngjs"
import * as Media from "../src/Media.js"
import * as RemoteMedia from "../src/RemoteMedia.js"

const png = (width: number, height: number): Buffer => {
  const image = new PNG({ width, height })
  image.data.fill(200)
  return PNG.sync.write(image)
}

const bytesOf = (...parts: ReadonlyArray<string | ReadonlyArray<number>>): Uint8Array =>
  Uint8Array.from(parts.flatMap((part) => typeof part === "string" ? [...part].map((c) => c.charCodeAt(0)) : [...part]))

const audio = {
  wav: bytesOf("RIFF", [36, 0, 0, 0], "WAVEfmt ", [16, 0, 0, 0, 1, 0, 1, 0]),
  id3: bytesOf("ID3", [4, 0, 0, 0, 0, 0, 0]),
  mp3: bytesOf([0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0]),
  ogg: bytesOf("OggS", [0, 2, 0, 0, 0, 0, 0, 0]),
  aac: bytesOf([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]),
  m4a: bytesOf([0, 0, 0, 0x20], "ftypM4A ", [0, 0, 0, 0])
} as const

interface Seen {
  readonly path: string
  readonly host: string | undefined
}

const seen: Array<Seen> = []
let server: http.Server
let port = 0
let video: Uint8Array = new Uint8Array()
const videoSeconds = 3

const files: Record<string, { readonly type: string; readonly body: Uint8Array }> = {
  "/x.png": { type: "image/png", body: png(400, 300) },
  "/small.png": { type: "image/png", body: png(100, 100) },
  "/wide.png": { type: "image/png", body: png(900, 300) },
  "/audio.wav": { type: "audio/wav", body: audio.wav },
  "/audio.mp3": { type: "audio/mpeg", body: audio.mp3 },
  "/audio.ogg": { type: "audio/ogg", body: audio.ogg },
  "/audio.aac": { type: "audio/aac", body: audio.aac },
  "/text.txt": { type: "text/plain", body: bytesOf("hello, not an image") }
}

const handler = (request: http.IncomingMessage, response: http.ServerResponse) => {
  const path = request.url ?? "/"
  seen.push({ path, host: request.headers.host })
  const file = files[path]
  if (file !== undefined) {
    response.writeHead(200, { "content-type": file.type, "content-length": file.body.length })
    response.end(file.body)
    return
  }
  switch (path) {
    case "/video.mp4":
      response.writeHead(200, { "content-type": "video/mp4" })
      response.end(video)
      return
    case "/declared-big":
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": 10_000 })
      response.end(Buffer.alloc(10_000))
      return
    case "/streamed-big": {
      // chunked: no Content-Length, the size shows only while reading
      response.writeHead(200, { "content-type": "application/octet-stream" })
      let sent = 0
      const timer = setInterval(() => {
        if (response.destroyed || sent >= 50) {
          clearInterval(timer)
          if (!response.destroyed) response.end()
          return
        }
        response.write(Buffer.alloc(1000))
        sent++
      }, 2)
      return
    }
    case "/slow":
      response.writeHead(200, { "content-type": "image/png" })
      response.write(Buffer.alloc(10))
      return // never ends
    case "/r1":
      response.writeHead(302, { location: "/r2" }).end()
      return
    case "/r2":
      response.writeHead(301, { location: `http://127.0.0.1:${port}/r3` }).end()
      return
    case "/r3":
      response.writeHead(307, { location: "/x.png" }).end()
      return
    case "/loop":
      response.writeHead(302, { location: "/loop" }).end()
      return
    case "/to-private":
      response.writeHead(302, { location: `http://rebound.test:${port}/x.png` }).end()
      return
    case "/to-file":
      response.writeHead(302, { location: "file:///etc/passwd" }).end()
      return
    default:
      response.writeHead(404, { "content-type": "text/plain" }).end("not found")
  }
}

beforeAll(async () => {
  video = await Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(
        Media.make(),
        (media) => media.renderVideo({ width: 64, height: 48, durationSeconds: videoSeconds })
      )
    )
  )
  server = http.createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
}, 60_000)

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

const local = (path: string) => `http://127.0.0.1:${port}${path}`
const dev = { maxBytes: 1024 * 1024, allowPrivate: true } as const

/** A resolver for made-up names (no real DNS in tests). */
const fakeDns = (table: Record<string, ReadonlyArray<string>>): RemoteMedia.Resolver => (host) => {
  const addresses = table[host]
  return addresses === undefined
    ? Promise.reject(new Error(`ENOTFOUND ${host}`))
    : Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })))
}

const failure = <A>(effect: Effect.Effect<A, RemoteMedia.RemoteMediaError>) =>
  Effect.flatMap(Effect.either(effect), (result) =>
    Either.isLeft(result)
      ? Effect.succeed(result.left)
      : Effect.dieMessage("expected a RemoteMediaError"))

const seenSince = (mark: number) => seen.slice(mark).map((s) => s.path)

const rules: Fields.ImageRules = {
  formats: ["png", "jpeg"],
  maxBytes: 1024 * 1024,
  minSide: 300,
  minRatio: 0.4,
  maxRatio: 2.5
}

describe("fetchMedia address rules", () => {
  it.effect("refuses loopback literals and names before any request reaches the server", () =>
    Effect.gen(function*() {
      const mark = seen.length
      for (const url of [local("/x.png"), `http://localhost:${port}/x.png`]) {
        const error = yield* failure(RemoteMedia.fetchMedia(url, { maxBytes: 1000 }))
        expect(error._tag).toBe("RemoteMediaError")
        expect(error.reason).toBe("address")
      }
      expect(seenSince(mark)).toEqual([])
    }))

  it.effect("refuses IPv6 loopback, metadata and private literals without connecting", () =>
    Effect.gen(function*() {
      for (
        const url of [
          "http://[::1]/",
          "http://169.254.169.254/latest/meta-data",
          "http://10.0.0.1/",
          "http://[::ffff:127.0.0.1]/"
        ]
      ) {
        const error = yield* failure(RemoteMedia.fetchMedia(url, { maxBytes: 1000, timeout: "2 seconds" }))
        expect(error.reason, url).toBe("address")
        expect(error.message).not.toMatch(/\n\s+at /)
      }
    }))

  it.effect("refuses non-http schemes and garbage", () =>
    Effect.gen(function*() {
      for (const url of ["ftp://example.com/a.png", "file:///etc/passwd", "not a url", "data:image/png;base64,AAAA"]) {
        const error = yield* failure(RemoteMedia.fetchMedia(url, { maxBytes: 1000 }))
        expect(error.reason, url).toBe("address")
      }
    }))

  it.effect("a name resolving to a private address is refused; any bad address among several is enough", () =>
    Effect.gen(function*() {
      const lookup = fakeDns({
        "private.test": ["192.168.1.10"],
        "mixed.test": ["93.184.216.34", "127.0.0.1"],
        "v6.test": ["fd00::1"]
      })
      const mark = seen.length
      for (const host of ["private.test", "mixed.test", "v6.test"]) {
        const error = yield* failure(RemoteMedia.fetchMedia(`http://${host}:${port}/x.png`, { maxBytes: 1000, lookup }))
        expect(error.reason, host).toBe("address")
        expect(error.message).toContain(host)
      }
      expect(seenSince(mark)).toEqual([])
    }))

  it.effect("an unresolvable name is a network error", () =>
    Effect.gen(function*() {
      const error = yield* failure(
        RemoteMedia.fetchMedia("http://nowhere.test/x.png", { maxBytes: 1000, lookup: fakeDns({}) })
      )
      expect(error.reason).toBe("network")
      expect(error.message).toContain("nowhere.test")
    }))

  it.effect("connects to the checked address and keeps the original name in the Host header", () =>
    Effect.gen(function*() {
      let lookups = 0
      const lookup: RemoteMedia.Resolver = (host) => {
        lookups++
        return fakeDns({ "cdn.test": ["127.0.0.1"] })(host)
      }
      const mark = seen.length
      const media = yield* RemoteMedia.fetchMedia(`http://cdn.test:${port}/x.png`, { ...dev, lookup })
      expect(RemoteMedia.inspectImage(media.bytes)).toEqual({ format: "png", width: 400, height: 300 })
      expect(lookups).toBe(1)
      expect(seen.slice(mark)).toEqual([{ path: "/x.png", host: `cdn.test:${port}` }])
    }))

  it.effect("a redirect is checked again: a hop to a private address is refused before connecting", () =>
    Effect.gen(function*() {
      // the first hop's address counts as allowed (stands for a public host); the redirect's name resolves privately
      const options = {
        maxBytes: 1024 * 1024,
        lookup: fakeDns({ "rebound.test": ["10.1.2.3"] }),
        isAllowedAddress: (address: string) => address === "127.0.0.1"
      }
      const mark = seen.length
      const error = yield* failure(RemoteMedia.fetchMedia(local("/to-private"), options))
      expect(error.reason).toBe("address")
      expect(error.message).toContain("rebound.test")
      expect(seenSince(mark)).toEqual(["/to-private"])
      // the same redirect is followed when the name resolves to an allowed address
      const media = yield* RemoteMedia.fetchMedia(local("/to-private"), {
        ...options,
        lookup: fakeDns({ "rebound.test": ["127.0.0.1"] })
      })
      expect(media.finalUrl).toBe(`http://rebound.test:${port}/x.png`)
    }))
})

describe("fetchMedia transfers", () => {
  it.effect("fetches a local file with allowPrivate", () =>
    Effect.gen(function*() {
      const media = yield* RemoteMedia.fetchMedia(local("/x.png"), dev)
      expect(media.contentType).toBe("image/png")
      expect(media.finalUrl).toBe(local("/x.png"))
      expect(media.bytes).toBeInstanceOf(Uint8Array)
      expect(RemoteMedia.inspectImage(media.bytes)).toEqual({ format: "png", width: 400, height: 300 })
    }))

  it.effect("follows up to maxRedirects redirects, relative and absolute", () =>
    Effect.gen(function*() {
      const mark = seen.length
      const media = yield* RemoteMedia.fetchMedia(local("/r1"), dev)
      expect(media.finalUrl).toBe(local("/x.png"))
      expect(seenSince(mark)).toEqual(["/r1", "/r2", "/r3", "/x.png"])
      const error = yield* failure(RemoteMedia.fetchMedia(local("/r1"), { ...dev, maxRedirects: 2 }))
      expect(error.reason).toBe("status")
      expect(error.message).toContain("redirects")
      const loop = yield* failure(RemoteMedia.fetchMedia(local("/loop"), dev))
      expect(loop.reason).toBe("status")
    }))

  it.effect("a redirect to a non-http URL is refused", () =>
    Effect.gen(function*() {
      const error = yield* failure(RemoteMedia.fetchMedia(local("/to-file"), dev))
      expect(error.reason).toBe("address")
    }))

  it.effect("a 404 is a status error naming the host", () =>
    Effect.gen(function*() {
      const error = yield* failure(RemoteMedia.fetchMedia(local("/missing.png"), dev))
      expect(error.reason).toBe("status")
      expect(error.message).toContain("127.0.0.1")
      expect(error.message).toContain("404")
    }))

  it.effect("too large by Content-Length and by streamed bytes", () =>
    Effect.gen(function*() {
      const declared = yield* failure(RemoteMedia.fetchMedia(local("/declared-big"), { ...dev, maxBytes: 1000 }))
      expect(declared.reason).toBe("too_large")
      const started = performance.now()
      const streamed = yield* failure(RemoteMedia.fetchMedia(local("/streamed-big"), { ...dev, maxBytes: 2500 }))
      expect(streamed.reason).toBe("too_large")
      // abandoned after about 3 of 50 chunks, not read to the end
      expect(performance.now() - started).toBeLessThan(2000)
      // exactly at the limit is fine
      const exact = yield* RemoteMedia.fetchMedia(local("/declared-big"), { ...dev, maxBytes: 10_000 })
      expect(exact.bytes.length).toBe(10_000)
    }))

  // live clock: the deadline is real time (it.effect would use the TestClock)
  it.live("a body that never completes times out", () =>
    Effect.gen(function*() {
      const started = performance.now()
      const error = yield* failure(RemoteMedia.fetchMedia(local("/slow"), { ...dev, timeout: "300 millis" }))
      expect(error.reason).toBe("timeout")
      expect(error.message).toContain("127.0.0.1")
      expect(performance.now() - started).toBeLessThan(2000)
    }))

  it.effect("a refused connection is a network error", () =>
    Effect.gen(function*() {
      const closed = http.createServer()
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve)))
      const freePort = (closed.address() as AddressInfo).port
      yield* Effect.promise(() => new Promise<void>((resolve) => closed.close(() => resolve())))
      const error = yield* failure(RemoteMedia.fetchMedia(`http://127.0.0.1:${freePort}/x.png`, dev))
      expect(error.reason).toBe("network")
    }))
})

describe("checkRemoteImage", () => {
  it.effect("accepts an image within the rules", () =>
    RemoteMedia.checkRemoteImage(local("/x.png"), rules, { allowPrivate: true }))

  it.effect("refuses a too small image, a wrong ratio and a non-image with reason format", () =>
    Effect.gen(function*() {
      const small = yield* failure(RemoteMedia.checkRemoteImage(local("/small.png"), rules, { allowPrivate: true }))
      expect(small.reason).toBe("format")
      expect(small.message).toContain("at least 300 px")
      const wide = yield* failure(RemoteMedia.checkRemoteImage(local("/wide.png"), rules, { allowPrivate: true }))
      expect(wide.reason).toBe("format")
      expect(wide.message).toContain("ratio must be at most 2.5")
      const text = yield* failure(RemoteMedia.checkRemoteImage(local("/text.txt"), rules, { allowPrivate: true }))
      expect(text.reason).toBe("format")
      const gif = yield* failure(
        RemoteMedia.checkRemoteImage(local("/x.png"), { ...rules, formats: ["jpeg"] }, { allowPrivate: true })
      )
      expect(gif.message).toContain("format must be one of jpeg")
    }))

  it.effect("a file over the rules' byte limit is too_large; private hosts stay refused by default", () =>
    Effect.gen(function*() {
      const large = yield* failure(
        RemoteMedia.checkRemoteImage(local("/x.png"), { ...rules, maxBytes: 100 }, { allowPrivate: true })
      )
      expect(large.reason).toBe("too_large")
      const refused = yield* failure(RemoteMedia.checkRemoteImage(local("/x.png"), rules, {}))
      expect(refused.reason).toBe("address")
    }))

  it("checkImage reads pure bytes", () => {
    assert.isUndefined(RemoteMedia.checkImage(png(400, 300), rules))
    expect(RemoteMedia.checkImage(png(200, 400), rules)).toContain("at least 300 px")
    expect(RemoteMedia.checkImage(bytesOf("garbage"), rules)).toBe("the file is not a readable image")
    assert.isUndefined(RemoteMedia.inspectImage(bytesOf("garbage")))
  })
})

describe("mp4DurationSeconds", () => {
  it.effect("reads the duration of a rendered MP4 served over HTTP", () =>
    Effect.gen(function*() {
      const media = yield* RemoteMedia.fetchMedia(local("/video.mp4"), { ...dev, maxBytes: 10 * 1024 * 1024 })
      expect(RemoteMedia.mp4DurationSeconds(media.bytes)).toBe(videoSeconds)
      expect(RemoteMedia.audioType(media.bytes)).toBe("mp4")
    }))

  it("reads version 0 and version 1 mvhd boxes and refuses non-MP4 bytes", () => {
    const box = (type: string, payload: Uint8Array) => {
      const out = new Uint8Array(8 + payload.length)
      new DataView(out.buffer).setUint32(0, out.length)
      out.set(bytesOf(type), 4)
      out.set(payload, 8)
      return out
    }
    const concat = (...parts: ReadonlyArray<Uint8Array>) => Uint8Array.from(parts.flatMap((p) => [...p]))
    const mvhd0 = new Uint8Array(100)
    new DataView(mvhd0.buffer).setUint32(12, 1000) // timescale
    new DataView(mvhd0.buffer).setUint32(16, 7500) // duration
    const mvhd1 = new Uint8Array(112)
    mvhd1[0] = 1
    new DataView(mvhd1.buffer).setUint32(20, 600)
    new DataView(mvhd1.buffer).setBigUint64(24, 6000n)
    const ftyp = box("ftyp", bytesOf("isom", [0, 0, 0, 0]))
    const free = box("free", new Uint8Array(16))
    expect(RemoteMedia.mp4DurationSeconds(concat(ftyp, free, box("moov", box("mvhd", mvhd0))))).toBe(7.5)
    expect(RemoteMedia.mp4DurationSeconds(concat(ftyp, box("moov", concat(free, box("mvhd", mvhd1)))))).toBe(10)
    expect(RemoteMedia.mp4DurationSeconds(concat(ftyp, free))).toBeUndefined()
    expect(RemoteMedia.mp4DurationSeconds(png(10, 10))).toBeUndefined()
    expect(RemoteMedia.mp4DurationSeconds(new Uint8Array(3))).toBeUndefined()
  })
})

describe("audioType", () => {
  it("names audio types by magic bytes", () => {
    expect(RemoteMedia.audioType(audio.wav)).toBe("wav")
    expect(RemoteMedia.audioType(audio.id3)).toBe("mpeg")
    expect(RemoteMedia.audioType(audio.mp3)).toBe("mpeg")
    expect(RemoteMedia.audioType(audio.ogg)).toBe("ogg")
    expect(RemoteMedia.audioType(audio.aac)).toBe("aac")
    expect(RemoteMedia.audioType(audio.m4a)).toBe("mp4")
    expect(RemoteMedia.audioType(png(4, 4))).toBeUndefined()
    expect(RemoteMedia.audioType(new Uint8Array(0))).toBeUndefined()
    expect(RemoteMedia.audioType(bytesOf([0xff, 0xff, 0xff, 0xff]))).toBeUndefined()
  })

  it.effect("names served audio files", () =>
    Effect.gen(function*() {
      const types: Array<RemoteMedia.AudioType | undefined> = []
      for (const path of ["/audio.wav", "/audio.mp3", "/audio.ogg", "/audio.aac"]) {
        const media = yield* RemoteMedia.fetchMedia(local(path), dev)
        types.push(RemoteMedia.audioType(media.bytes))
      }
      expect(types).toEqual(["wav", "mpeg", "ogg", "aac"])
    }))
})
