import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Catalog, Generation } from "@mediagate/contract"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import {
  defaultPrices,
  loadPriceFile,
  mergePrices,
  parsePriceFile,
  price,
  PriceBook,
  PriceFileError,
  PriceOverride,
  PriceTable,
  UnpriceableRequestError,
  vendor1ReferenceSecondsPrice
} from "../src/Prices.js"

/** A raw body decoded (validated and normalized) by the contract's request Schema, as the API would. */
const decode = (endpoint: Catalog.EndpointKey, model: string, input: Record<string, unknown>) =>
  Schema.decodeUnknownSync(Generation.requestSchema(endpoint))({ model, input })

const priceOf = (endpoint: Catalog.EndpointKey, model: string, input: Record<string, unknown>) =>
  price(endpoint, decode(endpoint, model, input))

type Row = readonly [
  label: string,
  endpoint: Catalog.EndpointKey,
  model: string,
  input: Record<string, unknown>,
  micros: number
]

const prompt = "a lighthouse at dusk"
const image = "https://example.com/first.png"
const video = "https://example.com/reference.mp4"

// Expected figures computed by hand from decisions.md §4: USD per unit × units, written in micro-dollars.
const rows: ReadonlyArray<Row> = [
  // vendor1-2, without a video reference: 480p 0.095/s, 720p 0.205/s, 1080p 0.51/s
  ["vendor1-2 480p 5 s", "vendor1/multimodal-video", "vendor1-2", { prompt, resolution: "480p" }, 475_000],
  ["vendor1-2 720p 5 s (defaults)", "vendor1/multimodal-video", "vendor1-2", { prompt }, 1_025_000],
  ["vendor1-2 1080p 5 s", "vendor1/multimodal-video", "vendor1-2", { prompt, resolution: "1080p" }, 2_550_000],
  ["vendor1-2 480p 4 s", "vendor1/multimodal-video", "vendor1-2", { prompt, resolution: "480p", duration: 4 }, 380_000],
  [
    "vendor1-2 1080p 15 s",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, resolution: "1080p", duration: 15 },
    7_650_000
  ],
  [
    "vendor1-2 720p 5 s with audio (no audio price)",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, generate_audio: true },
    1_025_000
  ],
  [
    "vendor1-2 720p 5 s with image references only",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, reference_image_urls: [image] },
    1_025_000
  ],
  // vendor1-2 with a video reference: output seconds at the video-reference tier 0.0575 / 0.125 / 0.31
  [
    "vendor1-2 video reference 480p 5 s",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, reference_video_urls: [video], resolution: "480p" },
    287_500
  ],
  [
    "vendor1-2 video reference 720p 5 s",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, reference_video_urls: [video] },
    625_000
  ],
  [
    "vendor1-2 video reference 1080p 5 s",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, reference_video_urls: [video], resolution: "1080p" },
    1_550_000
  ],
  [
    "vendor1-2 video reference 480p 15 s",
    "vendor1/multimodal-video",
    "vendor1-2",
    { prompt, reference_video_urls: [video, video], resolution: "480p", duration: 15 },
    862_500
  ],
  // vendor1-1-5-pro: 480p 0.012 / 0.024 with audio; 720p 0.026 / 0.052; 1080p 0.058 / 0.116 (audio is the default)
  [
    "1.5 Pro t2v 480p 5 s audio",
    "vendor1/text-to-video",
    "vendor1-1-5-pro",
    { prompt, duration: 5, resolution: "480p" },
    120_000
  ],
  [
    "1.5 Pro t2v 480p 5 s no audio",
    "vendor1/text-to-video",
    "vendor1-1-5-pro",
    { prompt, duration: 5, resolution: "480p", generate_audio: false },
    60_000
  ],
  [
    "1.5 Pro t2v 720p 5 s audio (defaults)",
    "vendor1/text-to-video",
    "vendor1-1-5-pro",
    { prompt, duration: 5 },
    260_000
  ],
  [
    "1.5 Pro t2v 720p 5 s no audio",
    "vendor1/text-to-video",
    "vendor1-1-5-pro",
    { prompt, duration: 5, generate_audio: false },
    130_000
  ],
  [
    "1.5 Pro t2v 1080p 5 s audio",
    "vendor1/text-to-video",
    "vendor1-1-5-pro",
    { prompt, duration: 5, resolution: "1080p" },
    580_000
  ],
  [
    "1.5 Pro t2v 1080p 5 s no audio",
    "vendor1/text-to-video",
    "vendor1-1-5-pro",
    { prompt, duration: 5, resolution: "1080p", generate_audio: false },
    290_000
  ],
  [
    "1.5 Pro i2v 480p 12 s audio",
    "vendor1/image-to-video",
    "vendor1-1-5-pro",
    { image, duration: 12, resolution: "480p" },
    288_000
  ],
  [
    "1.5 Pro i2v 720p 4 s no audio",
    "vendor1/image-to-video",
    "vendor1-1-5-pro",
    { image, duration: 4, generate_audio: false },
    104_000
  ],
  [
    "1.5 Pro i2v 1080p 10 s audio",
    "vendor1/image-to-video",
    "vendor1-1-5-pro",
    { image, duration: 10, resolution: "1080p" },
    1_160_000
  ],
  // vendor1-1-0-pro: 480p 0.024; 720p 0.054; 1080p 0.122 (text-to-video defaults to 1080p)
  [
    "1.0 Pro t2v 480p 5 s",
    "vendor1/text-to-video",
    "vendor1-1-0-pro",
    { prompt, duration: 5, resolution: "480p" },
    120_000
  ],
  [
    "1.0 Pro t2v 720p 5 s",
    "vendor1/text-to-video",
    "vendor1-1-0-pro",
    { prompt, duration: 5, resolution: "720p" },
    270_000
  ],
  ["1.0 Pro t2v 1080p 5 s (default)", "vendor1/text-to-video", "vendor1-1-0-pro", { prompt, duration: 5 }, 610_000],
  ["1.0 Pro i2v 720p 2 s (default)", "vendor1/image-to-video", "vendor1-1-0-pro", { image, duration: 2 }, 108_000],
  // vendor1-1-0-pro-fast: 480p 0.010; 720p 0.022; 1080p 0.049
  [
    "1.0 Pro Fast t2v 480p 5 s",
    "vendor1/text-to-video",
    "vendor1-1-0-pro-fast",
    { prompt, duration: 5, resolution: "480p" },
    50_000
  ],
  [
    "1.0 Pro Fast i2v 720p 5 s (default)",
    "vendor1/image-to-video",
    "vendor1-1-0-pro-fast",
    { image, duration: 5 },
    110_000
  ],
  [
    "1.0 Pro Fast t2v 1080p 12 s (default)",
    "vendor1/text-to-video",
    "vendor1-1-0-pro-fast",
    { prompt, duration: 12 },
    588_000
  ],
  // vendor1-1-0-lite-i2v and -t2v: 480p 0.017; 720p 0.039; 1080p 0.088
  [
    "Lite I2V 480p 5 s",
    "vendor1/image-to-video",
    "vendor1-1-0-lite-i2v",
    { image, duration: 5, resolution: "480p" },
    85_000
  ],
  ["Lite I2V 720p 5 s", "vendor1/image-to-video", "vendor1-1-0-lite-i2v", { image, duration: 5 }, 195_000],
  [
    "Lite I2V 1080p 5 s",
    "vendor1/image-to-video",
    "vendor1-1-0-lite-i2v",
    { image, duration: 5, resolution: "1080p" },
    440_000
  ],
  [
    "Lite I2V reference images 720p 3 s",
    "vendor1/image-to-video",
    "vendor1-1-0-lite-i2v",
    { reference_images: [image], duration: 3 },
    117_000
  ],
  [
    "Lite T2V 480p 12 s",
    "vendor1/text-to-video",
    "vendor1-1-0-lite-t2v",
    { prompt, duration: 12, resolution: "480p" },
    204_000
  ],
  ["Lite T2V 720p 12 s (default)", "vendor1/text-to-video", "vendor1-1-0-lite-t2v", { prompt, duration: 12 }, 468_000],
  [
    "Lite T2V 1080p 12 s",
    "vendor1/text-to-video",
    "vendor1-1-0-lite-t2v",
    { prompt, duration: 12, resolution: "1080p" },
    1_056_000
  ],
  // vendor2-v3 per second: std 0.084 / 0.126 with sound; pro 0.112 / 0.168 with sound (duration default 5)
  ["V3 std sound off 5 s (defaults)", "vendor2/text-to-video", "vendor2-v3", { prompt }, 420_000],
  ["V3 std sound on 5 s", "vendor2/text-to-video", "vendor2-v3", { prompt, sound: "on" }, 630_000],
  ["V3 pro sound off 5 s", "vendor2/text-to-video", "vendor2-v3", { prompt, mode: "pro" }, 560_000],
  ["V3 pro sound on 5 s", "vendor2/text-to-video", "vendor2-v3", { prompt, mode: "pro", sound: "on" }, 840_000],
  ["V3 std sound off 3 s", "vendor2/image-to-video", "vendor2-v3", { image, duration: 3 }, 252_000],
  ["V3 std sound on 15 s", "vendor2/image-to-video", "vendor2-v3", { image, duration: 15, sound: "on" }, 1_890_000],
  ["V3 pro sound off 10 s", "vendor2/image-to-video", "vendor2-v3", { image, duration: 10, mode: "pro" }, 1_120_000],
  [
    "V3 pro sound on 15 s",
    "vendor2/image-to-video",
    "vendor2-v3",
    { image, duration: 15, mode: "pro", sound: "on" },
    2_520_000
  ],
  [
    "V3 std 7 s from multi_prompt segments",
    "vendor2/text-to-video",
    "vendor2-v3",
    {
      prompt,
      multi_shot: "true",
      multi_prompt: [{ index: 1, prompt, duration: 3 }, { index: 2, prompt, duration: 4 }]
    },
    588_000
  ],
  // vendor2-v2-6 per video: std 5 s 0.21, 10 s 0.42; pro 5 s 0.35, 10 s 0.70; sound on doubles (max 1.40)
  ["V2.6 std 5 s (defaults)", "vendor2/text-to-video", "vendor2-v2-6", { prompt }, 210_000],
  ["V2.6 std 10 s", "vendor2/text-to-video", "vendor2-v2-6", { prompt, duration: 10 }, 420_000],
  ["V2.6 pro 5 s", "vendor2/text-to-video", "vendor2-v2-6", { prompt, mode: "pro" }, 350_000],
  ["V2.6 pro 10 s", "vendor2/text-to-video", "vendor2-v2-6", { prompt, mode: "pro", duration: 10 }, 700_000],
  ["V2.6 std 5 s sound on", "vendor2/image-to-video", "vendor2-v2-6", { image, sound: "on" }, 420_000],
  ["V2.6 std 10 s sound on", "vendor2/image-to-video", "vendor2-v2-6", { image, duration: 10, sound: "on" }, 840_000],
  ["V2.6 pro 5 s sound on", "vendor2/image-to-video", "vendor2-v2-6", { image, mode: "pro", sound: "on" }, 700_000],
  [
    "V2.6 pro 10 s sound on (the maximum)",
    "vendor2/image-to-video",
    "vendor2-v2-6",
    { image, mode: "pro", duration: 10, sound: "on" },
    1_400_000
  ],
  // vendor3 per request
  ["vendor3-3", "vendor3/text-to-video", "vendor3-3", { prompt }, 3_200_000],
  ["vendor3-3_fast", "vendor3/text-to-video", "vendor3-3_fast", { prompt, aspect_ratio: "9:16" }, 1_200_000],
  // vendor4 per image
  ["vendor4-5-0-lite t2i", "vendor4/text-to-image", "vendor4-5-0-lite", { prompt }, 40_000],
  ["vendor4-4-5 t2i", "vendor4/text-to-image", "vendor4-4-5", { prompt, size: "4K" }, 40_000],
  ["vendor4-4-0 t2i", "vendor4/text-to-image", "vendor4-4-0", { prompt }, 30_000],
  ["vendor4-3-0-t2i t2i", "vendor4/text-to-image", "vendor4-3-0-t2i", { prompt }, 30_000],
  ["vendor4-5-0-lite i2i", "vendor4/image-to-image", "vendor4-5-0-lite", { prompt, image }, 40_000],
  ["vendor4-4-5 i2i", "vendor4/image-to-image", "vendor4-4-5", { prompt, image, images: [image, image] }, 40_000],
  ["vendor4-4-0 i2i", "vendor4/image-to-image", "vendor4-4-0", { prompt, image }, 30_000],
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
  ["Q3 Pro i2v 720p 5 s is_rec", "vendor5/image-to-video", "vendor5q3-pro", { images: [image], is_rec: true }, 550_000],
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
  ],
  // vendor6-2 per image by resolution; search is free
  ["vendor6-2 1K (default)", "vendor6/image-to-image", "vendor6-2", { prompt }, 80_000],
  ["vendor6-2 2K", "vendor6/image-to-image", "vendor6-2", { prompt, resolution: "2K" }, 120_000],
  ["vendor6-2 4K", "vendor6/image-to-image", "vendor6-2", { prompt, resolution: "4K", image_input: [image] }, 160_000],
  ["vendor6-2 1K with search", "vendor6/image-to-image", "vendor6-2", { prompt, vendor6_search: true }, 80_000],
  // vendor7: 480p 0.05, 720p 0.07 per second; durations "6" (default), "10", "15"
  [
    "vendor7 480p 6 s",
    "vendor7/text-to-video",
    "vendor7-imagine/text-to-video",
    { prompt, resolution: "480p" },
    300_000
  ],
  [
    "vendor7 480p 10 s",
    "vendor7/text-to-video",
    "vendor7-imagine/text-to-video",
    { prompt, resolution: "480p", duration: "10" },
    500_000
  ],
  [
    "vendor7 480p 15 s",
    "vendor7/text-to-video",
    "vendor7-imagine/text-to-video",
    { prompt, resolution: "480p", duration: "15" },
    750_000
  ],
  ["vendor7 720p 6 s (defaults)", "vendor7/text-to-video", "vendor7-imagine/text-to-video", { prompt }, 420_000],
  ["vendor7 720p 10 s", "vendor7/text-to-video", "vendor7-imagine/text-to-video", { prompt, duration: "10" }, 700_000],
  [
    "vendor7 720p 15 s",
    "vendor7/text-to-video",
    "vendor7-imagine/text-to-video",
    { prompt, duration: "15", mode: "fun" },
    1_050_000
  ],
  // vendor8: 720p 0.10, 1080p 0.15 per second; durations "5" (default), "10", "15" (video-to-video: "5", "10")
  [
    "vendor8 t2v 720p 5 s",
    "vendor8/text-to-video",
    "vendor8/2-6-text-to-video",
    { prompt, resolution: "720p" },
    500_000
  ],
  [
    "vendor8 t2v 720p 10 s",
    "vendor8/text-to-video",
    "vendor8/2-6-text-to-video",
    { prompt, resolution: "720p", duration: "10" },
    1_000_000
  ],
  [
    "vendor8 t2v 720p 15 s",
    "vendor8/text-to-video",
    "vendor8/2-6-text-to-video",
    { prompt, resolution: "720p", duration: "15" },
    1_500_000
  ],
  ["vendor8 t2v 1080p 5 s (defaults)", "vendor8/text-to-video", "vendor8/2-6-text-to-video", { prompt }, 750_000],
  [
    "vendor8 t2v 1080p 10 s",
    "vendor8/text-to-video",
    "vendor8/2-6-text-to-video",
    { prompt, duration: "10" },
    1_500_000
  ],
  [
    "vendor8 t2v 1080p 15 s",
    "vendor8/text-to-video",
    "vendor8/2-6-text-to-video",
    { prompt, duration: "15" },
    2_250_000
  ],
  [
    "vendor8 i2v 720p 5 s",
    "vendor8/image-to-video",
    "vendor8/2-6-image-to-video",
    { prompt, image_urls: [image], resolution: "720p" },
    500_000
  ],
  [
    "vendor8 i2v 720p 15 s",
    "vendor8/image-to-video",
    "vendor8/2-6-image-to-video",
    { prompt, image_urls: [image], resolution: "720p", duration: "15" },
    1_500_000
  ],
  [
    "vendor8 i2v 1080p 10 s",
    "vendor8/image-to-video",
    "vendor8/2-6-image-to-video",
    { prompt, image_urls: [image], duration: "10" },
    1_500_000
  ],
  [
    "vendor8 i2v 1080p 15 s",
    "vendor8/image-to-video",
    "vendor8/2-6-image-to-video",
    { prompt, image_urls: [image], duration: "15" },
    2_250_000
  ],
  [
    "vendor8 v2v 720p 10 s",
    "vendor8/video-to-video",
    "vendor8/2-6-video-to-video",
    { prompt, video_urls: [video], resolution: "720p", duration: "10" },
    1_000_000
  ],
  [
    "vendor8 v2v 1080p 5 s (defaults)",
    "vendor8/video-to-video",
    "vendor8/2-6-video-to-video",
    { prompt, video_urls: [video, video] },
    750_000
  ]
]

