import { describe, expect, it } from "@effect/vitest"
import { vendor5 } from "../../../src/families/vendor5/index.js"
import {
  Vendor5ImageToVideoRequest as ImageToVideo,
  Vendor5TextToVideoRequest as TextToVideo
} from "../../../src/families/vendor5/requests.js"
import { describePrices, invalid, pngDataUri, priceSample, valid } from "../../helpers.js"

const models = ["vendor5q3-pro", "vendor5q3-turbo"]

/** Local helpers: data URIs of other formats (the shared helper only makes PNGs). */
const dataUri = (type: string, bytes: Uint8Array) =>
  `data:image/${type};base64,${Buffer.from(bytes).toString("base64")}`
const jpegDataUri = (width: number, height: number) =>
  dataUri(
    "jpeg",
    Uint8Array.from([
      ...[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0],
      ...[0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 255, width >> 8, width & 255],
      ...[0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xff, 0xd9]
    ])
  )
const webpDataUri = (width: number, height: number) => {
  const bytes = Buffer.alloc(30)
  bytes.write("RIFF")
  bytes.writeUInt32LE(22, 4)
  bytes.write("WEBPVP8X", 8)
  bytes.writeUInt32LE(10, 16)
  bytes.writeUIntLE(width - 1, 24, 3)
  bytes.writeUIntLE(height - 1, 27, 3)
  return dataUri("webp", bytes)
}
const gifDataUri = (width: number, height: number) => {
  const bytes = Buffer.alloc(13)
  bytes.write("GIF89a")
  bytes.writeUInt16LE(width, 6)
  bytes.writeUInt16LE(height, 8)
  return dataUri("gif", bytes)
}
/** A PNG header padded to just over 50 MB. */
const hugePngDataUri = () => {
  const header = Buffer.from(pngDataUri(100, 100).split(",")[1]!, "base64")
  const bytes = Buffer.alloc(50 * 1024 * 1024 + 1)
  header.copy(bytes)
  return dataUri("png", bytes)
}

const image = "https://example.com/start.png"

