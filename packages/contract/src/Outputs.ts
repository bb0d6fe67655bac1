/**
 * What an upstream job produces: the files of a task's result, with their geometry and duration. Every family
 * module describes its endpoints with these; the simulated upstream renders exactly them.
 *
 * @since 0.1.0
 */

/**
 * A video file of a result.
 *
 * @since 0.1.0
 * @category models
 */
export interface VideoOutput {
  readonly media: "video"
  readonly kind: "output"
  readonly width: number
  readonly height: number
  readonly durationSeconds: number
  readonly format: "mp4"
}

/**
 * An image file of a result (an image output, or the last frame of a video).
 *
 * @since 0.1.0
 * @category models
 */
export interface ImageOutput {
  readonly media: "image"
  readonly kind: "output" | "last_frame"
  readonly width: number
  readonly height: number
  readonly format: "png" | "jpeg"
}

/**
 * One file of a result.
 *
 * @since 0.1.0
 * @category models
 */
export type OutputSpec = VideoOutput | ImageOutput

const resolutions: Readonly<Record<string, number>> = { "480p": 480, "540p": 540, "720p": 720, "1080p": 1080 }

const even = (n: number) => 2 * Math.round(n / 2)

/**
 * The pixel size of a video: the resolution names the short side; the aspect ratio (`W:H`) gives the long one,
 * rounded to an even number (H.264). `adaptive`, `auto` and unknown ratios are 16:9.
 *
 * @since 0.1.0
 * @category utils
 */
export const videoSize = (resolution: string, aspectRatio: string | undefined): { width: number; height: number } => {
  const short = resolutions[resolution] ?? 720
  const match = /^(\d+):(\d+)$/.exec(aspectRatio ?? "16:9")
  const [w, h] = match === null ? [16, 9] : [Number(match[1]), Number(match[2])]
  return w >= h ? { width: even((short * w) / h), height: short } : { width: short, height: even((short * h) / w) }
}

/**
 * A video output of a size and duration.
 *
 * @since 0.1.0
 * @category constructors
 */
export const video = (size: { width: number; height: number }, durationSeconds: number): VideoOutput => ({
  media: "video",
  kind: "output",
  ...size,
  durationSeconds,
  format: "mp4"
})

/**
 * The last-frame image of a video.
 *
 * @since 0.1.0
 * @category constructors
 */
export const lastFrame = (of: VideoOutput): ImageOutput => ({
  media: "image",
  kind: "last_frame",
  width: of.width,
  height: of.height,
  format: "png"
})

/**
 * An image output.
 *
 * @since 0.1.0
 * @category constructors
 */
export const image = (size: { width: number; height: number }, format: "png" | "jpeg"): ImageOutput => ({
  media: "image",
  kind: "output",
  ...size,
  format
})

/**
 * A duration field as seconds (numbers, or strings such as `"10"`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const seconds = (value: unknown, fallback: number): number => {
  const n = typeof value === "string" ? Number(value) : typeof value === "number" ? value : NaN
  return Number.isFinite(n) && n > 0 ? n : fallback
}

/**
 * A string field, or a fallback.
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (value: unknown, fallback: string): string => typeof value === "string" ? value : fallback

/**
 * The video a request describes: its `resolution`, aspect ratio and `duration` fields, or the fallbacks.
 *
 * @since 0.1.0
 * @category constructors
 */
export const videoOf = (
  input: Readonly<Record<string, unknown>>,
  fallback: { readonly resolution: string; readonly ratio: string; readonly seconds: number },
  ratioField = "aspect_ratio"
): VideoOutput =>
  video(
    videoSize(text(input["resolution"], fallback.resolution), text(input[ratioField], fallback.ratio)),
    seconds(input["duration"], fallback.seconds)
  )
