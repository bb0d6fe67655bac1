import { NodeContext } from "@effect/platform-node"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Errors, Services } from "@mediagate/contract"
import * as Chunk from "effect/Chunk"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { createHmac } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as FileService from "../src/FileService.js"
import * as FileStore from "../src/FileStore.js"
import * as UrlSigner from "../src/UrlSigner.js"

const directory = mkdtempSync(join(tmpdir(), "mediagate-files-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

const LocalStore = FileStore.layerLocal({ directory: join(directory, "store") }).pipe(Layer.provide(NodeContext.layer))

const bytesOf = (length: number, seed = 7) => Uint8Array.from({ length }, (_, i) => (i * seed + (i >> 8)) % 256)

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => {
    const parts = Chunk.toReadonlyArray(chunks)
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
    let offset = 0
    for (const part of parts) {
      out.set(part, offset)
      offset += part.length
    }
    return { bytes: out, chunks: parts.length }
  })

/** Byte equality without a per-element diff (large arrays). */
const same = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && Buffer.from(a).equals(Buffer.from(b))

const listFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => e.name)

describe("FileStore: keys, content types and ranges", () => {
  it("keys: relative paths of safe segments only", () => {
    for (const key of ["tasks/task_01ABC/video-0.mp4", "a.png", "x/y/z/last_frame-1.png", "v1.2/file~name.txt"]) {
      expect(FileStore.keyProblem(key), key).toBeUndefined()
    }
    for (
      const key of [
        "",
        "../x.png",
        "a/../../x.png",
        "a/./b.png",
        "/etc/passwd",
        "a\0b.png",
        "a\\b.png",
        "a//b.png",
        "a/",
        ".hidden",
        "tasks/.output.mp4.1234.tmp",
        "a b.png",
        "é.png",
        "a%2F..%2Fb.png",
        "x".repeat(513)
      ]
    ) {
      expect(FileStore.isValidKey(key), JSON.stringify(key)).toBe(false)
    }
  })

  it("content types follow the extension", () => {
    expect(FileStore.contentTypeOf("tasks/t/video-0.mp4")).toBe("video/mp4")
    expect(FileStore.contentTypeOf("a/b.PNG")).toBe("image/png")
    expect(FileStore.contentTypeOf("b.jpg")).toBe("image/jpeg")
    expect(FileStore.contentTypeOf("b.jpeg")).toBe("image/jpeg")
    expect(FileStore.contentTypeOf("v1.2/noext")).toBe("application/octet-stream")
    expect(FileStore.contentTypeOf("a/b.unknown")).toBe("application/octet-stream")
  })

  it("Range headers: one bytes range, anything else ignored", () => {
    expect(FileService.parseRangeHeader("bytes=0-9")).toEqual({ _tag: "FromTo", start: 0, end: 9 })
    expect(FileService.parseRangeHeader("bytes=5-")).toEqual({ _tag: "FromTo", start: 5, end: undefined })
    expect(FileService.parseRangeHeader("bytes=-5")).toEqual({ _tag: "Suffix", length: 5 })
    expect(FileService.parseRangeHeader(" Bytes = 1 - 2 ")).toEqual({ _tag: "FromTo", start: 1, end: 2 })
    for (
      const header of [
        undefined,
        "",
        "bytes=",
        "bytes=-",
        "bytes=9-0",
        "bytes=0-1,4-5",
        "items=0-1",
        "bytes=a-b",
        "bytes=99999999999999999999-"
      ]
    ) {
      expect(FileService.parseRangeHeader(header), String(header)).toBeUndefined()
    }
    const resolve = (header: string, size: number) =>
      FileStore.resolveRange(FileService.parseRangeHeader(header)!, size)
    expect(resolve("bytes=0-9", 100)).toEqual({ start: 0, end: 9 })
    expect(resolve("bytes=90-200", 100)).toEqual({ start: 90, end: 99 })
    expect(resolve("bytes=-5", 100)).toEqual({ start: 95, end: 99 })
    expect(resolve("bytes=-500", 100)).toEqual({ start: 0, end: 99 })
    expect(resolve("bytes=99-", 100)).toEqual({ start: 99, end: 99 })
    expect(resolve("bytes=100-", 100)).toBeUndefined()
    expect(resolve("bytes=-0", 100)).toBeUndefined()
    expect(resolve("bytes=0-", 0)).toBeUndefined()
  })
})

