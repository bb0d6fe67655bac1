/**
 * One conformance suite for every `FileStore`: the local disk and the S3 store (on s3rver, with and without a key
 * prefix), and the `FileService` over each of them.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, expect, layer } from "@effect/vitest"
import { Errors, Services } from "@mediagate/contract"
import * as Chunk from "effect/Chunk"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as FileService from "../src/FileService.js"
import * as FileStore from "../src/FileStore.js"
import * as S3FileStore from "../src/S3FileStore.js"
import * as UrlSigner from "../src/UrlSigner.js"
import { s3Server, s3Settings } from "./s3server.js"

const directory = mkdtempSync(join(tmpdir(), "mediagate-conformance-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

const bytesOf = (length: number, seed = 7) => Uint8Array.from({ length }, (_, i) => (i * seed + (i >> 8)) % 256)

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)))

const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b))

/** An S3 store on a fresh s3rver, configured as the stack configures it (Effect `Config`). */
const s3Store = (prefix: string) =>
  Layer.unwrapScoped(Effect.map(s3Server(), (server) =>
    S3FileStore.layerConfig.pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(s3Settings(server, prefix)))))
    )))

const backends: ReadonlyArray<readonly [string, Layer.Layer<FileStore.FileStore, unknown>]> = [
  ["local disk", FileStore.layerLocal({ directory: join(directory, "local") }).pipe(Layer.provide(NodeContext.layer))],
  ["s3", s3Store("")],
  ["s3 with a key prefix", s3Store("mediagate/results/")]
]

const Signer = UrlSigner.layer({
  publicBaseUrl: "https://media.example.com",
  secret: Redacted.make("s"),
  defaultTtlSeconds: 3600
})