describe("vendor5/image-to-video", () => {
  it.each(models)("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(ImageToVideo, { model, input: { images: [image] } })
    expect(out).toEqual({
      model,
      input: {
        images: [image],
        duration: 5,
        resolution: "720p",
        audio: true,
        is_rec: false,
        movement_amplitude: "auto",
        off_peak: false
      }
    })
  })

  it("keeps given values (voice_id without audio and movement_amplitude are accepted and ignored)", () => {
    const input = {
      images: [image],
      prompt: "a cat walks",
      duration: 16,
      resolution: "1080p",
      audio: false,
      voice_id: "voice-1",
      is_rec: true,
      movement_amplitude: "large",
      seed: 4_294_967_295,
      off_peak: true
    }
    expect(valid(ImageToVideo, { model: "vendor5q3-turbo", input }).input).toEqual(input)
  })

  it.each([
    ["png 1:4", pngDataUri(100, 400)],
    ["png 4:1", pngDataUri(400, 100)],
    ["jpeg", jpegDataUri(640, 480)],
    ["webp", webpDataUri(640, 480)]
  ])("accepts a %s data URI", (_, uri) => {
    expect(valid(ImageToVideo, { model: "vendor5q3-pro", input: { images: [uri], seed: 0, duration: 1 } }).input.images)
      .toEqual([uri])
  })

  const body = (input: Record<string, unknown>, model = "vendor5q3-pro") => ({
    model,
    input: { images: [image], ...input }
  })

  it.each([
    [{ model: "vendor5q3-pro", input: {} }, "input.images is required"],
    [body({ images: [] }), "input.images: must contain exactly 1 image"],
    [body({ images: [image, image] }), "input.images: must contain exactly 1 image"],
    [body({ images: image }), "input.images: must be an array"],
    [body({ images: ["ftp://example.com/a.png"] }), "input.images[0]: must be an absolute http(s) URL"],
    [body({ images: ["http://127.0.0.1/a.png"] }), "input.images[0]: address 127.0.0.1 is not a public address"],
    [body({ images: ["http://[::1]/x"] }), "input.images[0]: address ::1 is not a public address"],
    [body({ images: ["http://169.254.169.254/"] }), "input.images[0]: address 169.254.169.254"],
    [body({ images: [gifDataUri(400, 300)] }), "input.images[0]: image format must be one of png, jpeg, webp"],
    [body({ images: [pngDataUri(100, 401)] }), "input.images[0]: image width/height ratio must be at least 0.25"],
    [body({ images: [pngDataUri(401, 100)] }), "input.images[0]: image width/height ratio must be at most 4"],
    [body({ images: ["data:image/png;base64,AAAA"] }), "input.images[0]: data URI does not hold a readable image"],
    [body({ prompt: "x".repeat(5001) }), "input.prompt: must be a non-empty string of at most 5000 characters"],
    [body({ prompt: "  " }), "input.prompt: must be a non-empty string"],
    [body({ duration: 0 }), "input.duration: must be an integer from 1 to 16"],
    [body({ duration: 17 }), "input.duration: must be an integer from 1 to 16"],
    [body({ duration: 5.5 }), "input.duration: must be an integer from 1 to 16"],
    [body({ duration: "5" }), "input.duration: must be an integer from 1 to 16"],
    [body({ resolution: "4k" }), `input.resolution: must be one of "540p", "720p", "1080p"`],
    [body({ audio: "yes" }), "input.audio: must be a boolean"],
    [body({ voice_id: 7 }), "input.voice_id: must be a string"],
    [body({ voice_id: "" }), "input.voice_id: must be a string of 1 to 200 characters"],
    [body({ is_rec: 1 }), "input.is_rec: must be a boolean"],
    [body({ bgm: true }), "input.bgm: is not supported by model vendor5q3-pro"],
    [body({ bgm: false }, "vendor5q3-turbo"), "input.bgm: is not supported by model vendor5q3-turbo"],
    [
      body({ movement_amplitude: "huge" }),
      `input.movement_amplitude: must be one of "auto", "small", "medium", "large"`
    ],
    [body({ seed: -1 }), "input.seed: must be an integer from 0 to 4294967295"],
    [body({ seed: 4_294_967_296 }), "input.seed: must be an integer from 0 to 4294967295"],
    [body({ seed: 1.5 }), "input.seed: must be an integer from 0 to 4294967295"],
    [body({ off_peak: "true" }), "input.off_peak: must be a boolean"],
    [body({ aspect_ratio: "16:9" }), "input.aspect_ratio: is not a known field"],
    [body({}, "vendor5q2-pro"), "model: must be one of vendor5q3-pro, vendor5q3-turbo"],
    [{ ...body({}), extra: 1 }, "extra: is not a known field"],
    [{ model: "vendor5q3-pro" }, "input is required"]
  ])("refuses %j", (body, message) => {
    invalid(ImageToVideo, body, message.split(/[: ]/)[0]!, message)
  })

  it("refuses a data URI over 50 MB", () => {
    invalid(ImageToVideo, body({ images: [hugePngDataUri()] }), "input.images[0]", "image must be at most 50 MB")
  })
})

describe("vendor5/text-to-video", () => {
  it.each(models)("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(TextToVideo, { model, input: { prompt: "a cat" } })
    expect(out).toEqual({
      model,
      input: {
        prompt: "a cat",
        duration: 5,
        aspect_ratio: "16:9",
        resolution: "720p",
        style: "general",
        audio: true,
        off_peak: false
      }
    })
  })

  it("keeps given values", () => {
    const input = {
      prompt: "x".repeat(2000),
      duration: 1,
      aspect_ratio: "3:4",
      resolution: "540p",
      style: "anime",
      audio: false,
      seed: 0,
      off_peak: true
    }
    expect(valid(TextToVideo, { model: "vendor5q3-pro", input }).input).toEqual(input)
  })

  const body = (input: Record<string, unknown>, model = "vendor5q3-turbo") => ({
    model,
    input: { prompt: "p", ...input }
  })

  it.each([
    [{ model: "vendor5q3-pro", input: {} }, "input.prompt is required"],
    [body({ prompt: "x".repeat(2001) }), "input.prompt: must be a non-empty string of at most 2000 characters"],
    [body({ prompt: "" }), "input.prompt: must be a non-empty string"],
    [body({ duration: 0 }), "input.duration: must be an integer from 1 to 16"],
    [body({ duration: 17 }), "input.duration: must be an integer from 1 to 16"],
    [body({ duration: 2.5 }), "input.duration: must be an integer from 1 to 16"],
    [body({ aspect_ratio: "21:9" }), `input.aspect_ratio: must be one of "16:9", "9:16", "1:1", "4:3", "3:4"`],
    [body({ resolution: "480p" }), `input.resolution: must be one of "540p", "720p", "1080p"`],
    [body({ style: "cartoon" }), `input.style: must be one of "general", "anime"`],
    [body({ audio: "false" }), "input.audio: must be a boolean"],
    [body({ seed: -5 }), "input.seed: must be an integer from 0 to 4294967295"],
    [body({ seed: 2 ** 32 }), "input.seed: must be an integer from 0 to 4294967295"],
    [body({ off_peak: 0 }), "input.off_peak: must be a boolean"],
    [body({ images: [image] }), "input.images: is not a known field"],
    [body({ bgm: false }), "input.bgm: is not a known field"],
    [body({}, "vendor5q3"), "model: must be one of vendor5q3-pro, vendor5q3-turbo"],
    [{ ...body({}), extra: true }, "extra: is not a known field"]
  ])("refuses %j", (body, message) => {
    invalid(TextToVideo, body, message.split(/[: ]/)[0]!, message)
  })
})

