import { describe, expect, it } from "@effect/vitest"
import type { Schema } from "effect"
import { defaults as defaultPrices, referenceSecondsPrice, vendor1 } from "../../../src/families/vendor1/index.js"
import {
  Vendor1ImageToVideoRequest as ImageToVideo,
  Vendor1MultimodalVideoRequest as Multimodal,
  Vendor1TextToVideoRequest as TextToVideo
} from "../../../src/families/vendor1/requests.js"
import { describePrices, invalid, pngDataUri, priceOf, priceSample, valid } from "../../helpers.js"

/** A minimal HEIF container (ftyp + meta/iprp/ipco/ispe) of the given pixel size, as a data URI. */
const heifDataUri = (width: number, height: number, brand = "heic"): string => {
  const box = (type: string, ...content: Array<Uint8Array>): Uint8Array => {
    const size = 8 + content.reduce((n, part) => n + part.length, 0)
    const out = new Uint8Array(size)
    new DataView(out.buffer).setUint32(0, size)
    out.set(new TextEncoder().encode(type), 4)
    let offset = 8
    for (const part of content) {
      out.set(part, offset)
      offset += part.length
    }
    return out
  }
  const uint32s = (...values: Array<number>) => {
    const out = new Uint8Array(values.length * 4)
    values.forEach((value, i) => new DataView(out.buffer).setUint32(i * 4, value))
    return out
  }
  const ftyp = box("ftyp", new TextEncoder().encode(brand), uint32s(0))
  const meta = box("meta", uint32s(0), box("iprp", box("ipco", box("ispe", uint32s(0, width, height)))))
  const bytes = new Uint8Array(ftyp.length + meta.length)
  bytes.set(ftyp, 0)
  bytes.set(meta, ftyp.length)
  return `data:image/heic;base64,${Buffer.from(bytes).toString("base64")}`
}

const svgDataUri = `data:image/svg+xml;base64,${
  Buffer.from("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"600\"></svg>").toString("base64")
}`

const img = "https://example.com/a.png"
const img2 = "https://example.com/b.png"

const refusals = <A, I>(
  schema: Schema.Schema<A, I>,
  cases: ReadonlyArray<readonly [string, unknown, string]>
) =>
  it.each(cases)("refuses: %s", (_name, body, message) => {
    invalid(schema, body, message.split(/[: ]/)[0]!, message)
  })

