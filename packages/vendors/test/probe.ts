/**
 * Reading media back in tests, in pure JavaScript (no system binary, so every check runs wherever Node runs):
 * MP4Box.js (`mp4box`) for videos, pngjs/jpeg-js for images.
 *
 * {@link probeVideoBytes} answers what ffprobe used to answer (codec, size, duration, frame count) and throws on a
 * file a player would choke on: bytes that are not a sequence of ISO boxes, a box cut short, no `moov` or `mdat`,
 * no video track, samples outside the media data, an H.264 track whose `avcC` lacks its SPS/PPS, whose SPS
 * disagrees with the sample entry's size, or whose first sample is not a sync (IDR) picture.
 */
import jpeg from "jpeg-js"
import { createFile, MP4BoxBuffer, type Track, type VisualSampleEntry } from "mp4box"
import { PNG } from "pngjs"

/** What the probe reports of a video file. */
export interface ProbedVideo {
  /** `h264` for `avc1`/`avc3` tracks, otherwise the sample entry's four-character code. */
  readonly codec: string
  readonly width: number
  readonly height: number
  /** The video track's duration (`mdhd`), or the movie's (`mvhd`) when the track does not say. */
  readonly durationSeconds: number
  /** The number of samples in the video track. */
  readonly frames: number
}

