/**
 * Reading media back in tests: ffprobe for videos (Debian's ffmpeg, installed by .ci/run), pngjs/jpeg-js for
 * images. Without ffprobe the video checks skip, except under CI=true where they must run (and fail).
 */
import jpeg from "jpeg-js"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PNG } from "pngjs"

/** Whether the tests run under CI. */
export const isCI = process.env["CI"] === "true"

/** Whether ffprobe is installed. */
export const hasFfprobe = spawnSync("ffprobe", ["-version"], { stdio: "ignore" }).status === 0

/** Whether to run the checks that need ffprobe. */
export const runProbes = hasFfprobe || isCI

if (!hasFfprobe) {
  console.warn(
    isCI
      ? "ffprobe is not installed: the video checks fail because CI=true"
      : "ffprobe is not installed: the video checks that need it are skipped (install ffmpeg to run them)"
  )
}

/** What ffprobe reports of a video file. */
export interface ProbedVideo {
  readonly codec: string
  readonly width: number
  readonly height: number
  readonly durationSeconds: number
  readonly frames: number
}

/** Probes a video file with ffprobe. */
export const probeVideo = (path: string): ProbedVideo => {
  const result = spawnSync("ffprobe", [
    "-v",
    "error",
    "-select_streams",
    "v:0",
    "-count_frames",
    "-show_entries",
    "stream=codec_name,width,height,nb_read_frames:format=duration",
    "-of",
    "json",
    path
  ], { encoding: "utf8" })
  if (result.status !== 0) throw new Error(`ffprobe failed on ${path}: ${result.stderr || String(result.error)}`)
  const parsed = JSON.parse(result.stdout) as {
    streams: Array<{ codec_name: string; width: number; height: number; nb_read_frames: string }>
    format: { duration: string }
  }
  const stream = parsed.streams[0]!
  return {
    codec: stream.codec_name,
    width: stream.width,
    height: stream.height,
    durationSeconds: Number(parsed.format.duration),
    frames: Number(stream.nb_read_frames)
  }
}

/** Probes MP4 bytes (written to a temporary file: the `moov` box may sit at the end). */
export const probeVideoBytes = (bytes: Uint8Array): ProbedVideo => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-probe-"))
  try {
    const file = join(dir, "clip.mp4")
    writeFileSync(file, bytes)
    return probeVideo(file)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Decodes an image and answers its pixel size. */
export const decodeImage = (bytes: Uint8Array, format: "png" | "jpeg"): { width: number; height: number } => {
  if (format === "png") {
    const png = PNG.sync.read(Buffer.from(bytes))
    return { width: png.width, height: png.height }
  }
  const decoded = jpeg.decode(bytes, { maxMemoryUsageInMB: 1024, maxResolutionInMP: 100 })
  return { width: decoded.width, height: decoded.height }
}