describe("price: the default table (decisions.md §4)", () => {
  it.each(rows)("%s", (_label, endpoint, model, input, micros) => {
    expect(priceOf(endpoint, model, input)).toBe(micros)
  })

  it("prices every model of every endpoint", () => {
    const priced = new Set(rows.map(([, endpoint, model]) => `${endpoint} ${model}`))
    const missing = (Object.keys(Catalog.endpoints) as Array<Catalog.EndpointKey>).flatMap((endpoint) =>
      Catalog.endpoints[endpoint].models
        .map((model) => `${endpoint} ${model}`)
        .filter((key) => !priced.has(key))
    )
    expect(missing).toEqual([])
  })

  it("the default table is a valid PriceTable and round-trips as JSON", () => {
    const json: unknown = JSON.parse(JSON.stringify(defaultPrices))
    expect(Schema.decodeUnknownSync(PriceTable, { onExcessProperty: "error" })(json)).toEqual(defaultPrices)
  })

  it("reads the input as stored (normalized) without the Schema, duration as number or string", () => {
    expect(price("vendor7/text-to-video", {
      model: "vendor7-imagine/text-to-video",
      input: { prompt, duration: "15", resolution: "480p" }
    })).toBe(750_000)
    expect(price("vendor8/text-to-video", { model: "vendor8/2-6-text-to-video", input: { prompt, duration: 10 } }))
      .toBe(1_500_000)
    expect(price("vendor2/text-to-video", { model: "vendor2-v2-6", input: { prompt, duration: 10, sound: "on" } }))
      .toBe(840_000)
  })

  it("refuses a model of another endpoint and a value without a price", () => {
    expect(() => price("vendor3/text-to-video", { model: "vendor4-4-0", input: { prompt } }))
      .toThrow(UnpriceableRequestError)
    expect(() => price("vendor6/image-to-image", { model: "vendor6-2", input: { prompt, resolution: "8K" } }))
      .toThrow(/input\.resolution "8K" has no price/)
    expect(() => price("vendor1/text-to-video", { model: "vendor1-1-0-pro", input: { prompt } }))
      .toThrow(/input\.duration is missing/)
    expect(() => price("vendor2/text-to-video", { model: "vendor2-v2-6", input: { prompt, duration: 7 } }))
      .toThrow(/input\.duration 7 has no price/)
  })
})