{
  const { image, prompt } = priceSample
  describePrices(vendor5, [
    // vendor5q3-pro: 540p 0.07, 720p 0.10, 1080p 0.16 per second (duration default 5, resolution default 720p)
    ["Q3 Pro t2v 540p 5 s", "vendor5/text-to-video", "vendor5q3-pro", { prompt, resolution: "540p" }, 350_000],
    ["Q3 Pro t2v 720p 5 s (defaults)", "vendor5/text-to-video", "vendor5q3-pro", { prompt }, 500_000],
    ["Q3 Pro t2v 1080p 5 s", "vendor5/text-to-video", "vendor5q3-pro", { prompt, resolution: "1080p" }, 800_000],
    [
      "Q3 Pro t2v 1080p 16 s",
      "vendor5/text-to-video",
      "vendor5q3-pro",
      { prompt, resolution: "1080p", duration: 16 },
      2_560_000
    ],
    ["Q3 Pro i2v 720p 1 s", "vendor5/image-to-video", "vendor5q3-pro", { images: [image], duration: 1 }, 100_000],
    // vendor5q3-turbo: 540p 0.04, 720p 0.06, 1080p 0.08 per second
    ["Q3 Turbo t2v 540p 5 s", "vendor5/text-to-video", "vendor5q3-turbo", { prompt, resolution: "540p" }, 200_000],
    ["Q3 Turbo t2v 720p 5 s", "vendor5/text-to-video", "vendor5q3-turbo", { prompt }, 300_000],
    [
      "Q3 Turbo i2v 1080p 5 s",
      "vendor5/image-to-video",
      "vendor5q3-turbo",
      { images: [image], resolution: "1080p" },
      400_000
    ],
    [
      "Q3 Turbo i2v 1080p 16 s",
      "vendor5/image-to-video",
      "vendor5q3-turbo",
      { images: [image], resolution: "1080p", duration: 16 },
      1_280_000
    ],
    // vendor5 extras: off_peak halves the generation; is_rec adds 10 credits × 0.005 = 0.05 USD (not discounted)
    ["Q3 Pro t2v 720p 5 s off_peak", "vendor5/text-to-video", "vendor5q3-pro", { prompt, off_peak: true }, 250_000],
    [
      "Q3 Pro t2v 1080p 16 s off_peak",
      "vendor5/text-to-video",
      "vendor5q3-pro",
      { prompt, resolution: "1080p", duration: 16, off_peak: true },
      1_280_000
    ],
    [
      "Q3 Turbo i2v 540p 1 s off_peak",
      "vendor5/image-to-video",
      "vendor5q3-turbo",
      { images: [image], resolution: "540p", duration: 1, off_peak: true },
      20_000
    ],
    [
      "Q3 Pro i2v 720p 5 s is_rec",
      "vendor5/image-to-video",
      "vendor5q3-pro",
      { images: [image], is_rec: true },
      550_000
    ],
    [
      "Q3 Turbo i2v 540p 3 s is_rec",
      "vendor5/image-to-video",
      "vendor5q3-turbo",
      { images: [image], resolution: "540p", duration: 3, is_rec: true },
      170_000
    ],
    [
      "Q3 Pro i2v 720p 5 s off_peak and is_rec",
      "vendor5/image-to-video",
      "vendor5q3-pro",
      { images: [image], off_peak: true, is_rec: true },
      300_000
    ],
    [
      "Q3 Turbo i2v 1080p 16 s off_peak and is_rec",
      "vendor5/image-to-video",
      "vendor5q3-turbo",
      { images: [image], resolution: "1080p", duration: 16, off_peak: true, is_rec: true },
      690_000
    ]
  ])
}
