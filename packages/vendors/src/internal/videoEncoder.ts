/**
 * The worker thread that encodes the simulated upstream's clips (`Media.ts`, "Video encoding"): H.264 MP4 with
 * `h264-mp4-encoder` (WASM). The module's WASM memory (~17 MB) and the encoding's CPU stay on this thread, which the
 * renderer ends once it has been idle for a moment: the server's own thread neither pays the memory for the rest of
 * its life nor stops answering while a clip is encoded.
 *
 * Protocol: one {@link VideoFrames} at a time in; `{ bytes }` (its buffer transferred) or `{ error }` out.
 *
 * @internal
 */
import { parentPort } from "node:worker_threads"
import { drawFrame, frameBase, type VideoFrames } from "./videoFrames.js"

/** An answer of the thread. */
export type EncoderReply = { readonly bytes: Uint8Array } | { readonly error: string }

const port = parentPort
if (port === null) throw new Error("videoEncoder runs as a worker thread (Media.ts starts it)")

// compiled once per thread, when the first clip is asked for
const encoderModule = import("h264-mp4-encoder").then((m) => m.default ?? m)
let outputCounter = 0

/** The clip's bytes, in a buffer of their own (transferred to the renderer). */
const encode = async (video: VideoFrames): Promise<ArrayBuffer> => {
  const module = await encoderModule
  const encoder = await module.createH264MP4Encoder()
  const outputFilename = `mediagate-${++outputCounter}.mp4`
  try {
    encoder.outputFilename = outputFilename
    encoder.width = video.width
    encoder.height = video.height
    encoder.frameRate = video.fps
    encoder.speed = 10
    encoder.quantizationParameter = 30
    encoder.groupOfPictures = Math.max(1, video.fps * 5)
    encoder.initialize()
    const base = frameBase(video.width, video.height)
    const yuv = new Uint8Array((video.width * video.height * 3) / 2)
    for (let index = 0; index < video.frames; index++) {
      drawFrame(base, video.width, video.height, index, video.frames, yuv)
      encoder.addFrameYuv(yuv)
    }
    encoder.finalize()
    // copied out of the WASM heap before the file is unlinked
    const file = encoder.FS.readFile(outputFilename)
    const bytes = new ArrayBuffer(file.byteLength)
    new Uint8Array(bytes).set(file)
    return bytes
  } finally {
    try {
      encoder.FS.unlink(outputFilename)
    } catch {
      // not written (failed before finalize)
    }
    encoder.delete()
  }
}

port.on("message", (video: VideoFrames) => {
  encode(video).then(
    (bytes) => port.postMessage({ bytes: new Uint8Array(bytes) } satisfies EncoderReply, [bytes]),
    (error: unknown) =>
      port.postMessage({ error: error instanceof Error ? error.message : String(error) } satisfies EncoderReply)
  )
})
