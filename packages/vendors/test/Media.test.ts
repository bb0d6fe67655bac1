import { assert, describe, expect, it } from "@effect/vitest"
import { run } from "@mediagate/testing/processes"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import jpeg from "jpeg-js"
import { fileURLToPath } from "node:url"
import { PNG } from "pngjs"
import * as EncoderThread from "../src/internal/encoderThread.js"
import * as Media from "../src/Media.js"
import { probeVideoBytes } from "./probe.js"

/** MP4Box.js's view of MP4 bytes (see probe.ts: it also fails on a file a player would refuse). */
const probe = (bytes: Uint8Array) => {
  const probed = probeVideoBytes(bytes)
  return {
    codec: probed.codec,
    width: probed.width,
    height: probed.height,
    duration: probed.durationSeconds,
    frames: probed.frames
  }
}

const timed = <A, E, R>(label: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = performance.now()
    const value = yield* effect
    console.log(`${label}: ${Math.round(performance.now() - started)} ms`)
    return value
  })

const pngHeader = (bytes: Uint8Array) => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return { width: view.getUint32(16), height: view.getUint32(20) }
}

/**
 * A JPEG's size from its frame header (SOF0 or SOF2), and whether it ends with the end-of-image marker: a whole
 * decode of 4096x4096 in the test's own thread takes it away from the runner for a minute on a busy machine.
 */
const jpegHeader = (bytes: Uint8Array) => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const ends = view.getUint16(bytes.byteLength - 2) === 0xffd9
  // segments after SOI: marker (2 bytes), length (2 bytes, counting itself), payload
  for (let at = 2; at + 4 <= bytes.byteLength;) {
    const marker = view.getUint16(at)
    if (marker === 0xffc0 || marker === 0xffc2) {
      return { width: view.getUint16(at + 7), height: view.getUint16(at + 5), ends }
    }
    at += 2 + view.getUint16(at + 2)
  }
  return undefined
}