describe("vendor1/multimodal-video", () => {
  const model = "vendor1-2"

  it("accepts a minimal request for vendor1-2 and fills defaults", () => {
    expect(valid(Multimodal, { model, input: { prompt: "a cat" } })).toEqual({
      model,
      input: {
        prompt: "a cat",
        generate_audio: false,
        resolution: "720p",
        aspect_ratio: "16:9",
        duration: 5,
        web_search: false,
        nsfw_checker: true
      }
    })
  })

  it("keeps given values", () => {
    const input = {
      prompt: "p",
      first_frame_url: img,
      last_frame_url: img2,
      reference_image_urls: Array.from({ length: 9 }, (_, i) => `https://example.com/${i}.png`),
      reference_video_urls: ["https://example.com/v.mp4"],
      reference_audio_urls: ["https://example.com/a.mp3", "https://example.com/b.wav", "https://example.com/c.ogg"],
      generate_audio: true,
      resolution: "1080p",
      aspect_ratio: "21:9",
      duration: 15,
      web_search: true,
      nsfw_checker: false
    }
    expect(valid(Multimodal, { model, input, metadata: { a: 1 } })).toEqual({ model, input, metadata: { a: 1 } })
  })

  it.each([
    ["first_frame_url", { first_frame_url: img }],
    ["last_frame_url", { last_frame_url: img }],
    ["reference_image_urls", { reference_image_urls: [img] }],
    ["reference_video_urls", { reference_video_urls: ["https://example.com/v.mp4"] }]
  ])("accepts audio references with %s", (_name, visual) => {
    const input = { prompt: "p", reference_audio_urls: ["https://example.com/a.mp3"], ...visual }
    expect(valid(Multimodal, { model, input }).input).toMatchObject(input)
  })

  it("refuses audio references without a visual reference with the exact message", () => {
    const message = invalid(Multimodal, {
      model,
      input: { prompt: "p", reference_audio_urls: ["https://example.com/a.mp3"] }
    }, "input.reference_audio_urls")
    expect(message).toBe("input.reference_audio_urls: audio references must be used with an image or video reference")
  })

  refusals(Multimodal, [
    ["missing prompt", { model, input: {} }, "input.prompt is required"],
    ["blank prompt", { model, input: { prompt: " " } }, "input.prompt: must be a non-empty string"],
    [
      "long prompt",
      { model, input: { prompt: "x".repeat(5001) } },
      "input.prompt: must be a non-empty string of at most 5000"
    ],
    ["wrong model", { model: "vendor1-1-5-pro", input: { prompt: "p" } }, "model: must be one of vendor1-2"],
    ["first frame not a URL", { model, input: { prompt: "p", first_frame_url: "a.png" } }, "input.first_frame_url:"],
    [
      "private first frame",
      { model, input: { prompt: "p", first_frame_url: "http://127.0.0.1/x.png" } },
      "input.first_frame_url: address 127.0.0.1 is not a public address"
    ],
    [
      "data URI last frame",
      { model, input: { prompt: "p", last_frame_url: pngDataUri(800, 600) } },
      "input.last_frame_url: must be an absolute http(s) URL"
    ],
    [
      "10 image references",
      { model, input: { prompt: "p", reference_image_urls: Array.from({ length: 10 }, () => img) } },
      "input.reference_image_urls: must contain 1 to 9 URLs"
    ],
    [
      "no image references",
      { model, input: { prompt: "p", reference_image_urls: [] } },
      "input.reference_image_urls: must contain 1 to 9 URLs"
    ],
    [
      "private image reference",
      { model, input: { prompt: "p", reference_image_urls: [img, "http://10.0.0.1/x.png"] } },
      "input.reference_image_urls[1]: address 10.0.0.1"
    ],
    [
      "4 video references",
      { model, input: { prompt: "p", reference_video_urls: [img, img, img, img] } },
      "input.reference_video_urls: must contain 1 to 3 URLs"
    ],
    [
      "4 audio references",
      { model, input: { prompt: "p", first_frame_url: img, reference_audio_urls: [img, img, img, img] } },
      "input.reference_audio_urls: must contain 1 to 3 URLs"
    ],
    [
      "no audio references",
      { model, input: { prompt: "p", first_frame_url: img, reference_audio_urls: [] } },
      "input.reference_audio_urls: must contain 1 to 3 URLs"
    ],
    [
      "generate_audio not boolean",
      { model, input: { prompt: "p", generate_audio: "yes" } },
      "input.generate_audio: must be a boolean"
    ],
    ["resolution", { model, input: { prompt: "p", resolution: "4k" } }, "input.resolution: must be one of \"480p\""],
    ["aspect_ratio", { model, input: { prompt: "p", aspect_ratio: "adaptive" } }, "input.aspect_ratio: must be one of"],
    ["duration 3", { model, input: { prompt: "p", duration: 3 } }, "input.duration: must be an integer from 4 to 15"],
    ["duration 16", { model, input: { prompt: "p", duration: 16 } }, "input.duration: must be an integer from 4 to 15"],
    [
      "duration 5.5",
      { model, input: { prompt: "p", duration: 5.5 } },
      "input.duration: must be an integer from 4 to 15"
    ],
    ["duration string", { model, input: { prompt: "p", duration: "5" } }, "input.duration: must be an integer"],
    ["web_search", { model, input: { prompt: "p", web_search: 1 } }, "input.web_search: must be a boolean"],
    ["nsfw_checker", { model, input: { prompt: "p", nsfw_checker: null } }, "input.nsfw_checker: must be a boolean"],
    ["unknown field", { model, input: { prompt: "p", seed: 1 } }, "input.seed: is not a known field"],
    ["unknown top-level field", { model, input: { prompt: "p" }, extra: 1 }, "extra: is not a known field"]
  ])
})