for (const [name, store] of backends) {
  describe(`FileStore conformance: ${name}`, () => {
    layer(FileService.layer.pipe(Layer.provideMerge(Layer.merge(store, Signer))), { timeout: "60 seconds" })((it) => {
      it.effect("put then open: the same bytes, size and content type; a second put replaces", () =>
        Effect.gen(function*() {
          const files = yield* FileStore.FileStore
          const bytes = bytesOf(1000)
          expect(yield* files.put("tasks/t1/video-0.mp4", bytes, "video/mp4")).toEqual({
            key: "tasks/t1/video-0.mp4",
            size: 1000,
            contentType: "video/mp4"
          })
          const opened = Option.getOrThrow(yield* files.open("tasks/t1/video-0.mp4"))
          expect([opened.size, opened.contentType, opened.range]).toEqual([1000, "video/mp4", undefined])
          assert.isTrue(same(yield* collect(opened.stream), bytes))
          const text = yield* files.put("notes/a.txt", new TextEncoder().encode("hi"), "text/plain")
          expect(text.contentType).toBe("text/plain; charset=utf-8")

          yield* files.put("tasks/t1/video-0.mp4", bytesOf(20, 5), "video/mp4")
          const replaced = Option.getOrThrow(yield* files.open("tasks/t1/video-0.mp4"))
          expect(replaced.size).toBe(20)
          assert.isTrue(same(yield* collect(replaced.stream), bytesOf(20, 5)))
        }))

      it.effect("ranges: exactly the selected bytes; a range past the end is unsatisfiable with the size", () =>
        Effect.gen(function*() {
          const files = yield* FileStore.FileStore
          const bytes = bytesOf(200 * 1024)
          yield* files.put("tasks/t2/video-0.mp4", bytes, "video/mp4")
          const read = (header: string) =>
            Effect.flatMap(
              Effect.map(files.open("tasks/t2/video-0.mp4", FileService.parseRangeHeader(header)), Option.getOrThrow),
              (file) => Effect.map(collect(file.stream), (got) => ({ range: file.range, size: file.size, got }))
            )
          const first = yield* read("bytes=0-9")
          expect([first.range, first.size]).toEqual([{ start: 0, end: 9 }, bytes.length])
          assert.isTrue(same(first.got, bytes.slice(0, 10)))
          const suffix = yield* read("bytes=-5")
          expect(suffix.range).toEqual({ start: bytes.length - 5, end: bytes.length - 1 })
          assert.isTrue(same(suffix.got, bytes.slice(-5)))
          const tail = yield* read("bytes=100000-")
          assert.isTrue(same(tail.got, bytes.slice(100000)))
          const clipped = yield* read(`bytes=${bytes.length - 3}-${bytes.length + 100}`)
          assert.isTrue(same(clipped.got, bytes.slice(-3)))
          for (
            const range of [{ _tag: "FromTo", start: bytes.length, end: undefined }, {
              _tag: "Suffix",
              length: 0
            }] as const
          ) {
            const refused = yield* Effect.flip(files.open("tasks/t2/video-0.mp4", range))
            expect(refused).toMatchObject({ _tag: "UnsatisfiableRange", size: bytes.length })
          }
        }))

      it.effect("missing keys open as None; remove deletes and is idempotent", () =>
        Effect.gen(function*() {
          const files = yield* FileStore.FileStore
          expect(yield* files.open("tasks/none/video-0.mp4")).toEqual(Option.none())
          expect(yield* files.open("tasks/none/video-0.mp4", { _tag: "FromTo", start: 0, end: 9 })).toEqual(
            Option.none()
          )
          yield* files.put("tasks/t3/a.png", bytesOf(10), "image/png")
          yield* files.put("tasks/t3/b.png", bytesOf(10), "image/png")
          yield* files.remove("tasks/t3/a.png")
          expect(yield* files.open("tasks/t3/a.png")).toEqual(Option.none())
          yield* files.remove("tasks/t3/a.png")
          yield* files.remove("tasks/never/there.png")
          assert.isTrue(Option.isSome(yield* files.open("tasks/t3/b.png"))) // its neighbour stays
          yield* files.remove("tasks/t3/b.png")
          expect(yield* files.open("tasks/t3/b.png")).toEqual(Option.none())
          // an empty file is a file
          yield* files.put("tasks/t3/empty.json", new Uint8Array(0), "application/json")
          const empty = Option.getOrThrow(yield* files.open("tasks/t3/empty.json"))
          expect([empty.size, (yield* collect(empty.stream)).length]).toEqual([0, 0])
        }))

      it.effect("refuses invalid keys and a content type the extension contradicts", () =>
        Effect.gen(function*() {
          const files = yield* FileStore.FileStore
          for (const key of ["../escape.png", "/abs.png", "a//b.png", ".hidden.png", "a\0.png"]) {
            expect(yield* Effect.flip(files.put(key, bytesOf(4), "image/png")), key).toMatchObject({
              _tag: "InvalidFileKey"
            })
            expect(yield* Effect.flip(files.open(key)), key).toMatchObject({ _tag: "InvalidFileKey" })
            expect(yield* Effect.flip(files.remove(key)), key).toMatchObject({ _tag: "InvalidFileKey" })
          }
          expect(yield* Effect.flip(files.put("tasks/t/a.png", bytesOf(4), "video/mp4"))).toMatchObject({
            _tag: "InvalidFileKey"
          })
        }))

      it.effect("FileService over the store: 200, 206, 416 with the size, 404", () =>
        Effect.gen(function*() {
          yield* TestClock.setTime(1_700_000_000_000)
          const files = yield* FileStore.FileStore
          const signer = yield* UrlSigner.UrlSigner
          const service = yield* Services.FileService
          const key = "tasks/t4/video-0.mp4"
          const bytes = bytesOf(1000)
          yield* files.put(key, bytes, "video/mp4")
          const url = new URL(yield* signer.sign(key))
          const query = {
            expires: url.searchParams.get("expires") ?? undefined,
            signature: url.searchParams.get("signature") ?? undefined
          }
          const whole = yield* service.open(key, query, undefined)
          expect([whole.status, whole.headers["content-length"]]).toEqual([200, "1000"])
          assert.isTrue(same(yield* collect(whole.body), bytes))
          const part = yield* service.open(key, query, "bytes=10-19")
          expect([part.status, part.headers["content-range"]]).toEqual([206, "bytes 10-19/1000"])
          assert.isTrue(same(yield* collect(part.body), bytes.slice(10, 20)))
          const unsatisfiable = yield* Effect.flip(service.open(key, query, "bytes=1000-"))
          assert.instanceOf(unsatisfiable, Errors.RangeNotSatisfiable)
          expect(unsatisfiable).toMatchObject({ size: 1000 })
          yield* files.remove(key)
          assert.instanceOf(yield* Effect.flip(service.open(key, query, undefined)), Errors.NotFound)
        }))
    })
  })
}