describe("FileStore: local disk", () => {
  layer(LocalStore)((it) => {
    it.effect("put then open: the same bytes, size and type; written atomically", () =>
      Effect.gen(function*() {
        const store = yield* FileStore.FileStore
        const bytes = bytesOf(1000)
        const stored = yield* store.put("tasks/task_1/video-0.mp4", bytes, "video/mp4")
        expect(stored).toEqual({ key: "tasks/task_1/video-0.mp4", size: 1000, contentType: "video/mp4" })
        const onDisk = join(directory, "store", "tasks", "task_1", "video-0.mp4")
        expect(new Uint8Array(readFileSync(onDisk))).toEqual(bytes)
        expect(listFiles(join(directory, "store", "tasks", "task_1"))).toEqual(["video-0.mp4"]) // no temporary left

        const opened = yield* store.open("tasks/task_1/video-0.mp4")
        assert.isTrue(Option.isSome(opened))
        const file = Option.getOrThrow(opened)
        expect([file.size, file.contentType, file.range]).toEqual([1000, "video/mp4", undefined])
        expect((yield* collect(file.stream)).bytes).toEqual(bytes)

        // the content type may carry parameters; its essence must match the extension
        const text = yield* store.put("notes/a.txt", new TextEncoder().encode("hi"), "text/plain")
        expect(text.contentType).toBe("text/plain; charset=utf-8")
      }))

    it.effect("writing a key again replaces the file", () =>
      Effect.gen(function*() {
        const store = yield* FileStore.FileStore
        yield* store.put("tasks/task_2/image-0.png", bytesOf(50, 3), "image/png")
        yield* store.put("tasks/task_2/image-0.png", bytesOf(20, 5), "image/png")
        const file = Option.getOrThrow(yield* store.open("tasks/task_2/image-0.png"))
        expect(file.size).toBe(20)
        expect((yield* collect(file.stream)).bytes).toEqual(bytesOf(20, 5))
        expect(listFiles(join(directory, "store", "tasks", "task_2"))).toEqual(["image-0.png"])
      }))

    it.effect("ranges: the selected bytes only, streamed in chunks for large files", () =>
      Effect.gen(function*() {
        const store = yield* FileStore.FileStore
        const bytes = bytesOf(300 * 1024)
        yield* store.put("tasks/task_3/video-0.mp4", bytes, "video/mp4")
        const open = (header: string) =>
          Effect.map(store.open("tasks/task_3/video-0.mp4", FileService.parseRangeHeader(header)), Option.getOrThrow)

        const first = yield* open("bytes=0-9")
        expect(first.range).toEqual({ start: 0, end: 9 })
        expect((yield* collect(first.stream)).bytes).toEqual(bytes.slice(0, 10))

        const suffix = yield* open("bytes=-5")
        expect(suffix.range).toEqual({ start: bytes.length - 5, end: bytes.length - 1 })
        expect((yield* collect(suffix.stream)).bytes).toEqual(bytes.slice(-5))

        const tail = yield* open("bytes=100000-")
        const read = yield* collect(tail.stream)
        assert.isTrue(same(read.bytes, bytes.slice(100000)))
        expect(read.chunks).toBeGreaterThan(1)

        const whole = yield* collect(Option.getOrThrow(yield* store.open("tasks/task_3/video-0.mp4")).stream)
        assert.isTrue(same(whole.bytes, bytes))
        expect(whole.chunks).toBe(5) // 64 KiB chunks

        const unsatisfiable = yield* Effect.flip(
          store.open("tasks/task_3/video-0.mp4", { _tag: "FromTo", start: bytes.length, end: undefined })
        )
        expect(unsatisfiable).toMatchObject({ _tag: "UnsatisfiableRange", size: bytes.length })
      }))

    it.effect("unknown keys open as None; remove deletes and is idempotent", () =>
      Effect.gen(function*() {
        const store = yield* FileStore.FileStore
        expect(yield* store.open("tasks/none/video-0.mp4")).toEqual(Option.none())
        expect(yield* store.open("tasks")).toEqual(Option.none()) // a directory is no file
        yield* store.put("tasks/task_4/a.png", bytesOf(10), "image/png")
        yield* store.remove("tasks/task_4/a.png")
        expect(yield* store.open("tasks/task_4/a.png")).toEqual(Option.none())
        yield* store.remove("tasks/task_4/a.png")
        expect(existsSync(join(directory, "store", "tasks", "task_4", "a.png"))).toBe(false)
      }))

    it.effect("removing a minute's last result removes its empty directories up to the root, and no more", () =>
      Effect.gen(function*() {
        const store = yield* FileStore.FileStore
        const at = Date.UTC(2026, 10, 25, 13, 5, 9)
        const key = (id: string, minutes = 0) =>
          FileStore.resultKey({ id, createdAt: at + minutes * 60_000 }, "image-0.png")
        expect(key("task_a")).toBe("tasks/2026-11-25/1305/task_a-image-0.png")
        for (const k of [key("task_a"), key("task_b"), key("task_c", 1)]) yield* store.put(k, bytesOf(10), "image/png")
        const day = join(directory, "store", "tasks", "2026-11-25")
        yield* store.remove(key("task_a"))
        expect(readdirSync(join(day, "1305"))).toEqual(["task_b-image-0.png"]) // its neighbour stays
        yield* store.remove(key("task_b"))
        expect(readdirSync(day)).toEqual(["1306"]) // the empty minute is gone, the day still holds one
        yield* store.remove(key("task_c", 1))
        expect(existsSync(day)).toBe(false)
        expect(existsSync(join(directory, "store"))).toBe(true) // the root stays
      }))

    it.effect("refuses keys that could escape the root, and a content type the extension contradicts", () =>
      Effect.gen(function*() {
        const store = yield* FileStore.FileStore
        for (const key of ["../escape.png", "a/../../escape.png", "/tmp/escape.png", "a\0.png", "..", ".hidden.png"]) {
          expect(yield* Effect.flip(store.put(key, bytesOf(4), "image/png")), key).toMatchObject({
            _tag: "InvalidFileKey",
            key
          })
          expect(yield* Effect.flip(store.open(key)), key).toMatchObject({ _tag: "InvalidFileKey" })
          expect(yield* Effect.flip(store.remove(key)), key).toMatchObject({ _tag: "InvalidFileKey" })
        }
        expect(existsSync(join(directory, "escape.png"))).toBe(false)
        const mismatch = yield* Effect.flip(store.put("tasks/t/a.png", bytesOf(4), "video/mp4"))
        expect(mismatch).toMatchObject({ _tag: "InvalidFileKey" })
        expect(mismatch.message).toContain("image/png")
      }))
  })
})