describe("vendor1ReferenceSecondsPrice: the reference seconds of vendor1-2", () => {
  it.each([
    ["480p", 3, 172_500],
    ["720p", 8, 1_000_000],
    ["1080p", 2.5, 775_000],
    ["480p", 1.001, 57_558], // 0.0575 × 1.001 = 0.0575575 USD, half up to the micro-dollar
    ["720p", 0.0004, 0], // below a millisecond
    ["1080p", 0, 0],
    ["1080p", -3, 0]
  ] as const)("%s × %s s = %s micro-dollars", (resolution, seconds, micros) => {
    expect(vendor1ReferenceSecondsPrice(resolution, seconds)).toBe(micros)
  })

  it("uses the given table", () => {
    const table = mergePrices(defaultPrices, { "vendor1-2": { videoReferencePerSecond: { "720p": 0.2 } } })
    expect(vendor1ReferenceSecondsPrice("720p", 8, table)).toBe(1_600_000)
  })

  it("output plus reference seconds: a 720p 5 s output with a 8 s reference costs 13 s at 0.125", () => {
    const atAccept = priceOf("vendor1/multimodal-video", "vendor1-2", { prompt, reference_video_urls: [video] })
    expect(atAccept + vendor1ReferenceSecondsPrice("720p", 8)).toBe(1_625_000)
  })
})

