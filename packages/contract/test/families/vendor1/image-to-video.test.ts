/**
 * The vendor1/image-to-video request: its defaults per model, the values and data URIs (HEIF included) it keeps, and
 * what it refuses.
 */
import { describe, expect, it } from "@effect/vitest"
import { Vendor1ImageToVideoRequest as ImageToVideo } from "../../../src/families/vendor1/requests.js"
import { pngDataUri, valid } from "../../helpers.js"
import { heifDataUri, img, img2, refusals, svgDataUri } from "./support.js"

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
