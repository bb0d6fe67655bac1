import { NodeHttpServer } from "@effect/platform-node"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Http, ServerConfig } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fileFixtures, fileUrl, PortsFake } from "./fakes.js"
import { send, TestServer } from "./harness.js"

/** A raw request whose body is read as bytes. */
const fetchBytes = (
  method: "GET" | "HEAD" | "POST",
  path: string,
  headers: Record<string, string> = {}
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(headers))
    )
    const bytes = new Uint8Array(yield* response.arrayBuffer)
    return { status: response.status, headers: response.headers, bytes }
  }).pipe(Effect.scoped)

const video = fileFixtures.video

describe("GET /files/*", () => {
  it.layer(TestServer)((it) => {
    it.effect("200: the whole file, streamed, with its headers", () =>
      Effect.gen(function*() {
        const answer = yield* fetchBytes("GET", fileUrl(video.key))
        assert.strictEqual(answer.status, 200)
        expect(answer.bytes).toEqual(video.bytes)
        expect(answer.headers).toMatchObject({
          "content-type": "video/mp4",
          "content-length": "300",
          "accept-ranges": "bytes",
          "cache-control": "private, max-age=60"
        })
        expect(answer.headers["content-range"]).toBeUndefined()

        const text = yield* send("GET", fileUrl(fileFixtures.text.key))
        assert.strictEqual(text.status, 200)
        assert.strictEqual(text.text, "hello, files")
        assert.strictEqual(text.headers["content-type"], "text/plain; charset=utf-8")
      }))

    it.effect("206: first bytes, last bytes, open-ended", () =>
      Effect.gen(function*() {
        const first = yield* fetchBytes("GET", fileUrl(video.key), { range: "bytes=0-9" })
        assert.strictEqual(first.status, 206)
        expect(first.bytes).toEqual(video.bytes.slice(0, 10))
        expect(first.headers).toMatchObject({ "content-range": "bytes 0-9/300", "content-length": "10" })

        const suffix = yield* fetchBytes("GET", fileUrl(video.key), { range: "bytes=-5" })
        assert.strictEqual(suffix.status, 206)
        expect(suffix.bytes).toEqual(video.bytes.slice(295))
        expect(suffix.headers).toMatchObject({ "content-range": "bytes 295-299/300", "content-length": "5" })

        const open = yield* fetchBytes("GET", fileUrl(video.key), { range: "bytes=250-" })
        assert.strictEqual(open.status, 206)
        expect(open.bytes).toEqual(video.bytes.slice(250))
        expect(open.headers).toMatchObject({ "content-range": "bytes 250-299/300", "content-length": "50" })
      }))

    it.effect("416: a range past the end, in the envelope, with Content-Range naming the size", () =>
      Effect.gen(function*() {
        const answer = yield* send("GET", fileUrl(video.key), { headers: { range: "bytes=300-" } })
        assert.strictEqual(answer.status, 416)
        expect(answer.body).toEqual({
          success: false,
          error: {
            code: "RANGE_NOT_SATISFIABLE",
            message: "range bytes=300- is not satisfiable: the file has 300 bytes"
          }
        })
        // RFC 9110 §15.5.17: the unsatisfied-range form
        assert.strictEqual(answer.headers["content-range"], "bytes */300")
      }))

    it.effect("403: missing, invalid and expired signatures", () =>
      Effect.gen(function*() {
        const cases = [
          [`/files/${video.key}`, "file URL is not signed"],
          [`/files/${video.key}?expires=${fileFixtures.expires}`, "file URL is not signed"],
          [fileUrl(video.key, { signature: "6".repeat(64) }), "file URL signature is invalid"],
          [fileUrl(video.key, { expires: fileFixtures.expired }), "file URL has expired"]
        ] as const
        for (const [path, message] of cases) {
          const answer = yield* send("GET", path)
          assert.strictEqual(answer.status, 403, path)
          expect(answer.body).toEqual({ success: false, error: { code: "FILE_ACCESS_DENIED", message } })
        }
      }))

    it.effect("404: an unknown key (with a valid signature)", () =>
      Effect.gen(function*() {
        const answer = yield* send("GET", fileUrl("tasks/task_1/nope.mp4"))
        assert.strictEqual(answer.status, 404)
        expect(answer.body).toEqual({
          success: false,
          error: { code: "NOT_FOUND", message: "file tasks/task_1/nope.mp4 not found" }
        })
      }))

    it.effect("405: other methods, with Allow", () =>
      Effect.gen(function*() {
        for (const method of ["POST", "DELETE", "PUT"] as const) {
          const answer = yield* send(method, fileUrl(video.key))
          assert.strictEqual(answer.status, 405, method)
          assert.strictEqual(answer.body.error.code, "METHOD_NOT_ALLOWED")
          assert.strictEqual(answer.headers["allow"], "GET, HEAD")
        }
        // /files itself is no file
        const bare = yield* send("GET", "/filesx")
        assert.strictEqual(bare.status, 404)
      }))

    it.effect("HEAD: the headers without the body", () =>
      Effect.gen(function*() {
        const answer = yield* fetchBytes("HEAD", fileUrl(video.key))
        assert.strictEqual(answer.status, 200)
        expect(answer.headers).toMatchObject({
          "content-type": "video/mp4",
          "content-length": "300",
          "accept-ranges": "bytes"
        })
        assert.strictEqual(answer.bytes.length, 0)
        const denied = yield* fetchBytes("HEAD", fileUrl(video.key, { signature: "0".repeat(64) }))
        assert.strictEqual(denied.status, 403)
      }))
  })

  it("is served by the web handler too", async () => {
    const { dispose, handler } = Http.toWebHandler(Layer.mergeAll(PortsFake, ServerConfig.layer()))
    try {
      const ok = await handler(
        new Request(`http://mediagate.local${fileUrl(video.key)}`, { headers: { range: "bytes=0-9" } })
      )
      expect(ok.status).toBe(206)
      expect(ok.headers.get("content-range")).toBe("bytes 0-9/300")
      expect(new Uint8Array(await ok.arrayBuffer())).toEqual(video.bytes.slice(0, 10))

      const head = await handler(new Request(`http://mediagate.local${fileUrl(video.key)}`, { method: "HEAD" }))
      expect(head.status).toBe(200)
      expect(head.headers.get("content-length")).toBe("300")

      const denied = await handler(new Request(`http://mediagate.local/files/${video.key}`))
      expect(denied.status).toBe(403)
      expect(await denied.json()).toMatchObject({ success: false, error: { code: "FILE_ACCESS_DENIED" } })

      const post = await handler(new Request(`http://mediagate.local${fileUrl(video.key)}`, { method: "POST" }))
      expect(post.status).toBe(405)
    } finally {
      await dispose()
    }
  })

  /** A host app mounting Mediagate's `HttpApp` at `/files`. */
  const Mounted = Layer.unwrapScoped(Effect.gen(function*() {
    const mediagate = yield* Http.makeHttpApp
    return HttpServer.serve(HttpRouter.empty.pipe(HttpRouter.mountApp("/files", mediagate, { includePrefix: true })))
  })).pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provide(PortsFake),
    Layer.provide(ServerConfig.layer())
  )

  layer(Mounted)("mounted with makeHttpApp", (it) => {
    it.effect("serves files", () =>
      Effect.gen(function*() {
        const answer = yield* fetchBytes("GET", fileUrl(video.key))
        assert.strictEqual(answer.status, 200)
        expect(answer.bytes).toEqual(video.bytes)
      }))
  })
})
