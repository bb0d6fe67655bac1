/**
 * Media files for the simulated upstream (decisions.md §8), rendered in process with pure JavaScript/WASM (no
 * external binary at run time):
 *
 * - images: a PNG (`pngjs`) or JPEG (`jpeg-js`) of exactly the requested size, a banded colour gradient (identical
 *   rows inside a band, so a 4096×4096 PNG deflates to a few dozen KiB);
 * - videos: an H.264 MP4 (`h264-mp4-encoder`, WASM) of exactly the requested size and duration, at a low frame
 *   rate ({@link defaultFps}) to keep encoding cheap: a gradient with a bar that sweeps from left to right;
 * - the last frame of such a video as a PNG (for `return_last_frame`).
 *
 * Everything rendered is cached per renderer (key: kind, size, duration, fps), bounded by bytes (LRU); concurrent
 * requests for the same key share one rendering, and an interrupted caller does not cancel it for the others. A
 * renderer belongs to a scope ({@link make}, {@link layer}): closing it interrupts the renderings under way.
 * Video encodings run one at a time process-wide on a worker thread (`internal/videoEncoder.ts`), ended a second
 * after its last clip: the server keeps answering while a clip is encoded, and the encoder's WASM memory (~17 MB,
 * ~25 MB of RSS) is handed back instead of staying for the life of the process.
 *
 * The returned bytes are shared with the cache: treat them as read-only. `pngjs` and `jpeg-js` are loaded with the
 * first image, the encoder with the first clip: importing this module loads none of them.
 *
 * Sizes: H.264 (and this encoder) needs even dimensions; a video spec with an odd width or height is refused (a
 * defect, `IllegalArgumentException`), like any other out-of-range spec. Every video size the catalog produces is
 * even (854x480, 1280x720, 1920x1080, 960x540 and their portrait/square variants), so callers pass sizes as they are.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type jpegJs from "jpeg-js"
import { createRequire } from "node:module"
import type * as pngjs from "pngjs"
import * as EncoderThread from "./internal/encoderThread.js"
import { drawFrame, frameBase, type VideoFrames } from "./internal/videoFrames.js"

// the encoders are CommonJS modules required on the first image (not when the package is imported)
const requireEncoder = createRequire(import.meta.url)
let pngModule: typeof pngjs | undefined
let jpegModule: typeof jpegJs | undefined
const PNG = () => (pngModule ??= requireEncoder("pngjs") as typeof pngjs).PNG
const jpeg = () => (jpegModule ??= requireEncoder("jpeg-js") as typeof jpegJs)

/**
 * An image to render.
 *
 * @since 0.1.0
 * @category models
 */
export interface ImageSpec {
  readonly width: number
  readonly height: number
  readonly format: "png" | "jpeg"
}

/**
 * A video to render.
 *
 * @since 0.1.0
 * @category models
 */
export interface VideoSpec {
  readonly width: number
  readonly height: number
  /** Duration in seconds (> 0). The clip lasts `round(duration × fps) / fps` seconds: exact for whole seconds. */
  readonly durationSeconds: number
  /** Frames per second (integer, 1..60); default {@link defaultFps}. */
  readonly fps?: number | undefined
}

/**
 * The default frame rate of rendered videos: low, because every frame costs encoding time.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultFps = 2

/**
 * Limits of what a renderer accepts (beyond them: a defect).
 *
 * @since 0.1.0
 * @category constants
 */
export const limits = {
  /** Largest image side. */
  maxImageSide: 16384,
  /** Largest image area (vendor sizes go up to about 16.7 MP). */
  maxImagePixels: 32 * 1024 * 1024,
  /** Largest video side. */
  maxVideoSide: 4096,
  /** Longest video, seconds. */
  maxVideoSeconds: 600,
  /** Highest frame rate. */
  maxFps: 60
} as const

/**
 * The MIME type of an image format.
 *
 * @since 0.1.0
 * @category utils
 */