describe("Media: videos", () => {
  const cases: ReadonlyArray<Media.VideoSpec> = [
    { width: 1280, height: 720, durationSeconds: 5 },
    { width: 720, height: 1280, durationSeconds: 5 },
    { width: 854, height: 480, durationSeconds: 4 },
    { width: 960, height: 960, durationSeconds: 2.5 },
    { width: 640, height: 360, durationSeconds: 3, fps: 24 },
    { width: 1920, height: 1080, durationSeconds: 15 }
  ]
  for (const spec of cases) {
    const label = `${spec.width}x${spec.height} ${spec.durationSeconds} s at ${spec.fps ?? Media.defaultFps} fps`
    it.scoped(`${label}: mp4box.js reads h264 of that size, duration and frame count`, () =>
      Effect.gen(function*() {
        const renderer = yield* Media.make()
        const bytes = yield* timed(`encode ${label}`, renderer.renderVideo(spec))
        const info = probe(bytes)
        expect(info.codec).toBe("h264")
        expect(info.width).toBe(spec.width)
        expect(info.height).toBe(spec.height)
        const fps = spec.fps ?? Media.defaultFps
        expect(Math.abs(info.duration - spec.durationSeconds)).toBeLessThanOrEqual(0.1)
        expect(info.frames).toBe(Math.round(spec.durationSeconds * fps))
        // the track lasts exactly its frames at that rate (the container duration, not an estimate)
        expect(info.duration).toBeCloseTo(info.frames / fps, 6)
      }), { timeout: 60_000 })
  }

  it.scoped(
    "the cache encodes a clip once, shares a rendering under way and returns identical bytes",
    () =>
      Effect.gen(function*() {
        const renderer = yield* Media.make()
        const spec = { width: 320, height: 240, durationSeconds: 2 }
        const [a, b, c] = yield* Effect.all(
          [
            renderer.renderVideo(spec),
            renderer.renderVideo(spec),
            renderer.renderVideo({ ...spec, fps: Media.defaultFps })
          ],
          { concurrency: "unbounded" }
        )
        const d = yield* renderer.renderVideo(spec)
        expect(renderer.stats()).toMatchObject({ videoEncodes: 1, hits: 3, entries: 1, cachedBytes: a.byteLength })
        expect(b).toEqual(a)
        expect(c).toEqual(a)
        expect(d).toEqual(a)
        // another duration or rate is another clip
        yield* renderer.renderVideo({ ...spec, durationSeconds: 3 })
        yield* renderer.renderVideo({ ...spec, fps: 4 })
        expect(renderer.stats().videoEncodes).toBe(3)
        // a fresh renderer encodes the same picture again (the MP4 boxes carry a creation time, so compare sizes)
        const again = yield* Effect.flatMap(Media.make(), (fresh) => fresh.renderVideo(spec))
        expect(again.byteLength).toBe(a.byteLength)
      }),
    { timeout: 60_000 }
  )

  it.scoped("an interrupted caller does not cancel the rendering for the others", () =>
    Effect.gen(function*() {
      const renderer = yield* Media.make()
      const spec = { width: 160, height: 120, durationSeconds: 3 }
      const first = yield* Effect.fork(renderer.renderVideo(spec))
      const second = yield* Effect.fork(renderer.renderVideo(spec))
      yield* Fiber.interrupt(first)
      const bytes = yield* Fiber.join(second)
      expect(bytes.byteLength).toBeGreaterThan(0)
      expect(yield* renderer.renderVideo(spec)).toBe(bytes)
      expect(renderer.stats().videoEncodes).toBe(1)
    }), { timeout: 60_000 })

  it.effect(
    "closing the renderer's scope interrupts a rendering under way and its waiters",
    () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const renderer = yield* Scope.extend(Media.make(), scope)
        const spec = { width: 640, height: 480, durationSeconds: 60 }
        const waiters = yield* Effect.forEach([1, 2], () => Effect.fork(renderer.renderVideo(spec)))
        while (renderer.stats().videoEncodes === 0) yield* Effect.yieldNow()
        yield* Scope.close(scope, Exit.void)
        for (const waiter of waiters) assert.isTrue(Exit.isInterrupted(yield* Fiber.await(waiter)))
        expect(renderer.stats()).toMatchObject({ videoEncodes: 1, entries: 0, cachedBytes: 0 })
        // a closed renderer starts nothing
        assert.isTrue(
          Exit.isInterrupted(yield* Effect.exit(renderer.renderImage({ width: 4, height: 4, format: "png" })))
        )
        expect(renderer.stats().imageEncodes).toBe(0)
      }),
    { timeout: 60_000 }
  )

  it.effect("a waiter never hangs when the scope closes around the start of a rendering", () =>
    Effect.gen(function*() {
      for (let yields = 0; yields < 4; yields++) {
        const scope = yield* Scope.make()
        const renderer = yield* Scope.extend(Media.make(), scope)
        const waiter = yield* Effect.fork(renderer.renderImage({ width: 8, height: 8, format: "png" }))
        for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
        yield* Scope.close(scope, Exit.void)
        const exit = yield* Fiber.await(waiter)
        assert.isTrue(Exit.isSuccess(exit) || Exit.isInterrupted(exit))
      }
    }))

  it.scoped("refuses odd and out-of-range specs (a defect)", () =>
    Effect.gen(function*() {
      const renderer = yield* Media.make()
      for (
        const spec of [
          { width: 853, height: 480, durationSeconds: 5 },
          { width: 1280, height: 721, durationSeconds: 5 },
          { width: 0, height: 480, durationSeconds: 5 },
          { width: 1280, height: 720, durationSeconds: 0 },
          { width: 1280, height: 720, durationSeconds: 5, fps: 2.5 }
        ]
      ) {
        const exit = yield* Effect.exit(renderer.renderVideo(spec))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const defect = Cause.dieOption(exit.cause)
          assert.isTrue(defect._tag === "Some" && Cause.isIllegalArgumentException(defect.value), JSON.stringify(spec))
        }
      }
      expect(renderer.stats().videoEncodes).toBe(0)
    }))

  it.scoped("the last frame is a PNG of the video's size, with the bar at the right end", () =>
    Effect.gen(function*() {
      const renderer = yield* Media.make()
      for (const [width, height] of [[1280, 720], [720, 1280]] as const) {
        const bytes = yield* renderer.renderLastFrame({ width, height, durationSeconds: 5 })
        const png = PNG.sync.read(Buffer.from(bytes))
        expect([png.width, png.height]).toEqual([width, height])
        const brightness = (x: number, y: number) => {
          const i = (y * width + x) * 4
          return png.data[i]! + png.data[i + 1]! + png.data[i + 2]!
        }
        const barWidth = Math.round(width / 16)
        expect(brightness(width - Math.round(barWidth / 2), height >> 1)).toBeGreaterThan(
          brightness(barWidth * 2, height >> 1)
        )
      }
      yield* renderer.renderLastFrame({ width: 1280, height: 720, durationSeconds: 5 })
      expect(renderer.stats()).toMatchObject({ frameEncodes: 2, hits: 1 })
    }))
})