describe("exact arithmetic", () => {
  it("has no float drift on per-second prices", () => {
    // 0.1 × 3 and 0.07 × 3 are not exact in binary floating point
    const table = mergePrices(defaultPrices, { "vendor8/2-6-text-to-video": { perSecond: { "720p": 0.1 } } })
    const request = { model: "vendor8/2-6-text-to-video", input: { duration: 3, resolution: "720p" } }
    expect(price("vendor8/text-to-video", request, table)).toBe(300_000)
    expect(price("vendor7/text-to-video", { model: "vendor7-imagine/text-to-video", input: { duration: 3 } }))
      .toBe(210_000)
  })

  it("rounds an off_peak half micro-dollar up, and a multiplier exactly", () => {
    const table = mergePrices(defaultPrices, {
      "vendor5q3-pro": { perSecond: { "720p": 0.000003 } },
      "vendor2-v2-6": { perVideo: { std: { "5": 0.333333 } }, soundMultiplier: 1.5 }
    })
    // 3 micro-dollars × 0.5 = 1.5 → 2
    expect(price("vendor5/text-to-video", { model: "vendor5q3-pro", input: { duration: 1, off_peak: true } }, table))
      .toBe(2)
    // 333333 × 1.5 = 499999.5 → 500000
    expect(price("vendor2/text-to-video", { model: "vendor2-v2-6", input: { sound: "on" } }, table)).toBe(500_000)
  })
})