function fail(message: string): never {
  throw new Error(`not a playable MP4: ${message}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Top-level boxes: checked by hand first, so that garbage and cut files fail with a clear message (MP4Box.js logs
// and stops at the first bad box, and reads a file cut inside `mdat` as merely "not ready yet").

interface TopBox {
  readonly type: string
  readonly start: number
  /** Where the box's payload starts (after an 8- or 16-byte header). */
  readonly payload: number
  readonly end: number
}

const topLevelBoxes = (bytes: Uint8Array): ReadonlyArray<TopBox> => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const boxes: Array<TopBox> = []
  let start = 0
  while (start < bytes.byteLength) {
    if (bytes.byteLength - start < 8) fail(`${bytes.byteLength - start} stray bytes at offset ${start}`)
    const codes = Array.from(bytes.subarray(start + 4, start + 8))
    if (!codes.every((c) => c >= 0x20 && c <= 0x7e)) fail(`no box type at offset ${start}`)
    const type = String.fromCharCode(...codes)
    const size32 = view.getUint32(start)
    let size: number
    let header = 8
    if (size32 === 1) {
      header = 16
      if (bytes.byteLength - start < 16) fail(`box '${type}' at offset ${start} is cut inside its header`)
      size = Number(view.getBigUint64(start + 8))
    } else {
      size = size32 === 0 ? bytes.byteLength - start : size32
    }
    if (size < header) fail(`box '${type}' at offset ${start} has size ${size}`)
    if (start + size > bytes.byteLength) {
      fail(`box '${type}' at offset ${start} needs ${size} bytes, the file ends after ${bytes.byteLength - start}`)
    }
    boxes.push({ type, start, payload: start + header, end: start + size })
    start += size
  }
  return boxes
}

// ---------------------------------------------------------------------------------------------------------------
// H.264 parameter sets

/** An exp-Golomb bit reader over an RBSP (emulation prevention bytes removed). */
const bitReader = (nal: Uint8Array) => {
  const rbsp: Array<number> = []
  for (let i = 0; i < nal.length; i++) {
    if (i >= 2 && nal[i] === 3 && nal[i - 1] === 0 && nal[i - 2] === 0) continue
    rbsp.push(nal[i]!)
  }
  let bit = 0
  const u1 = (): number => {
    if (bit >= rbsp.length * 8) fail("the SPS ends too early")
    const value = (rbsp[bit >> 3]! >> (7 - (bit & 7))) & 1
    bit++
    return value
  }
  const u = (n: number): number => {
    let value = 0
    for (let i = 0; i < n; i++) value = value * 2 + u1()
    return value
  }
  const ue = (): number => {
    let zeros = 0
    while (u1() === 0) if (++zeros > 31) fail("bad exp-Golomb code in the SPS")
    return 2 ** zeros - 1 + u(zeros)
  }
  const se = (): number => {
    const k = ue()
    return k % 2 === 1 ? (k + 1) / 2 : -(k / 2)
  }
  return { u1, u, ue, se }
}

/** Profiles whose SPS carries chroma format, bit depths and scaling matrices (ITU-T H.264 §7.3.2.1.1). */
const highProfiles = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135])

/** The profile and picture size an SPS NAL unit (with its one-byte header) describes. */
const parseSps = (nal: Uint8Array): { profile: number; width: number; height: number } => {
  if (nal.length < 4 || (nal[0]! & 0x1f) !== 7) fail("the avcC's first SPS is not an SPS NAL unit")
  const r = bitReader(nal.subarray(1))
  const profile = r.u(8)
  r.u(16) // constraint flags, level_idc
  r.ue() // seq_parameter_set_id
  let chromaFormat = 1
  let separateColourPlanes = 0
  if (highProfiles.has(profile)) {
    chromaFormat = r.ue()
    if (chromaFormat === 3) separateColourPlanes = r.u1()
    r.ue() // bit_depth_luma_minus8
    r.ue() // bit_depth_chroma_minus8
    r.u1() // qpprime_y_zero_transform_bypass_flag
    if (r.u1() === 1) {
      for (let i = 0; i < (chromaFormat === 3 ? 12 : 8); i++) {
        if (r.u1() === 0) continue
        let last = 8
        let next = 8
        for (let j = 0; j < (i < 6 ? 16 : 64); j++) {
          if (next !== 0) next = (last + r.se() + 256) % 256
          last = next === 0 ? last : next
        }
      }
    }
  }
  r.ue() // log2_max_frame_num_minus4
  const pocType = r.ue()
  if (pocType === 0) {
    r.ue() // log2_max_pic_order_cnt_lsb_minus4
  } else if (pocType === 1) {
    r.u1()
    r.se()
    r.se()
    const cycle = r.ue()
    for (let i = 0; i < cycle; i++) r.se()
  }
  r.ue() // max_num_ref_frames
  r.u1() // gaps_in_frame_num_value_allowed_flag
  const widthInMbs = r.ue() + 1
  const heightInMapUnits = r.ue() + 1
  const frameMbsOnly = r.u1()
  if (frameMbsOnly === 0) r.u1() // mb_adaptive_frame_field_flag
  r.u1() // direct_8x8_inference_flag
  let [left, right, top, bottom] = [0, 0, 0, 0]
  if (r.u1() === 1) [left, right, top, bottom] = [r.ue(), r.ue(), r.ue(), r.ue()]
  const monochrome = chromaFormat === 0 || separateColourPlanes === 1
  const cropX = monochrome ? 1 : chromaFormat === 3 ? 1 : 2
  const cropY = (monochrome ? 1 : chromaFormat === 1 ? 2 : 1) * (2 - frameMbsOnly)
  return {
    profile,
    width: widthInMbs * 16 - (left + right) * cropX,
    height: (2 - frameMbsOnly) * heightInMapUnits * 16 - (top + bottom) * cropY
  }
}

/** The NAL unit types of one length-prefixed sample; fails unless the NAL units fill the sample exactly. */
const nalTypes = (sample: Uint8Array, lengthSize: number, label: string): ReadonlyArray<number> => {
  const types: Array<number> = []
  let at = 0
  while (at < sample.length) {
    if (at + lengthSize > sample.length) fail(`${label}: a NAL length is cut at the end of the sample`)
    let length = 0
    for (let i = 0; i < lengthSize; i++) length = length * 256 + sample[at + i]!
    at += lengthSize
    if (length === 0 || at + length > sample.length) fail(`${label}: a NAL unit of ${length} bytes overruns it`)
    types.push(sample[at]! & 0x1f)
    at += length
  }
  return types
}

// ---------------------------------------------------------------------------------------------------------------
// The probe

/** Probes MP4 bytes with MP4Box.js; throws (`not a playable MP4: …`) unless they hold a readable video track. */
export const probeVideoBytes = (bytes: Uint8Array): ProbedVideo => {
  const boxes = topLevelBoxes(bytes)
  if (boxes.length === 0) fail("the file is empty")
  if (!boxes.some((b) => b.type === "moov")) fail("no 'moov' box")
  const mdats = boxes.filter((b) => b.type === "mdat")
  if (mdats.length === 0) fail("no 'mdat' box")

  const errors: Array<string> = []
  const file = createFile()
  file.onError = (module, message) => errors.push(`${module}: ${message}`)
  // a copy: MP4Box.js keeps the buffer, and `bytes` may be a view into a larger (pooled) one
  const buffer = MP4BoxBuffer.fromArrayBuffer(bytes.slice().buffer, 0)
  file.appendBuffer(buffer, true)
  file.flush()
  if (errors.length > 0) fail(errors.join("; "))
  const info = file.getInfo()
  if (!info.hasMoov) fail("MP4Box.js found no complete 'moov' box")

  const track: Track | undefined = info.videoTracks[0]
  if (track === undefined) fail(`no video track (tracks: ${info.tracks.map((t) => t.codec).join(", ") || "none"})`)
  const { id } = track
  const entry = file.getTrackById(id).mdia.minf.stbl.stsd.entries[0] as VisualSampleEntry | undefined
  if (entry === undefined) fail(`video track ${id} has no sample entry`)
  const fourcc = entry.type
  const h264 = fourcc === "avc1" || fourcc === "avc3"
  const label = `video track ${id} (${track.codec})`
  const width = entry.width
  const height = entry.height
  if (!(width > 0 && height > 0)) fail(`${label}: size ${width}x${height}`)

  const avcC = entry.avcC
  if (fourcc === "avc1" && avcC === undefined) fail(`${label}: an 'avc1' sample entry without its 'avcC' box`)
  if (avcC !== undefined) {
    if (avcC.SPS.length === 0 || avcC.PPS.length === 0) {
      fail(`${label}: the avcC has ${avcC.SPS.length} SPS and ${avcC.PPS.length} PPS`)
    }
    const sps = parseSps(avcC.SPS[0]!.data)
    if (sps.profile !== avcC.AVCProfileIndication) {
      fail(`${label}: the SPS says profile ${sps.profile}, the avcC ${avcC.AVCProfileIndication}`)
    }
    if (sps.width !== width || sps.height !== height) {
      fail(`${label}: the SPS codes ${sps.width}x${sps.height}, the sample entry says ${width}x${height}`)
    }
  }

  const samples = file.getTrackSamplesInfo(id)
  if (samples.length === 0) fail(`${label} has no samples`)
  if (!samples[0]!.is_sync) fail(`${label}: the first sample is not a sync sample`)
  for (const sample of samples) {
    const inside = mdats.some((m) => sample.offset >= m.payload && sample.offset + sample.size <= m.end)
    if (sample.size === 0 || !inside) {
      fail(`${label}: sample ${sample.number} (${sample.size} bytes at ${sample.offset}) lies outside the media data`)
    }
    if (avcC !== undefined) {
      const data = bytes.subarray(sample.offset, sample.offset + sample.size)
      const types = nalTypes(data, avcC.lengthSizeMinusOne + 1, `${label} sample ${sample.number}`)
      if (sample.number === 0 && !types.includes(5)) {
        fail(`${label}: the first sample holds no IDR picture (NAL unit types ${types.join(", ")})`)
      }
    }
  }

  const durationSeconds = track.timescale > 0 && track.duration > 0
    ? track.duration / track.timescale
    : info.timescale > 0
    ? info.duration / info.timescale
    : 0
  if (!(durationSeconds > 0)) fail(`${label}: no duration`)
  return { codec: h264 ? "h264" : fourcc, width, height, durationSeconds, frames: samples.length }
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