describe("Media: images", () => {
  const sizes = [[1024, 1024], [2048, 2048], [1280, 720], [1536, 640], [333, 77]] as const
  for (const [width, height] of sizes) {
    it.scoped(`PNG ${width}x${height} decodes back to that size`, () =>
      Effect.gen(function*() {
        const bytes = yield* Effect.flatMap(Media.make(), (r) => r.renderImage({ width, height, format: "png" }))
        const png = PNG.sync.read(Buffer.from(bytes))
        expect([png.width, png.height]).toEqual([width, height])
        // a gradient: left and right differ
        expect(png.data[0]).not.toBe(png.data[(width - 1) * 4])
      }))
    it.scoped(`JPEG ${width}x${height} decodes back to that size`, () =>
      Effect.gen(function*() {
        const bytes = yield* Effect.flatMap(Media.make(), (r) => r.renderImage({ width, height, format: "jpeg" }))
        expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8])
        const image = jpeg.decode(bytes, { useTArray: true })
        expect([image.width, image.height]).toEqual([width, height])
        expect(jpegHeader(bytes)).toEqual({ width, height, ends: true })
      }))
  }

  it.scoped("4096x4096 stays affordable", () =>
    Effect.gen(function*() {
      const renderer = yield* Media.make()
      const png = yield* timed(
        "render PNG 4096x4096",
        renderer.renderImage({ width: 4096, height: 4096, format: "png" })
      )
      expect(pngHeader(png)).toEqual({ width: 4096, height: 4096 })
      expect(png.byteLength).toBeLessThan(1024 * 1024)
      const jpg = yield* timed(
        "render JPEG 4096x4096",
        renderer.renderImage({ width: 4096, height: 4096, format: "jpeg" })
      )
      // the pixels of JPEGs up to 2048x2048 are decoded above; this one's header and end
      expect(jpegHeader(jpg)).toEqual({ width: 4096, height: 4096, ends: true })
    }), { timeout: 180_000 })

  it.scoped("images are cached by size and format, bounded by bytes (least recently used first)", () =>
    Effect.gen(function*() {
      const a = { width: 64, height: 64, format: "png" } as const
      const b = { width: 96, height: 96, format: "png" } as const
      const c = { width: 96, height: 97, format: "png" } as const
      const probeRenderer = yield* Media.make()
      const sizeOf = (spec: Media.ImageSpec) => Effect.map(probeRenderer.renderImage(spec), (bytes) => bytes.byteLength)
      const budget = (yield* sizeOf(a)) + Math.max(yield* sizeOf(b), yield* sizeOf(c))

      const renderer = yield* Media.make({ maxCacheBytes: budget })
      const first = yield* renderer.renderImage(a)
      yield* renderer.renderImage(b)
      expect(yield* renderer.renderImage(a)).toBe(first) // hit: a is now the most recently used
      yield* renderer.renderImage(c) // evicts b
      yield* renderer.renderImage(a) // still cached
      expect(renderer.stats()).toMatchObject({ imageEncodes: 3, hits: 2, entries: 2 })
      yield* renderer.renderImage(b) // encoded again
      expect(renderer.stats().imageEncodes).toBe(4)
      expect(renderer.stats().cachedBytes).toBeLessThanOrEqual(budget)

      const tiny = yield* Media.make({ maxCacheBytes: 1 })
      yield* tiny.renderImage(a)
      yield* tiny.renderImage(a)
      expect(tiny.stats()).toMatchObject({ imageEncodes: 2, entries: 0, cachedBytes: 0 })
    }))

  it.effect("the layer's renderer is shared by everything it is provided to", () =>
    Effect.gen(function*() {
      const renderer = yield* Media.Renderer
      const before = renderer.stats().imageEncodes
      const one = yield* Effect.flatMap(Media.Renderer, (r) => r.renderImage({ width: 10, height: 20, format: "jpeg" }))
      const two = yield* Effect.flatMap(Media.Renderer, (r) => r.renderImage({ width: 10, height: 20, format: "jpeg" }))
      expect(two).toBe(one)
      expect(renderer.stats().imageEncodes).toBe(before + 1)
      expect(Media.imageContentType("jpeg")).toBe("image/jpeg")
    }).pipe(Effect.provide(Media.layer())))
})