export const imageContentType = (format: ImageSpec["format"]): string => format === "png" ? "image/png" : "image/jpeg"

/**
 * Counters of a renderer, for tests and metrics.
 *
 * @since 0.1.0
 * @category models
 */
export interface RendererStats {
  /** Videos actually encoded (cache misses). */
  readonly videoEncodes: number
  /** Images actually encoded (cache misses). */
  readonly imageEncodes: number
  /** Last-frame PNGs actually encoded (cache misses). */
  readonly frameEncodes: number
  /** Requests answered from the cache or from a rendering already under way. */
  readonly hits: number
  /** Entries currently cached (finished renderings). */
  readonly entries: number
  /** Bytes currently cached. */
  readonly cachedBytes: number
}

/**
 * A media renderer with its own cache (images, clips of even sizes and their last frames: see the module).
 *
 * @since 0.1.0
 * @category services
 */
export class Renderer extends Context.Tag("@mediagate/vendors/Media/Renderer")<Renderer, {
  readonly renderImage: (spec: ImageSpec) => Effect.Effect<Uint8Array>
  readonly renderVideo: (spec: VideoSpec) => Effect.Effect<Uint8Array>
  readonly renderLastFrame: (spec: VideoSpec) => Effect.Effect<Uint8Array>
  readonly stats: () => RendererStats
  /** Drops every finished entry (renderings under way complete normally). */
  readonly clear: () => void
}>() {}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface RendererOptions {
  /** Bytes the cache may hold (least recently used entries go first). Default 64 MiB. */
  readonly maxCacheBytes?: number | undefined
}

// ---------------------------------------------------------------------------------------------------------------
// Validation

const invalid = (message: string) => Effect.die(new Cause.IllegalArgumentException(message))

const isIntegerIn = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max

const checkImage = (spec: ImageSpec): Effect.Effect<void> => {
  if (!isIntegerIn(spec.width, 1, limits.maxImageSide) || !isIntegerIn(spec.height, 1, limits.maxImageSide)) {
    return invalid(
      `image size ${spec.width}x${spec.height}: each side must be an integer from 1 to ${limits.maxImageSide}`
    )
  }
  if (spec.width * spec.height > limits.maxImagePixels) {
    return invalid(`image size ${spec.width}x${spec.height}: more than ${limits.maxImagePixels} pixels`)
  }
  if (spec.format !== "png" && spec.format !== "jpeg") {
    return invalid(`image format ${String(spec.format)}: must be png or jpeg`)
  }
  return Effect.void
}

const normalizeVideo = (spec: VideoSpec) => {
  const { durationSeconds, height, width } = spec
  if (!isIntegerIn(width, 2, limits.maxVideoSide) || !isIntegerIn(height, 2, limits.maxVideoSide)) {
    return invalid(`video size ${width}x${height}: each side must be an integer from 2 to ${limits.maxVideoSide}`)
  }
  if (width % 2 !== 0 || height % 2 !== 0) {
    return invalid(`video size ${width}x${height}: H.264 needs even dimensions`)
  }
  if (!Number.isFinite(durationSeconds) || durationSeconds <= 0 || durationSeconds > limits.maxVideoSeconds) {
    return invalid(
      `video duration ${durationSeconds}: must be more than 0 and at most ${limits.maxVideoSeconds} seconds`
    )
  }
  const fps = spec.fps ?? defaultFps
  if (!isIntegerIn(fps, 1, limits.maxFps)) {
    return invalid(`video fps ${fps}: must be an integer from 1 to ${limits.maxFps}`)
  }
  return Effect.succeed<VideoFrames>({ width, height, fps, frames: Math.max(1, Math.round(durationSeconds * fps)) })
}

// ---------------------------------------------------------------------------------------------------------------
// Pictures

