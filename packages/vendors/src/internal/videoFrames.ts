/**
 * The video frames of the simulated upstream's clips (see `Media.ts`): a gradient with a bar that sweeps from left
 * to right, as YUV 4:2:0. Shared by the encoder's worker thread (`videoEncoder.ts`) and the renderer's last frame.
 *
 * @internal
 */

/** A checked video spec: its size, frame rate and frame count. */
export interface VideoFrames {
  readonly width: number
  readonly height: number
  readonly fps: number
  readonly frames: number
}

/** The fixed part of every video frame: luma gradient and chroma planes (YUV 4:2:0, BT.601 limited range). */
export type FrameBase = ReturnType<typeof frameBase>

export const frameBase = (width: number, height: number) => {
  const luma = new Uint8Array(width * height)
  for (let y = 0; y < height; y++) {
    const vy = (0.4 * y) / Math.max(1, height - 1)
    const offset = y * width
    for (let x = 0; x < width; x++) {
      luma[offset + x] = Math.round(40 + 140 * ((0.6 * x) / Math.max(1, width - 1) + vy))
    }
  }
  const cw = width / 2
  const ch = height / 2
  const chroma = new Uint8Array(cw * ch * 2)
  for (let y = 0; y < ch; y++) {
    for (let x = 0; x < cw; x++) {
      chroma[y * cw + x] = Math.round(98 + (60 * x) / Math.max(1, cw - 1)) // U
      chroma[cw * ch + y * cw + x] = Math.round(153 - (50 * y) / Math.max(1, ch - 1)) // V
    }
  }
  return { luma, chroma, barWidth: Math.max(2, Math.round(width / 16)) }
}

/** Writes frame `index` of `frames` into `yuv` (a w×h×3/2 buffer). */
export const drawFrame = (
  base: FrameBase,
  width: number,
  height: number,
  index: number,
  frames: number,
  yuv: Uint8Array
) => {
  yuv.set(base.luma, 0)
  yuv.set(base.chroma, width * height)
  const travel = width - base.barWidth
  const left = frames <= 1 ? travel : Math.round((travel * index) / (frames - 1))
  for (let y = 0; y < height; y++) {
    const offset = y * width + left
    yuv.fill(235, offset, offset + base.barWidth)
  }
}