describe("Media: the encoder thread", () => {
  /** Real time (the thread's idle timer is a real one, not the test clock's). */
  const sleep = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))
  /** Waits until the thread is down, at most `millis`; answers whether it is. */
  const down = (millis: number) =>
    Effect.gen(function*() {
      for (let waited = 0; EncoderThread.isRunning() && waited < millis; waited += 50) yield* sleep(50)
      return !EncoderThread.isRunning()
    })
  const clip = (seconds: number): Media.VideoSpec => ({ width: 320, height: 240, durationSeconds: seconds })

  it.scoped("encodes on a thread that ends once idle; the next clip starts another", () =>
    Effect.gen(function*() {
      yield* down(5_000)
      const bytes = yield* Effect.flatMap(Media.make(), (renderer) => renderer.renderVideo(clip(2)))
      expect(probe(bytes)).toMatchObject({ codec: "h264", width: 320, height: 240, frames: 4 })
      expect(EncoderThread.isRunning()).toBe(true)
      expect(yield* down(EncoderThread.encoderIdleMillis + 4_000)).toBe(true)
      const again = yield* Effect.flatMap(Media.make(), (renderer) => renderer.renderVideo(clip(2)))
      // the same clip (the MP4's creation time in its header aside)
      expect(probe(again)).toEqual(probe(bytes))
      expect(again.byteLength).toBe(bytes.byteLength)
      expect(EncoderThread.isRunning()).toBe(true)
    }))

  it.effect("an encoding interrupted with its renderer's scope ends the thread; the next clip still encodes", () =>
    Effect.gen(function*() {
      expect(yield* down(EncoderThread.encoderIdleMillis + 4_000)).toBe(true) // the thread of an earlier test
      const scope = yield* Scope.make()
      const renderer = yield* Scope.extend(Media.make(), scope)
      const waiter = yield* Effect.fork(renderer.renderVideo({ width: 1920, height: 1080, durationSeconds: 60 }))
      while (!EncoderThread.isRunning()) yield* Effect.yieldNow()
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(waiter)))
      expect(EncoderThread.isRunning()).toBe(false)
      const bytes = yield* Effect.scoped(Effect.flatMap(Media.make(), (fresh) => fresh.renderVideo(clip(1))))
      expect(probe(bytes)).toMatchObject({ width: 320, height: 240, frames: 2 })
    }))

  it("keeps a process alive while it encodes, and not once idle", async () => {
    // a script whose only pending work is one clip: it must get the bytes (the thread keeps it alive meanwhile) and
    // then exit by itself (an idle thread does not keep it alive); a hang would end at the timeout
    const media = new URL("../src/Media.ts", import.meta.url).href
    const script = `import * as Effect from "effect/Effect"
      import * as Media from ${JSON.stringify(media)}
      const bytes = await Effect.runPromise(Effect.scoped(Effect.flatMap(Media.make(), (renderer) =>
        renderer.renderVideo({ width: 160, height: 120, durationSeconds: 1 }))))
      console.log("bytes", bytes.byteLength)`
    const started = Date.now()
    const ran = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      timeoutMs: 60_000
    })
    expect(ran.stderr).toBe("")
    expect(ran.status).toBe(0)
    expect(ran.stdout).toMatch(/^bytes [1-9]\d*\n$/)
    // it exits when idle, not at the timeout (the thread's idle timer does not hold it either)
    expect(Date.now() - started).toBeLessThan(50_000)
  }, 70_000)
})