const secret = Redacted.make("test-secret")
const hmac = (key: string, expires: number) =>
  createHmac("sha256", "test-secret").update(`${key}:${expires}`).digest("hex")
const Signer = UrlSigner.layer({ publicBaseUrl: "https://media.example.com/", secret, defaultTtlSeconds: 3600 })
const now = 1_700_000_000

const query = (url: string) => {
  const parsed = new URL(url)
  return {
    expires: parsed.searchParams.get("expires") ?? undefined,
    signature: parsed.searchParams.get("signature") ?? undefined
  }
}

describe("UrlSigner", () => {
  it.effect("signs <base>/files/<key>?expires&signature with HMAC-SHA256 over <key>:<expires>", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now * 1000)
      const signer = yield* UrlSigner.UrlSigner
      const key = "tasks/task_1/video-0.mp4"
      const url = yield* signer.sign(key)
      expect(url).toBe(
        `https://media.example.com/files/${key}?expires=${now + 3600}&signature=${hmac(key, now + 3600)}`
      )
      expect(yield* signer.sign(key, 60)).toContain(`expires=${now + 60}&`)
      const q = query(url)
      expect(yield* signer.verify(key, q.expires, q.signature)).toBe(true)
      expect(yield* signer.verify(key, q.expires, q.signature!.toUpperCase())).toBe(true)
    }).pipe(Effect.provide(Signer)))

  it.effect("refuses tampered, missing and expired signatures", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now * 1000)
      const signer = yield* UrlSigner.UrlSigner
      const key = "tasks/task_1/video-0.mp4"
      const { expires, signature } = query(yield* signer.sign(key))
      const flipped = `${signature!.slice(0, -1)}${signature!.endsWith("0") ? "1" : "0"}`
      expect(yield* signer.check("tasks/task_1/video-1.mp4", expires, signature)).toBe("invalid")
      expect(yield* signer.check(key, String(Number(expires) + 1), signature)).toBe("invalid")
      expect(yield* signer.check(key, expires, flipped)).toBe("invalid")
      expect(yield* signer.check(key, expires, signature!.slice(2))).toBe("invalid")
      expect(yield* signer.check(key, "12e9", signature)).toBe("invalid")
      expect(yield* signer.check(key, undefined, signature)).toBe("missing")
      expect(yield* signer.check(key, expires, undefined)).toBe("missing")
      expect(yield* signer.check(key, expires, "")).toBe("missing")
      // another secret signs differently
      const other = UrlSigner.make({ publicBaseUrl: "https://media.example.com", secret: Redacted.make("other") })
      expect(yield* other.check(key, expires, signature)).toBe("invalid")

      yield* TestClock.adjust("3600 seconds")
      expect(yield* signer.check(key, expires, signature)).toBe("valid") // the last second still counts
      yield* TestClock.adjust("1 second")
      expect(yield* signer.check(key, expires, signature)).toBe("expired")
      expect(yield* signer.verify(key, expires, signature)).toBe(false)
    }).pipe(Effect.provide(Signer)))

  it.effect("from Config: base URL, secret, defaults", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now * 1000)
      const withConfig = (entries: ReadonlyArray<readonly [string, string]>) =>
        Effect.flatMap(UrlSigner.UrlSigner, (s) => s.sign("a.png")).pipe(
          Effect.provide(UrlSigner.layerConfig),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(entries)))
        )
      const configured = yield* withConfig([["MEDIAGATE_PUBLIC_BASE_URL", "https://cdn.example.com/mg"], [
        "MEDIAGATE_FILE_SECRET",
        "test-secret"
      ]])
      expect(configured).toBe(
        `https://cdn.example.com/mg/files/a.png?expires=${now + 7 * 86400}&signature=${hmac("a.png", now + 7 * 86400)}`
      )
      expect(yield* withConfig([["PORT", "8080"], ["MEDIAGATE_FILE_SECRET", "test-secret"]])).toMatch(
        /^http:\/\/localhost:8080\/files\/a\.png\?/
      )
      // no secret: a random one per layer, so two builds disagree
      const one = yield* withConfig([])
      const two = yield* withConfig([])
      expect(one).toMatch(/^http:\/\/localhost:3000\/files\/a\.png\?expires=\d+&signature=[0-9a-f]{64}$/)
      expect(one).not.toBe(two)
      const bad = yield* Effect.either(withConfig([["MEDIAGATE_PUBLIC_BASE_URL", "ftp://x"]]))
      assert.isTrue(Either.isLeft(bad))
    }))
})