describe("vendor1/image-to-video", () => {
  const common = { resolution: "720p", watermark: false, return_last_frame: false }

  it.each([
    ["vendor1-1-5-pro", { ratio: "adaptive", camera_fixed: false, generate_audio: true }],
    ["vendor1-1-0-pro", { ratio: "adaptive", camera_fixed: false }],
    ["vendor1-1-0-pro-fast", { ratio: "adaptive", camera_fixed: false }],
    ["vendor1-1-0-lite-i2v", { ratio: "adaptive", camera_fixed: false }]
  ])("accepts a minimal first-frame request for %s and fills defaults", (model, defaults) => {
    const out = valid(ImageToVideo, { model, input: { image: img, duration: 5 } })
    expect(out).toEqual({ model, input: { image: img, duration: 5, ...common, ...defaults } })
  })

  it("accepts a minimal reference-image request for vendor1-1-0-lite-i2v: ratio 16:9, no camera_fixed", () => {
    const model = "vendor1-1-0-lite-i2v"
    const out = valid(ImageToVideo, { model, input: { reference_images: [img], duration: 2 } })
    expect(out).toEqual({ model, input: { reference_images: [img], duration: 2, ...common, ratio: "16:9" } })
  })

  it.each(["vendor1-1-5-pro", "vendor1-1-0-pro", "vendor1-1-0-lite-i2v"])(
    "accepts first plus last frame on %s",
    (model) => {
      const input = { image: img, last_image: img, duration: 5 }
      expect(valid(ImageToVideo, { model, input }).input).toMatchObject(input)
    }
  )

  it("keeps given values and accepts valid data URIs", () => {
    const input = {
      image: pngDataUri(1280, 720),
      last_image: pngDataUri(300, 750),
      prompt: "",
      duration: 12,
      resolution: "1080p",
      ratio: "21:9",
      seed: 4_294_967_295,
      camera_fixed: true,
      watermark: true,
      generate_audio: false,
      return_last_frame: true
    }
    expect(valid(ImageToVideo, { model: "vendor1-1-5-pro", input })).toEqual({ model: "vendor1-1-5-pro", input })
  })

  it("accepts a reference-image request with explicit values", () => {
    const input = {
      reference_images: [img, pngDataUri(6000, 6000), img2, pngDataUri(2500, 1000)],
      prompt: "[图1] and [图2]",
      duration: 12,
      resolution: "480p",
      ratio: "9:16",
      seed: -1,
      camera_fixed: false,
      watermark: true,
      return_last_frame: true
    }
    const model = "vendor1-1-0-lite-i2v"
    expect(valid(ImageToVideo, { model, input })).toEqual({ model, input })
  })

  it("accepts heic and heif data URIs on vendor1-1-5-pro", () => {
    const input = { image: heifDataUri(1024, 768), duration: 4 }
    expect(valid(ImageToVideo, { model: "vendor1-1-5-pro", input }).input.image).toBe(input.image)
  })

  const pro = "vendor1-1-5-pro"
  const lite = "vendor1-1-0-lite-i2v"
  refusals(ImageToVideo, [
    [
      "wrong model",
      { model: "vendor1-1-0-lite-t2v", input: { image: img, duration: 5 } },
      "model: must be one of vendor1-1-5-pro, vendor1-1-0-pro, vendor1-1-0-pro-fast, vendor1-1-0-lite-i2v"
    ],
    ["missing duration", { model: pro, input: { image: img } }, "input.duration is required"],
    [
      "missing image",
      { model: pro, input: { duration: 5 } },
      "input.image: is required unless reference_images is given"
    ],
    [
      "duration 3 on 1.5 Pro",
      { model: pro, input: { image: img, duration: 3 } },
      "input.duration: must be an integer from 4 to 12 for model vendor1-1-5-pro"
    ],
    [
      "duration 13 on 1.5 Pro",
      { model: pro, input: { image: img, duration: 13 } },
      "input.duration: must be an integer from 2 to 12"
    ],
    [
      "duration 1 on 1.0 Pro",
      { model: "vendor1-1-0-pro", input: { image: img, duration: 1 } },
      "input.duration: must be an integer from 2 to 12"
    ],
    [
      "duration 4.5",
      { model: "vendor1-1-0-pro", input: { image: img, duration: 4.5 } },
      "input.duration: must be an integer"
    ],
    [
      "image not a URL",
      { model: pro, input: { image: "ftp://example.com/a.png", duration: 5 } },
      "input.image: must be an absolute http(s) URL"
    ],
    [
      "private image URL",
      { model: pro, input: { image: "http://127.0.0.1/x.png", duration: 5 } },
      "input.image: address 127.0.0.1 is not a public address"
    ],
    ["private last image URL", {
      model: pro,
      input: { image: img, last_image: "http://169.254.169.254/x.png", duration: 5 }
    }, "input.last_image: address 169.254.169.254"],
    [
      "image too small",
      { model: pro, input: { image: pngDataUri(299, 400), duration: 5 } },
      "input.image: image sides must be at least 300 px"
    ],
    [
      "image too large",
      { model: pro, input: { image: pngDataUri(6001, 4000), duration: 5 } },
      "input.image: image sides must be at most 6000 px"
    ],
    [
      "image ratio too wide",
      { model: pro, input: { image: pngDataUri(2600, 1000), duration: 5 } },
      "input.image: image width/height ratio must be at most 2.5"
    ],
    [
      "image ratio too tall",
      { model: pro, input: { image: pngDataUri(399, 1000), duration: 5 } },
      "input.image: image width/height ratio must be at least 0.4"
    ],
    [
      "image format svg",
      { model: pro, input: { image: svgDataUri, duration: 5 } },
      "input.image: image format must be one of jpeg, png, webp, bmp, tiff, gif, heic, heif"
    ],
    [
      "image not base64",
      { model: pro, input: { image: "data:image/png,abc", duration: 5 } },
      "input.image: must be a base64 data URI"
    ],
    [
      "image not an image type",
      { model: pro, input: { image: "data:text/plain;base64,aGVsbG8=", duration: 5 } },
      "input.image: data URI media type text/plain is not an image type"
    ],
    [
      "heic on 1.0 Pro",
      { model: "vendor1-1-0-pro", input: { image: heifDataUri(1024, 768), duration: 5 } },
      "input.image: image format must be one of jpeg, png, webp, bmp, tiff, gif for model vendor1-1-0-pro"
    ],
    ["heic last image on 1.0 Lite", {
      model: lite,
      input: { image: img, last_image: heifDataUri(1024, 768), duration: 5 }
    }, "input.last_image: image format must be one of jpeg, png, webp, bmp, tiff, gif for model vendor1-1-0-lite-i2v"],
    [
      "heic reference image",
      { model: lite, input: { reference_images: [img, heifDataUri(1024, 768)], duration: 5 } },
      "input.reference_images[1]: image format must be one of jpeg, png, webp, bmp, tiff, gif for model vendor1-1-0-lite-i2v"
    ],
    [
      "last_image on Pro Fast",
      { model: "vendor1-1-0-pro-fast", input: { image: img, last_image: img, duration: 5 } },
      "input.last_image: is not supported by model vendor1-1-0-pro-fast"
    ],
    [
      "last image too small",
      { model: pro, input: { image: img, last_image: pngDataUri(200, 200), duration: 5 } },
      "input.last_image: image sides must be at least 300 px"
    ],
    [
      "reference_images on 1.5 Pro",
      { model: pro, input: { reference_images: [img], duration: 5 } },
      "input.reference_images: is not supported by model vendor1-1-5-pro"
    ],
    [
      "reference_images on 1.0 Pro",
      { model: "vendor1-1-0-pro", input: { reference_images: [img], duration: 5 } },
      "input.reference_images: is not supported by model vendor1-1-0-pro"
    ],
    [
      "5 reference images",
      { model: lite, input: { reference_images: [img, img, img, img, img], duration: 5 } },
      "input.reference_images: must contain 1 to 4 images"
    ],
    [
      "empty reference images",
      { model: lite, input: { reference_images: [], duration: 5 } },
      "input.reference_images: must contain 1 to 4 images"
    ],
    [
      "bad reference image",
      { model: lite, input: { reference_images: [img, pngDataUri(1000, 300)], duration: 5 } },
      "input.reference_images[1]: image width/height ratio must be at most 2.5"
    ],
    [
      "private reference image",
      { model: lite, input: { reference_images: ["http://192.168.1.1/x.png"], duration: 5 } },
      "input.reference_images[0]: address 192.168.1.1"
    ],
    [
      "image in reference mode",
      { model: lite, input: { image: img, reference_images: [img], duration: 5 } },
      "input.image: is not allowed in reference-image mode"
    ],
    [
      "last_image in reference mode",
      { model: lite, input: { last_image: img, reference_images: [img], duration: 5 } },
      "input.last_image: is not allowed in reference-image mode"
    ],
    [
      "adaptive in reference mode",
      { model: lite, input: { reference_images: [img], duration: 5, ratio: "adaptive" } },
      "input.ratio: must be one of \"16:9\", \"4:3\", \"1:1\", \"3:4\", \"9:16\", \"21:9\" for reference-image mode"
    ],
    ["camera_fixed in reference mode", {
      model: lite,
      input: { reference_images: [img], duration: 5, camera_fixed: true }
    }, "input.camera_fixed: is not supported in reference-image mode"],
    ["1080p in lite reference mode", {
      model: lite,
      input: { reference_images: [img], duration: 5, resolution: "1080p" }
    }, "input.resolution: must be one of \"480p\", \"720p\" for model vendor1-1-0-lite-i2v in reference-image mode"],
    [
      "resolution",
      { model: pro, input: { image: img, duration: 5, resolution: "720" } },
      "input.resolution: must be one of \"480p\", \"720p\", \"1080p\""
    ],
    ["ratio", { model: pro, input: { image: img, duration: 5, ratio: "2:1" } }, "input.ratio: must be one of"],
    [
      "seed -2",
      { model: pro, input: { image: img, duration: 5, seed: -2 } },
      "input.seed: must be an integer from -1 to 4294967295"
    ],
    [
      "seed too large",
      { model: pro, input: { image: img, duration: 5, seed: 4_294_967_296 } },
      "input.seed: must be an integer from -1 to 4294967295"
    ],
    ["seed fraction", { model: pro, input: { image: img, duration: 5, seed: 1.5 } }, "input.seed: must be an integer"],
    [
      "camera_fixed",
      { model: pro, input: { image: img, duration: 5, camera_fixed: "no" } },
      "input.camera_fixed: must be a boolean"
    ],
    [
      "watermark",
      { model: pro, input: { image: img, duration: 5, watermark: 0 } },
      "input.watermark: must be a boolean"
    ],
    ["generate_audio on 1.0 Pro", {
      model: "vendor1-1-0-pro",
      input: { image: img, duration: 5, generate_audio: true }
    }, "input.generate_audio: is not supported by model vendor1-1-0-pro"],
    [
      "generate_audio on 1.0 Lite",
      { model: lite, input: { image: img, duration: 5, generate_audio: false } },
      "input.generate_audio: is not supported by model vendor1-1-0-lite-i2v"
    ],
    [
      "return_last_frame",
      { model: pro, input: { image: img, duration: 5, return_last_frame: "true" } },
      "input.return_last_frame: must be a boolean"
    ],
    [
      "prompt",
      { model: pro, input: { image: img, duration: 5, prompt: "x".repeat(10_001) } },
      "input.prompt: must be a string of at most 10000 characters"
    ],
    [
      "unknown field",
      { model: pro, input: { image: img, duration: 5, draft: true } },
      "input.draft: is not a known field"
    ],
    [
      "unknown top-level field",
      { model: pro, input: { image: img, duration: 5 }, callback: img },
      "callback: is not a known field"
    ]
  ])
})

