/**
 * The test probe itself (probe.ts, MP4Box.js): it reads clips from the project's own encoder correctly, and refuses
 * bytes that are not a playable MP4 instead of answering something plausible.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Media from "../src/Media.js"
import { probeVideoBytes } from "./probe.js"

/** The top-level boxes of an MP4 (type, start, end), read by hand to cut and splice test files. */
const boxesOf = (bytes: Uint8Array) => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const boxes: Array<{ type: string; start: number; end: number }> = []
  for (let start = 0; start < bytes.byteLength;) {
    const size = view.getUint32(start)
    boxes.push({ type: String.fromCharCode(...bytes.subarray(start + 4, start + 8)), start, end: start + size })
    start += size
  }
  return boxes
}

const concat = (...parts: ReadonlyArray<Uint8Array>) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

const render = <A>(f: (renderer: Media.Renderer["Type"]) => Effect.Effect<A>) =>
  Effect.scoped(Effect.flatMap(Media.make(), f))

/** A small clip: 320x240, 2.5 s at 4 fps, so 10 frames (encoded once, on first use). */
const clip = Effect.runSync(
  Effect.cached(render((r) => r.renderVideo({ width: 320, height: 240, durationSeconds: 2.5, fps: 4 })))
)

describe("probe (mp4box.js)", () => {
  it.effect(
    "reads a clip from the project's encoder: codec, size, duration and frame count",
    () =>
      Effect.gen(function*() {
        const bytes = yield* clip
        expect(probeVideoBytes(bytes)).toEqual({
          codec: "h264",
          width: 320,
          height: 240,
          durationSeconds: 2.5,
          frames: 10
        })
        // a view into a larger buffer (as Node's pooled Buffers are) reads the same
        const padded = concat(new Uint8Array(7).fill(0xee), bytes, new Uint8Array(5))
        expect(probeVideoBytes(padded.subarray(7, 7 + bytes.byteLength))).toEqual(probeVideoBytes(bytes))
      }),
    { timeout: 60_000 }
  )

  it.effect(
    "reads a width that is not a multiple of 16 (SPS cropping) and one frame per second",
    () =>
      Effect.gen(function*() {
        const bytes = yield* render((r) => r.renderVideo({ width: 854, height: 480, durationSeconds: 3, fps: 1 }))
        expect(probeVideoBytes(bytes)).toEqual({
          codec: "h264",
          width: 854,
          height: 480,
          durationSeconds: 3,
          frames: 3
        })
      }),
    { timeout: 60_000 }
  )

  it("rejects garbage bytes", () => {
    let seed = 42
    const noise = Uint8Array.from({ length: 4096 }, () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 0xff)
    const candidates: ReadonlyArray<[string, Uint8Array]> = [
      ["empty", new Uint8Array(0)],
      ["noise", noise],
      ["text", new TextEncoder().encode("<html><body>not a video</body></html>")],
      ["zeros", new Uint8Array(1024)]
    ]
    for (const [label, bytes] of candidates) {
      expect(() => probeVideoBytes(bytes), label).toThrow(/not a playable MP4/)
    }
  })

  it.effect("rejects an image, a file without moov and a moov without a video track", () =>
    Effect.gen(function*() {
      const png = yield* render((r) => r.renderImage({ width: 64, height: 64, format: "png" }))
      expect(() => probeVideoBytes(png)).toThrow(/not a playable MP4/)
      const bytes = yield* clip
      const ftyp = boxesOf(bytes).find((b) => b.type === "ftyp")!
      expect(() => probeVideoBytes(bytes.subarray(ftyp.start, ftyp.end))).toThrow(/no 'moov' box/)
      // the moov's track renamed to a 'free' box: a well-formed file with no track at all
      const moov = boxesOf(bytes).find((b) => b.type === "moov")!
      const trak = moov.start + new TextDecoder("latin1").decode(bytes.subarray(moov.start, moov.end)).indexOf("trak") -
        4
      expect(String.fromCharCode(...bytes.subarray(trak + 4, trak + 8))).toBe("trak")
      const trackless = bytes.slice()
      trackless.set(new TextEncoder().encode("free"), trak + 4)
      expect(() => probeVideoBytes(trackless)).toThrow(/no video track/)
    }), { timeout: 60_000 })

  it.effect("rejects a truncated MP4, wherever it is cut", () =>
    Effect.gen(function*() {
      const bytes = yield* clip
      const boxes = boxesOf(bytes)
      expect(boxes.map((b) => b.type)).toContain("moov")
      const moov = boxes.find((b) => b.type === "moov")!
      const mdat = boxes.find((b) => b.type === "mdat")!
      const cuts = [
        1,
        7,
        Math.floor(bytes.byteLength / 2), // inside the media data: the moov (written last) is gone
        mdat.start + 4, // inside the mdat header
        moov.start + 100, // inside the moov
        moov.end - 1 // one byte short of a complete moov
      ]
      for (const cut of cuts) {
        expect(cut).toBeLessThan(bytes.byteLength)
        expect(() => probeVideoBytes(bytes.subarray(0, cut)), `cut at ${cut} of ${bytes.byteLength}`).toThrow(
          /not a playable MP4/
        )
      }
    }), { timeout: 60_000 })

  it.effect("rejects a moov whose media data is missing or damaged", () =>
    Effect.gen(function*() {
      const bytes = yield* clip
      const boxes = boxesOf(bytes)
      const pick = (type: string) => {
        const box = boxes.find((b) => b.type === type)!
        return bytes.subarray(box.start, box.end)
      }
      // ftyp + moov only: every sample points past the end of the file
      expect(() => probeVideoBytes(concat(pick("ftyp"), pick("moov")))).toThrow(/outside the media data|no 'mdat'/)
      // an empty mdat where the media data was: the moov's sample offsets no longer land in it
      const emptyMdat = Uint8Array.of(0, 0, 0, 8, 0x6d, 0x64, 0x61, 0x74)
      expect(() => probeVideoBytes(concat(pick("ftyp"), emptyMdat, pick("moov")))).toThrow(/outside the media data/)
      // the first sample's first NAL length overwritten: its NAL units no longer fill the sample
      const damaged = bytes.slice()
      const firstSample = boxes.find((b) => b.type === "mdat")!.start + 8
      damaged.set([0x7f, 0xff, 0xff, 0xff], firstSample)
      expect(() => probeVideoBytes(damaged)).toThrow(/overruns/)
      // the first picture's NAL unit type changed from IDR (5) to a non-IDR slice (1): nothing to start decoding from
      expect(bytes[firstSample + 4]! & 0x1f).toBe(5)
      const noIdr = bytes.slice()
      noIdr[firstSample + 4] = (noIdr[firstSample + 4]! & 0xe0) | 1
      expect(() => probeVideoBytes(noIdr)).toThrow(/no IDR picture/)
    }), { timeout: 60_000 })
})