/** A colour of the image gradient at a horizontal position and band. */
const gradientRow = (width: number, band: number, bands: number, channels: 3 | 4): Uint8Array => {
  const row = new Uint8Array(width * channels)
  const blue = Math.round(60 + (150 * band) / Math.max(1, bands - 1))
  for (let x = 0; x < width; x++) {
    const t = width === 1 ? 0 : x / (width - 1)
    const offset = x * channels
    row[offset] = Math.round(40 + 200 * t)
    row[offset + 1] = Math.round(200 - 120 * t)
    row[offset + 2] = blue
    if (channels === 4) row[offset + 3] = 255
  }
  return row
}

/** The image pattern as raw pixels (RGB for PNG, RGBA for JPEG): 8 bands of identical rows. */
const imagePixels = (width: number, height: number, channels: 3 | 4): Buffer => {
  const bands = Math.min(8, height)
  const data = Buffer.allocUnsafe(width * height * channels)
  const stride = width * channels
  let band = -1
  let row: Uint8Array = new Uint8Array(0)
  for (let y = 0; y < height; y++) {
    const b = Math.floor((y * bands) / height)
    if (b !== band) {
      band = b
      row = gradientRow(width, band, bands, channels)
    }
    data.set(row, y * stride)
  }
  return data
}

const encodePngRgb = (width: number, height: number, rgb: Buffer, filterType: number | undefined): Uint8Array => {
  const rgbOnly = { colorType: 2, inputColorType: 2, inputHasAlpha: false } as const
  const png = new (PNG())({ width, height, ...rgbOnly })
  png.data = rgb
  const bytes = PNG().sync.write(png, { ...rgbOnly, ...(filterType === undefined ? {} : { filterType }) })
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

const encodeImage = (spec: ImageSpec): Uint8Array => {
  if (spec.format === "png") {
    // filter "Up": every row inside a band becomes zeros, which deflate to almost nothing
    return encodePngRgb(spec.width, spec.height, imagePixels(spec.width, spec.height, 3), 2)
  }
  const pixels = { data: imagePixels(spec.width, spec.height, 4), width: spec.width, height: spec.height }
  const encoded = jpeg().encode(pixels, 85)
  return new Uint8Array(encoded.data.buffer, encoded.data.byteOffset, encoded.data.byteLength)
}

const clamp = (value: number) => value < 0 ? 0 : value > 255 ? 255 : Math.round(value)

/** A YUV 4:2:0 frame as RGB (BT.601 limited range). */
const yuvToRgb = (yuv: Uint8Array, width: number, height: number): Buffer => {
  const rgb = Buffer.allocUnsafe(width * height * 3)
  const cw = width / 2
  const vOffset = width * height + cw * (height / 2)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const c = 1.164 * (yuv[y * width + x]! - 16)
      const ci = (y >> 1) * cw + (x >> 1)
      const d = yuv[width * height + ci]! - 128
      const e = yuv[vOffset + ci]! - 128
      const o = (y * width + x) * 3
      rgb[o] = clamp(c + 1.596 * e)
      rgb[o + 1] = clamp(c - 0.392 * d - 0.813 * e)
      rgb[o + 2] = clamp(c + 2.017 * d)
    }
  }
  return rgb
}

const encodeLastFrame = (video: VideoFrames): Uint8Array => {
  const yuv = new Uint8Array((video.width * video.height * 3) / 2)
  drawFrame(frameBase(video.width, video.height), video.width, video.height, video.frames - 1, video.frames, yuv)
  return encodePngRgb(video.width, video.height, yuvToRgb(yuv, video.width, video.height), undefined)
}

// ---------------------------------------------------------------------------------------------------------------
// The cache

const videoKey = (video: VideoFrames) => `${video.width}x${video.height}:${video.frames}@${video.fps}`

interface Entry {
  readonly deferred: Deferred.Deferred<Uint8Array>
  bytes: number
  done: boolean
}