describe("vendor1/text-to-video", () => {
  const common = {
    ratio: "16:9",
    camera_fixed: false,
    watermark: false,
    return_last_frame: false,
    service_tier: "default"
  }

  it.each([
    ["vendor1-1-5-pro", 4, { resolution: "720p", generate_audio: true, draft: false }],
    ["vendor1-1-0-pro", 2, { resolution: "1080p" }],
    ["vendor1-1-0-pro-fast", 2, { resolution: "1080p" }],
    ["vendor1-1-0-lite-t2v", 2, { resolution: "720p" }]
  ])("accepts a minimal request for %s and fills defaults", (model, duration, defaults) => {
    const out = valid(TextToVideo, { model, input: { prompt: "a cat", duration } })
    expect(out).toEqual({ model, input: { prompt: "a cat", duration, ...common, ...defaults } })
  })

  it("keeps given values (1.5 Pro)", () => {
    const input = {
      prompt: "x".repeat(10_000),
      duration: 12,
      resolution: "480p",
      ratio: "adaptive",
      seed: -1,
      camera_fixed: true,
      watermark: true,
      generate_audio: false,
      return_last_frame: true,
      draft: true,
      service_tier: "flex"
    }
    expect(valid(TextToVideo, { model: "vendor1-1-5-pro", input })).toEqual({ model: "vendor1-1-5-pro", input })
  })

  it("keeps given values (1.0 Pro Fast)", () => {
    const input = { prompt: "p", duration: 12, resolution: "720p", ratio: "9:16", seed: 0, service_tier: "flex" }
    expect(valid(TextToVideo, { model: "vendor1-1-0-pro-fast", input }).input).toEqual({
      ...input,
      camera_fixed: false,
      watermark: false,
      return_last_frame: false
    })
  })

  const pro = "vendor1-1-5-pro"
  refusals(TextToVideo, [
    [
      "wrong model",
      { model: "vendor1-1-0-lite-i2v", input: { prompt: "p", duration: 5 } },
      "model: must be one of vendor1-1-5-pro, vendor1-1-0-pro, vendor1-1-0-pro-fast, vendor1-1-0-lite-t2v"
    ],
    ["missing prompt", { model: pro, input: { duration: 5 } }, "input.prompt is required"],
    ["blank prompt", { model: pro, input: { prompt: "", duration: 5 } }, "input.prompt: must be a non-empty string"],
    [
      "prompt too long",
      { model: pro, input: { prompt: "x".repeat(10_001), duration: 5 } },
      "input.prompt: must be a non-empty string of at most 10000 characters"
    ],
    ["missing duration", { model: pro, input: { prompt: "p" } }, "input.duration is required"],
    [
      "duration 3 on 1.5 Pro",
      { model: pro, input: { prompt: "p", duration: 3 } },
      "input.duration: must be an integer from 4 to 12 for model vendor1-1-5-pro"
    ],
    [
      "duration 1 on Lite",
      { model: "vendor1-1-0-lite-t2v", input: { prompt: "p", duration: 1 } },
      "input.duration: must be an integer from 2 to 12"
    ],
    [
      "duration 13 on 1.0 Pro",
      { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 13 } },
      "input.duration: must be an integer from 2 to 12"
    ],
    [
      "duration fraction",
      { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 2.5 } },
      "input.duration: must be an integer"
    ],
    [
      "resolution",
      { model: pro, input: { prompt: "p", duration: 5, resolution: "2k" } },
      "input.resolution: must be one of"
    ],
    ["ratio", { model: pro, input: { prompt: "p", duration: 5, ratio: "5:4" } }, "input.ratio: must be one of"],
    [
      "adaptive on 1.0 Pro",
      { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 5, ratio: "adaptive" } },
      "input.ratio: must be one of \"16:9\", \"4:3\", \"1:1\", \"3:4\", \"9:16\", \"21:9\" for model vendor1-1-0-pro"
    ],
    [
      "adaptive on Lite",
      { model: "vendor1-1-0-lite-t2v", input: { prompt: "p", duration: 5, ratio: "adaptive" } },
      "input.ratio: must be one of \"16:9\", \"4:3\", \"1:1\", \"3:4\", \"9:16\", \"21:9\" for model vendor1-1-0-lite-t2v"
    ],
    [
      "seed -2",
      { model: pro, input: { prompt: "p", duration: 5, seed: -2 } },
      "input.seed: must be an integer from -1 to 4294967295"
    ],
    [
      "seed too large",
      { model: pro, input: { prompt: "p", duration: 5, seed: 4_294_967_296 } },
      "input.seed: must be an integer from -1 to 4294967295"
    ],
    ["seed fraction", { model: pro, input: { prompt: "p", duration: 5, seed: 0.5 } }, "input.seed: must be an integer"],
    [
      "camera_fixed",
      { model: pro, input: { prompt: "p", duration: 5, camera_fixed: "true" } },
      "input.camera_fixed: must be a boolean"
    ],
    [
      "watermark",
      { model: pro, input: { prompt: "p", duration: 5, watermark: null } },
      "input.watermark: must be a boolean"
    ],
    ["generate_audio on 1.0 Pro", {
      model: "vendor1-1-0-pro",
      input: { prompt: "p", duration: 5, generate_audio: true }
    }, "input.generate_audio: is not supported by model vendor1-1-0-pro"],
    ["generate_audio on Pro Fast", {
      model: "vendor1-1-0-pro-fast",
      input: { prompt: "p", duration: 5, generate_audio: false }
    }, "input.generate_audio: is not supported by model vendor1-1-0-pro-fast"],
    [
      "return_last_frame",
      { model: pro, input: { prompt: "p", duration: 5, return_last_frame: 1 } },
      "input.return_last_frame: must be a boolean"
    ],
    [
      "draft on 1.0 Pro",
      { model: "vendor1-1-0-pro", input: { prompt: "p", duration: 5, draft: true } },
      "input.draft: is not supported by model vendor1-1-0-pro"
    ],
    [
      "draft on Lite",
      { model: "vendor1-1-0-lite-t2v", input: { prompt: "p", duration: 5, draft: false } },
      "input.draft: is not supported by model vendor1-1-0-lite-t2v"
    ],
    [
      "draft not boolean",
      { model: pro, input: { prompt: "p", duration: 5, draft: "yes" } },
      "input.draft: must be a boolean"
    ],
    [
      "service_tier",
      { model: pro, input: { prompt: "p", duration: 5, service_tier: "priority" } },
      "input.service_tier: must be one of \"default\", \"flex\""
    ],
    [
      "unknown field",
      { model: pro, input: { prompt: "p", duration: 5, image: img } },
      "input.image: is not a known field"
    ],
    [
      "unknown top-level field",
      { model: pro, input: { prompt: "p", duration: 5 }, extra: true },
      "extra: is not a known field"
    ],
    ["input not an object", { model: pro, input: [] }, "input: must be an object"],
    ["missing input", { model: pro }, "input is required"]
  ])
})

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
