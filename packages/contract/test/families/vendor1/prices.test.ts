/** The vendor1 prices: every model's price per resolution and duration, and the reference seconds of vendor1-2. */
import { describe, expect, it } from "@effect/vitest"
import { defaults as defaultPrices, referenceSecondsPrice, vendor1 } from "../../../src/families/vendor1/index.js"
import { describePrices, priceOf, priceSample } from "../../helpers.js"

{
  const { image, prompt, video } = priceSample
  describePrices(vendor1, [
    // vendor1-2, without a video reference: 480p 0.095/s, 720p 0.205/s, 1080p 0.51/s
    ["vendor1-2 480p 5 s", "vendor1/multimodal-video", "vendor1-2", { prompt, resolution: "480p" }, 475_000],
    ["vendor1-2 720p 5 s (defaults)", "vendor1/multimodal-video", "vendor1-2", { prompt }, 1_025_000],
    ["vendor1-2 1080p 5 s", "vendor1/multimodal-video", "vendor1-2", { prompt, resolution: "1080p" }, 2_550_000],
    [
      "vendor1-2 480p 4 s",
      "vendor1/multimodal-video",
      "vendor1-2",
      { prompt, resolution: "480p", duration: 4 },
      380_000
    ],
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
    [
      "Lite T2V 720p 12 s (default)",
      "vendor1/text-to-video",
      "vendor1-1-0-lite-t2v",
      { prompt, duration: 12 },
      468_000
    ],
    [
      "Lite T2V 1080p 12 s",
      "vendor1/text-to-video",
      "vendor1-1-0-lite-t2v",
      { prompt, duration: 12, resolution: "1080p" },
      1_056_000
    ]
  ])
}

describe("referenceSecondsPrice: the reference seconds of vendor1-2", () => {
  it.each(
    [
      ["480p", 3, 172_500],
      ["720p", 8, 1_000_000],
      ["1080p", 2.5, 775_000],
      ["480p", 1.001, 57_558], // 0.0575 × 1.001 = 0.0575575 USD, half up to the micro-dollar
      ["720p", 0.0004, 0], // below a millisecond
      ["1080p", 0, 0],
      ["1080p", -3, 0]
    ] as const
  )("%s × %s s = %s micro-dollars", (resolution, seconds, micros) => {
    expect(referenceSecondsPrice(resolution, seconds)).toBe(micros)
  })

  it("uses the given table", () => {
    const entry = defaultPrices["vendor1-2"]
    const table = {
      ...defaultPrices,
      "vendor1-2": { ...entry, videoReferencePerSecond: { ...entry.videoReferencePerSecond, "720p": 0.2 } }
    }
    expect(referenceSecondsPrice("720p", 8, table)).toBe(1_600_000)
  })

  it("output plus reference seconds: a 720p 5 s output with a 8 s reference costs 13 s at 0.125", () => {
    const atAccept = priceOf("vendor1/multimodal-video", "vendor1-2", {
      prompt: priceSample.prompt,
      reference_video_urls: [priceSample.video]
    })
    expect(atAccept + referenceSecondsPrice("720p", 8)).toBe(1_625_000)
  })
})