describe("mergePrices", () => {
  it("merges to the leaves: a partial override keeps every other default", () => {
    const merged = mergePrices(defaultPrices, {
      "vendor1-2": { perSecond: { "1080p": 0.6 } },
      "vendor5q3-pro": { offPeakFactor: 0.25 },
      "vendor3-3": { perRequest: 2 }
    })
    expect(merged["vendor1-2"]).toEqual({
      perSecond: { "480p": 0.095, "720p": 0.205, "1080p": 0.6 },
      videoReferencePerSecond: defaultPrices["vendor1-2"].videoReferencePerSecond
    })
    expect(merged["vendor5q3-pro"]).toEqual({ ...defaultPrices["vendor5q3-pro"], offPeakFactor: 0.25 })
    expect(merged["vendor3-3"]).toEqual({ perRequest: 2 })
    expect(merged["vendor3-3_fast"]).toBe(defaultPrices["vendor3-3_fast"])
    expect(defaultPrices["vendor1-2"].perSecond["1080p"]).toBe(0.51)
  })

  it("an empty override is the base", () => {
    expect(mergePrices(defaultPrices, {})).toEqual(defaultPrices)
  })
})

const tempDir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "mediagate-prices-"))
afterAll(() => fs.rmSync(tempDir, { recursive: true, force: true }))
const writeFile = (name: string, content: string): string => {
  const file = nodePath.join(tempDir, name)
  fs.writeFileSync(file, content)
  return file
}