describe("FileService over the local store", () => {
  const Live = FileService.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(FileStore.layerLocal({ directory: join(directory, "service") }), Signer)),
    Layer.provide(NodeContext.layer)
  )
  layer(Live)((it) => {
    it.effect("a signed URL opens: 200, 206, 416; bad signatures 403; unknown keys 404", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(now * 1000)
        const store = yield* FileStore.FileStore
        const signer = yield* UrlSigner.UrlSigner
        const files = yield* Services.FileService
        const key = "tasks/task_9/video-0.mp4"
        const bytes = bytesOf(1000)
        yield* store.put(key, bytes, "video/mp4")
        const q = query(yield* signer.sign(key))

        const whole = yield* files.open(key, q, undefined)
        expect(whole.status).toBe(200)
        expect(whole.headers).toEqual({
          "content-type": "video/mp4",
          "content-length": "1000",
          "accept-ranges": "bytes",
          "cache-control": "private, max-age=3600",
          "x-content-type-options": "nosniff"
        })
        expect((yield* collect(whole.body)).bytes).toEqual(bytes)

        const first = yield* files.open(key, q, "bytes=0-9")
        expect(first.status).toBe(206)
        expect(first.headers).toMatchObject({ "content-range": "bytes 0-9/1000", "content-length": "10" })
        expect((yield* collect(first.body)).bytes).toEqual(bytes.slice(0, 10))

        const suffix = yield* files.open(key, q, "bytes=-5")
        expect(suffix.headers).toMatchObject({ "content-range": "bytes 995-999/1000", "content-length": "5" })
        expect((yield* collect(suffix.body)).bytes).toEqual(bytes.slice(995))

        const open = yield* files.open(key, q, "bytes=990-")
        expect(open.headers).toMatchObject({ "content-range": "bytes 990-999/1000", "content-length": "10" })

        const ignored = yield* files.open(key, q, "bytes=0-1,5-6")
        expect(ignored.status).toBe(200)

        const unsatisfiable = yield* Effect.flip(files.open(key, q, "bytes=1000-"))
        assert.instanceOf(unsatisfiable, Errors.RangeNotSatisfiable)
        expect(unsatisfiable.message).toBe("range bytes=1000- is not satisfiable: the file has 1000 bytes")
        expect(unsatisfiable).toMatchObject({ size: 1000 }) // the 416's Content-Range names it

        const denied = (expires: string | undefined, signature: string | undefined, k = key) =>
          Effect.flip(files.open(k, { expires, signature }, undefined))
        const missing = yield* denied(undefined, undefined)
        assert.instanceOf(missing, Errors.FileAccessDenied)
        expect(missing.message).toContain("not signed")
        expect((yield* denied(q.expires, "0".repeat(64))).message).toBe("file URL signature is invalid")
        expect((yield* denied(q.expires, q.signature, "tasks/task_9/video-1.mp4"))._tag).toBe("FileAccessDenied")

        // unknown or invalid keys, correctly signed, are 404
        const ghost = "tasks/task_9/ghost.mp4"
        const ghostQuery = query(yield* signer.sign(ghost))
        const notFound = yield* Effect.flip(files.open(ghost, ghostQuery, undefined))
        assert.instanceOf(notFound, Errors.NotFound)
        const escaping = "../service/tasks/task_9/video-0.mp4"
        const escapingQuery = query(yield* signer.sign(escaping))
        assert.instanceOf(yield* Effect.flip(files.open(escaping, escapingQuery, undefined)), Errors.NotFound)

        yield* TestClock.adjust("1800 seconds")
        expect((yield* files.open(key, q, undefined)).headers["cache-control"]).toBe("private, max-age=1800")
        yield* TestClock.adjust("1801 seconds")
        const expired = yield* Effect.flip(files.open(key, q, undefined))
        assert.instanceOf(expired, Errors.FileAccessDenied)
        expect(expired.message).toBe("file URL has expired")
      }))
  })
})