/**
 * A renderer with its own bounded cache; its renderings run in the current scope (closing it interrupts them).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: RendererOptions = {}): Effect.Effect<Renderer["Type"], never, Scope.Scope> =>
  Effect.map(Effect.scope, (scope) => makeIn(scope, options))

const makeIn = (scope: Scope.Scope, options: RendererOptions): Renderer["Type"] => {
  const maxBytes = options.maxCacheBytes ?? 64 * 1024 * 1024
  const entries = new Map<string, Entry>()
  let cachedBytes = 0
  const counters = { videoEncodes: 0, imageEncodes: 0, frameEncodes: 0, hits: 0 }

  /** Drops a finished entry from the cache. */
  const drop = (key: string, entry: Entry) => {
    entries.delete(key)
    cachedBytes -= entry.bytes
  }

  const evict = (keep: string) => {
    for (const [key, entry] of entries) {
      if (cachedBytes <= maxBytes) return
      if (key !== keep && entry.done) drop(key, entry)
    }
    // a single entry larger than the whole budget is served once and not kept
    const kept = entries.get(keep)
    if (cachedBytes > maxBytes && kept !== undefined && kept.done) drop(keep, kept)
  }

  /** The cached bytes of `key`, or `render`'s (counted under `counter` when it runs). */
  const cached = (
    key: string,
    counter: "videoEncodes" | "imageEncodes" | "frameEncodes",
    render: Effect.Effect<Uint8Array>
  ): Effect.Effect<Uint8Array> =>
    Effect.suspend(() => {
      const hit = entries.get(key)
      if (hit !== undefined) {
        counters.hits++
        // most recently used goes last
        entries.delete(key)
        entries.set(key, hit)
        return Deferred.await(hit.deferred)
      }
      const entry: Entry = { deferred: Deferred.unsafeMake<Uint8Array>(FiberId.none), bytes: 0, done: false }
      entries.set(key, entry)
      const settle = (exit: Exit.Exit<Uint8Array>) =>
        Effect.suspend(() => {
          if (Exit.isSuccess(exit) && entries.get(key) === entry) {
            entry.done = true
            entry.bytes = exit.value.byteLength
            cachedBytes += entry.bytes
            evict(key)
          } else if (entries.get(key) === entry) {
            entries.delete(key)
          }
          return Deferred.done(entry.deferred, exit)
        })
      // the rendering belongs to every waiter and to the renderer's scope: an interrupted caller does not cancel it.
      // It starts uninterruptible, so that `settle` runs even when the scope closes before it starts.
      const counted = Effect.zipRight(Effect.sync(() => counters[counter]++), render)
      return Effect.onExit(Effect.interruptible(counted), settle).pipe(
        Effect.forkIn(scope),
        Effect.uninterruptible,
        Effect.zipRight(Deferred.await(entry.deferred))
      )
    })

  return {
    renderImage: (spec) => {
      const key = `image:${spec.format}:${spec.width}x${spec.height}`
      return Effect.zipRight(checkImage(spec), cached(key, "imageEncodes", Effect.sync(() => encodeImage(spec))))
    },
    renderVideo: (spec) =>
      Effect.flatMap(
        normalizeVideo(spec),
        (video) => cached(`video:${videoKey(video)}`, "videoEncodes", EncoderThread.encode(video))
      ),
    renderLastFrame: (spec) =>
      Effect.flatMap(
        normalizeVideo(spec),
        (video) => cached(`frame:${videoKey(video)}`, "frameEncodes", Effect.sync(() => encodeLastFrame(video)))
      ),
    stats: () => ({ ...counters, entries: [...entries.values()].filter((e) => e.done).length, cachedBytes }),
    clear: () => {
      for (const [key, entry] of entries) if (entry.done) drop(key, entry)
    }
  }
}

/**
 * A renderer as a layer: its renderings end with the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RendererOptions = {}): Layer.Layer<Renderer> => Layer.scoped(Renderer, make(options))