describe("loadPriceFile", () => {
  it.effect("merges a partial file over the defaults", () =>
    Effect.gen(function*() {
      const file = writeFile(
        "partial.json",
        JSON.stringify({
          "vendor1-2": { perSecond: { "720p": 0.3 } },
          "vendor6-2": { perImage: { "4K": 0.2 } },
          "vendor5q3-turbo": { isRecCredits: 20, creditPrice: 0.01 }
        })
      )
      const table = yield* loadPriceFile(file)
      expect(table["vendor1-2"].perSecond).toEqual({ "480p": 0.095, "720p": 0.3, "1080p": 0.51 })
      expect(price("vendor1/multimodal-video", decode("vendor1/multimodal-video", "vendor1-2", { prompt }), table))
        .toBe(1_500_000)
      const fourK = decode("vendor6/image-to-image", "vendor6-2", { prompt, resolution: "4K" })
      expect(price("vendor6/image-to-image", fourK, table)).toBe(200_000)
      expect(price("vendor6/image-to-image", decode("vendor6/image-to-image", "vendor6-2", { prompt }), table))
        .toBe(80_000)
      // 0.06 × 5 + 20 × 0.01
      expect(price(
        "vendor5/image-to-video",
        decode("vendor5/image-to-video", "vendor5q3-turbo", { images: [image], is_rec: true }),
        table
      )).toBe(500_000)
      expect(table["vendor4-4-0"]).toEqual(defaultPrices["vendor4-4-0"])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("an empty object gives the defaults", () =>
    Effect.gen(function*() {
      const table = yield* loadPriceFile(writeFile("empty.json", "{}"))
      expect(table).toEqual(defaultPrices)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  const failure = (file: string) =>
    loadPriceFile(file).pipe(Effect.flip, Effect.provide(NodeFileSystem.layer))

  it.effect("a missing file", () =>
    Effect.gen(function*() {
      const file = nodePath.join(tempDir, "absent.json")
      const error = yield* failure(file)
      expect(error).toBeInstanceOf(PriceFileError)
      expect(error._tag).toBe("PriceFileError")
      expect(error.file).toBe(file)
      expect(error.message).toBe(`price file ${file}: not found`)
    }))

  it.effect("invalid JSON", () =>
    Effect.gen(function*() {
      const file = writeFile("broken.json", "{ \"vendor3-3\": ")
      const error = yield* failure(file)
      expect(error.path).toEqual([])
      expect(error.message.startsWith(`price file ${file}: is not valid JSON (`)).toBe(true)
    }))

  it.effect("a negative price names the path", () =>
    Effect.gen(function*() {
      const file = writeFile("negative.json", JSON.stringify({ "vendor1-2": { perSecond: { "480p": -0.1 } } }))
      const error = yield* failure(file)
      expect(error.path).toEqual(["vendor1-2", "perSecond", "480p"])
      expect(error.message).toBe(`price file ${file}: vendor1-2.perSecond.480p: must not be negative (got -0.1)`)
    }))

  it.effect.each([
    [
      "an unknown model",
      { "vendor9-x": { perRequest: 1 } },
      ["vendor9-x"],
      /vendor9-x: is unexpected/
    ],
    [
      "an unknown field",
      { "vendor3-3": { perSecond: 1 } },
      ["vendor3-3", "perSecond"],
      /vendor3-3\.perSecond: is unexpected/
    ],
    [
      "a string price",
      { "vendor4-4-0": { perImage: "0.03" } },
      ["vendor4-4-0", "perImage"],
      /vendor4-4-0\.perImage: Expected number, actual "0\.03"/
    ],
    [
      "more than 6 decimals",
      { "vendor7-imagine/text-to-video": { perSecond: { "480p": 0.0000001 } } },
      ["vendor7-imagine/text-to-video", "perSecond", "480p"],
      /vendor7-imagine\/text-to-video\.perSecond\.480p: must have at most 6 decimals/
    ],
    [
      "an off_peak factor above 1",
      { "vendor5q3-pro": { offPeakFactor: 1.5 } },
      ["vendor5q3-pro", "offPeakFactor"],
      /vendor5q3-pro\.offPeakFactor: must be at most 1 \(got 1\.5\)/
    ],
    [
      "a fractional credit count",
      { "vendor5q3-pro": { isRecCredits: 2.5 } },
      ["vendor5q3-pro", "isRecCredits"],
      /vendor5q3-pro\.isRecCredits: must be an integer number of credits from 0 to 1000000 \(got 2\.5\)/
    ],
    [
      "a negative multiplier",
      { "vendor2-v2-6": { soundMultiplier: -2 } },
      ["vendor2-v2-6", "soundMultiplier"],
      /vendor2-v2-6\.soundMultiplier: must not be negative \(got -2\)/
    ],
    [
      "a missing price map",
      { "vendor1-2": { perSecond: null } },
      ["vendor1-2", "perSecond"],
      /vendor1-2\.perSecond: Expected an object of prices for 480p, 720p, 1080p, actual null/
    ],
    ["not an object", [1, 2], [], /: Expected PriceOverride, actual \[1,2\]/]
  ] as const)("refuses %s", ([name, content, path, message]) =>
    Effect.gen(function*() {
      const file = writeFile(`${name.replace(/\W+/g, "-")}.json`, JSON.stringify(content))
      const error = yield* failure(file)
      expect(error.path).toEqual(path)
      expect(error.message.startsWith(`price file ${file}: `)).toBe(true)
      expect(error.message).toMatch(message)
    }))

  it.effect("the example of docs/prices.md is a valid file", () =>
    Effect.gen(function*() {
      const doc = fs.readFileSync(new URL("../../../docs/prices.md", import.meta.url), "utf8")
      const example = /```json\n([\s\S]*?)```/.exec(doc)?.[1] ?? ""
      const table = yield* parsePriceFile("docs/prices.md", example)
      expect(table["vendor1-2"].perSecond).toEqual({ "480p": 0.095, "720p": 0.205, "1080p": 0.55 })
      // 0.75 × 1.8
      const v26 = { model: "vendor2-v2-6", input: { mode: "pro", duration: 10, sound: "on" } }
      expect(price("vendor2/text-to-video", v26, table)).toBe(1_350_000)
      expect(price("vendor5/text-to-video", { model: "vendor5q3-pro", input: { off_peak: true } }, table)).toBe(300_000)
    }))

  it.effect("reports every offending value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parsePriceFile("inline.json", JSON.stringify({
        "vendor3-3": { perRequest: -1 },
        "vendor3-3_fast": { perRequest: -2 }
      })))
      expect(error.message).toBe(
        "price file inline.json: vendor3-3.perRequest: must not be negative (got -1); " +
          "vendor3-3_fast.perRequest: must not be negative (got -2)"
      )
    }))
})

describe("PriceOverride", () => {
  it("accepts any part of the table and nothing else", () => {
    const decode = Schema.decodeUnknownEither(PriceOverride, { onExcessProperty: "error" })
    expect(Either.isRight(decode({ "vendor2-v2-6": { perVideo: { pro: { "10": 0.8 } } } }))).toBe(true)
    expect(Either.isLeft(decode({ "vendor2-v2-6": { perVideo: { pro: { "15": 0.8 } } } }))).toBe(true)
    expect(Either.isLeft(decode({ "vendor2-v2-6": { perVideo: 1 } }))).toBe(true)
  })
})

describe("PriceBook", () => {
  it.effect("layer: the defaults, or the given table", () =>
    Effect.gen(function*() {
      expect(yield* PriceBook).toBe(defaultPrices)
      const custom = mergePrices(defaultPrices, { "vendor3-3": { perRequest: 1 } })
      const table = yield* Effect.provide(PriceBook, PriceBook.layer(custom))
      expect(table["vendor3-3"].perRequest).toBe(1)
    }).pipe(Effect.provide(PriceBook.layer())))

  const withConfig = (map: Map<string, string>) =>
    PriceBook.layerConfig.pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(map)))
    )

  it.effect("layerConfig: the defaults without MEDIAGATE_PRICES_FILE", () =>
    Effect.gen(function*() {
      expect(yield* PriceBook).toEqual(defaultPrices)
    }).pipe(Effect.provide(withConfig(new Map()))))

  it.effect("layerConfig: a blank MEDIAGATE_PRICES_FILE counts as unset", () =>
    Effect.gen(function*() {
      expect(yield* PriceBook).toEqual(defaultPrices)
    }).pipe(Effect.provide(withConfig(new Map([["MEDIAGATE_PRICES_FILE", " "]])))))

  it.effect("layerConfig: the file named by MEDIAGATE_PRICES_FILE over the defaults", () =>
    Effect.gen(function*() {
      const file = writeFile("config.json", JSON.stringify({ "vendor3-3_fast": { perRequest: 0.9 } }))
      const table = yield* Effect.provide(PriceBook, withConfig(new Map([["MEDIAGATE_PRICES_FILE", file]])))
      expect(table["vendor3-3_fast"].perRequest).toBe(0.9)
      expect(table["vendor3-3"].perRequest).toBe(3.2)
      expect(price("vendor3/text-to-video", decode("vendor3/text-to-video", "vendor3-3_fast", { prompt }), table))
        .toBe(900_000)
    }))

  it.effect("layerConfig: a bad file fails the layer with PriceFileError", () =>
    Effect.gen(function*() {
      const file = writeFile("config-bad.json", JSON.stringify({ "vendor3-3": { perRequest: -3.2 } }))
      const error = yield* Effect.provide(PriceBook, withConfig(new Map([["MEDIAGATE_PRICES_FILE", file]])))
        .pipe(Effect.flip)
      expect(error).toBeInstanceOf(PriceFileError)
      expect(error.message).toBe(`price file ${file}: vendor3-3.perRequest: must not be negative (got -3.2)`)
    }))
})
