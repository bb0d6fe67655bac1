import { describe, expect, it } from "@effect/vitest"
import { vendor4 } from "../../../src/families/vendor4/index.js"
import {
  Vendor4ImageToImageRequest as ImageToImage,
  type Vendor4Model,
  vendor4OutputSize,
  Vendor4TextToImageRequest as TextToImage
} from "../../../src/families/vendor4/requests.js"
import { describePrices, invalid, pngDataUri, priceSample, valid } from "../../helpers.js"

const v50 = "vendor4-5-0-lite"
const v45 = "vendor4-4-5"
const v40 = "vendor4-4-0"
const v30 = "vendor4-3-0-t2i"

const url = "https://example.com/in.png"

/** A GIF header of the given size as a data URI (only the header matters to the size reader). */
const gifDataUri = (width: number, height: number): string => {
  const bytes = Buffer.alloc(13)
  bytes.write("GIF89a", 0, "ascii")
  bytes.writeUInt16LE(width, 6)
  bytes.writeUInt16LE(height, 8)
  return `data:image/gif;base64,${bytes.toString("base64")}`
}

/** A PNG data URI padded to `size` bytes. */
const bigPngDataUri = (width: number, height: number, size: number): string => {
  const header = Buffer.from(pngDataUri(width, height).split(",")[1]!, "base64")
  const bytes = Buffer.alloc(size)
  header.copy(bytes)
  return `data:image/png;base64,${bytes.toString("base64")}`
}

/** An SVG data URI: readable, but not a format vendor4 takes. */
const svgDataUri = `data:image/svg+xml;base64,${
  Buffer.from("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'></svg>").toString("base64")
}`

const pathOf = (message: string) => message.split(/[: ]/)[0]!

describe("vendor4/text-to-image", () => {
  it.each([
    [v50, "2K"],
    [v45, "2K"],
    [v40, "2K"],
    [v30, "1024x1024"]
  ])("accepts a minimal request for %s and fills defaults (size %s)", (model, size) => {
    const out = valid(TextToImage, { model, input: { prompt: "a cat" } })
    expect(out).toEqual({ model, input: { prompt: "a cat", size, watermark: true } })
  })

  it("keeps every given value on 5.0", () => {
    const input = {
      prompt: "p",
      size: "3K",
      watermark: false,
      optimize_prompt: "standard",
      output_format: "jpeg",
      web_search: true
    }
    expect(valid(TextToImage, { model: v50, input }).input).toEqual(input)
  })

  it("keeps every given value on 3.0-t2i", () => {
    const input = { prompt: "p", width: 512, height: 2048, seed: -1, guidance_scale: 2.5, watermark: false }
    expect(valid(TextToImage, { model: v30, input }).input).toEqual(input)
  })

  it("fills no size when width and height are given", () => {
    const out = valid(TextToImage, { model: v40, input: { prompt: "p", width: 2048, height: 1024 } })
    expect(out.input).toEqual({ prompt: "p", width: 2048, height: 1024, watermark: true })
  })

  it.each([
    [v50, "1K"],
    [v50, "2K"],
    [v50, "3K"],
    [v45, "2K"],
    [v45, "4K"],
    [v40, "1K"],
    [v40, "2K"],
    [v40, "4K"],
    [v30, "1K"],
    [v30, "2K"]
  ])("accepts on %s the preset %s", (model, size) => {
    expect(valid(TextToImage, { model, input: { prompt: "p", size } }).input.size).toBe(size)
  })

  it.each([
    [v50, "4K"],
    [v45, "1K"],
    [v45, "3K"],
    [v40, "3K"],
    [v30, "3K"],
    [v30, "4K"]
  ])("refuses on %s the preset %s", (model, size) => {
    invalid(
      TextToImage,
      { model, input: { prompt: "p", size } },
      "input.size",
      `input.size: preset "${size}" is not available for model ${model}`
    )
  })

  it.each([
    // 4.0: 921,600 to 16,777,216 pixels, ratio 1:16 to 16:1, 128-aligned
    [v40, 384, 2432],
    [v40, 1024, 1024],
    [v40, 4096, 4096],
    [v40, 16384, 1024],
    [v40, 1024, 16384],
    // 4.5: 3,686,400 to 16,777,216 pixels
    [v45, 1920, 1920],
    [v45, 4096, 4096],
    [v45, 16384, 1024],
    [v45, 1024, 16384],
    // 5.0: 921,600 to 9,437,184 pixels
    [v50, 384, 2432],
    [v50, 3072, 3072],
    [v50, 12288, 768],
    [v50, 768, 12288],
    // 3.0-t2i: each side 512 to 2048, 64-aligned
    [v30, 512, 512],
    [v30, 2048, 2048],
    [v30, 576, 2048],
    [v30, 2048, 512]
  ])("accepts on %s the size %ix%i as size and as width/height", (model, width, height) => {
    expect(valid(TextToImage, { model, input: { prompt: "p", size: `${width}x${height}` } }).input.size)
      .toBe(`${width}x${height}`)
    const out = valid(TextToImage, { model, input: { prompt: "p", width, height } })
    expect(out.input).toEqual({ prompt: "p", width, height, watermark: true })
  })

  it.each([
    [v40, "1088x1024", "input.size: width and height must be multiples of 128 for model vendor4-4-0"],
    [v40, "1024x1088", "input.size: width and height must be multiples of 128 for model vendor4-4-0"],
    [v40, "896x1024", "input.size: total pixels must be from 921,600 to 16,777,216 for model vendor4-4-0"],
    [v40, "4096x4224", "input.size: total pixels must be from 921,600 to 16,777,216 for model vendor4-4-0"],
    [v40, "4352x256", "input.size: width/height ratio must be from 1:16 to 16:1 for model vendor4-4-0"],
    [v40, "256x4352", "input.size: width/height ratio must be from 1:16 to 16:1 for model vendor4-4-0"],
    [v45, "1920x1792", "input.size: total pixels must be from 3,686,400 to 16,777,216 for model vendor4-4-5"],
    [v45, "4096x4224", "input.size: total pixels must be from 3,686,400 to 16,777,216 for model vendor4-4-5"],
    [v45, "8704x512", "input.size: width/height ratio must be from 1:16 to 16:1 for model vendor4-4-5"],
    [v45, "2048x2112", "input.size: width and height must be multiples of 128 for model vendor4-4-5"],
    [v50, "896x1024", "input.size: total pixels must be from 921,600 to 9,437,184 for model vendor4-5-0-lite"],
    [v50, "3072x3200", "input.size: total pixels must be from 921,600 to 9,437,184 for model vendor4-5-0-lite"],
    [v50, "4352x256", "input.size: width/height ratio must be from 1:16 to 16:1 for model vendor4-5-0-lite"],
    [v50, "2000x2000", "input.size: width and height must be multiples of 128 for model vendor4-5-0-lite"],
    [v30, "448x512", "input.size: each side must be from 512 to 2048 px for model vendor4-3-0-t2i"],
    [v30, "2112x1024", "input.size: each side must be from 512 to 2048 px for model vendor4-3-0-t2i"],
    [v30, "520x512", "input.size: width and height must be multiples of 64 for model vendor4-3-0-t2i"]
  ])("refuses on %s the size %s", (model, size, message) => {
    invalid(TextToImage, { model, input: { prompt: "p", size } }, "input.size", message)
  })

  it.each([
    [v40, 1088, 1024, "input.width: width and height must be multiples of 128 for model vendor4-4-0"],
    [v40, 1024, 1088, "input.height: width and height must be multiples of 128 for model vendor4-4-0"],
    [v40, 896, 1024, "input.width: total pixels must be from 921,600 to 16,777,216 for model vendor4-4-0"],
    [v40, 4352, 256, "input.width: width/height ratio must be from 1:16 to 16:1 for model vendor4-4-0"],
    [v45, 1920, 1792, "input.width: total pixels must be from 3,686,400"],
    [v50, 3072, 3200, "input.width: total pixels must be from 921,600 to 9,437,184 for model vendor4-5-0-lite"],
    [v30, 256, 512, "input.width: each side must be from 512 to 2048 px for model vendor4-3-0-t2i"],
    [v30, 512, 2112, "input.height: each side must be from 512 to 2048 px for model vendor4-3-0-t2i"],
    [v30, 1000, 512, "input.width: must be an integer from 256 to 16384 and a multiple of 64"],
    [v40, 1024, 16448, "input.height: must be an integer from 256 to 16384 and a multiple of 64"],
    [v40, 128, 1024, "input.width: must be an integer from 256 to 16384 and a multiple of 64"],
    [v40, 1024.5, 1024, "input.width: must be an integer"]
  ])("refuses on %s width %s and height %s", (model, width, height, message) => {
    invalid(TextToImage, { model, input: { prompt: "p", width, height } }, pathOf(message), message)
  })

  it.each([
    [{ size: "2K", width: 2048, height: 2048 }, "input.size: cannot be combined with width/height"],
    [{ size: "2K", width: 2048 }, "input.size: cannot be combined with width/height"],
    [{ width: 2048 }, "input.height: is required when width is given"],
    [{ height: 2048 }, "input.width: is required when height is given"],
    [{ size: "2k" }, "input.size: must be one of \"1K\", \"2K\", \"3K\", \"4K\" or a custom size \"WxH\""],
    [{ size: "1024*1024" }, "input.size: must be one of"],
    [{ size: "0x1024" }, "input.size: must be one of"],
    [{ size: 1024 }, "input.size: must be one of"]
  ])("refuses the size fields %j", (fields, message) => {
    invalid(TextToImage, { model: v40, input: { prompt: "p", ...fields } }, pathOf(message), message)
  })

  it.each([
    [v30, { seed: 2_147_483_647, guidance_scale: 10 }],
    [v30, { seed: -1, guidance_scale: 1 }],
    [v45, { optimize_prompt: "fast" }],
    [v40, { optimize_prompt: "standard" }],
    [v50, { optimize_prompt: "standard", output_format: "png", web_search: false }]
  ])("accepts on %s the fields %j", (model, fields) => {
    expect(valid(TextToImage, { model, input: { prompt: "p", ...fields } }).input).toMatchObject(fields)
  })

  it.each([
    [v40, { seed: 1 }, "input.seed: is not supported by model vendor4-4-0"],
    [v50, { seed: 1 }, "input.seed: is not supported by model vendor4-5-0-lite"],
    [v30, { seed: -2 }, "input.seed: must be an integer from -1 to 2147483647"],
    [v30, { seed: 2_147_483_648 }, "input.seed: must be an integer from -1 to 2147483647"],
    [v30, { seed: 1.5 }, "input.seed: must be an integer"],
    [v45, { guidance_scale: 5 }, "input.guidance_scale: is not supported by model vendor4-4-5"],
    [v30, { guidance_scale: 0.5 }, "input.guidance_scale: must be a number from 1 to 10"],
    [v30, { guidance_scale: 10.5 }, "input.guidance_scale: must be a number from 1 to 10"],
    [v30, { optimize_prompt: "standard" }, "input.optimize_prompt: is not supported by model vendor4-3-0-t2i"],
    [v50, { optimize_prompt: "fast" }, "input.optimize_prompt: must be one of \"standard\" for model vendor4-5-0-lite"],
    [v40, { optimize_prompt: "slow" }, "input.optimize_prompt: must be one of \"standard\", \"fast\""],
    [v40, { output_format: "png" }, "input.output_format: is not supported by model vendor4-4-0"],
    [v30, { output_format: "png" }, "input.output_format: is not supported by model vendor4-3-0-t2i"],
    [v50, { output_format: "webp" }, "input.output_format: must be one of \"png\", \"jpeg\""],
    [v45, { web_search: true }, "input.web_search: is not supported by model vendor4-4-5"],
    [v50, { web_search: "yes" }, "input.web_search: must be a boolean"],
    [v40, { watermark: "no" }, "input.watermark: must be a boolean"],
    [v40, { colour: "red" }, "input.colour: is not a known field"],
    [v40, { image: url }, "input.image: is not a known field"]
  ])("refuses on %s the fields %j", (model, fields, message) => {
    invalid(TextToImage, { model, input: { prompt: "p", ...fields } }, pathOf(message), message)
  })

  it.each([
    [{ model: v40, input: {} }, "input.prompt is required"],
    [{ model: v40, input: { prompt: "  " } }, "input.prompt: must be a non-empty string of at most 10000 characters"],
    [{ model: v40, input: { prompt: "x".repeat(10_001) } }, "input.prompt: must be a non-empty string"],
    [{ model: "vendor4-6-0", input: { prompt: "p" } }, "model: must be one of vendor4-5-0-lite, vendor4-4-5"],
    [{ model: v40, input: { prompt: "p" }, extra: 1 }, "extra: is not a known field"],
    [{ model: v40 }, "input is required"]
  ])("refuses %j", (body, message) => {
    invalid(TextToImage, body, pathOf(message), message)
  })

  it("does not enforce the recommended prompt length", () => {
    const prompt = "word ".repeat(1_000)
    expect(valid(TextToImage, { model: v40, input: { prompt } }).input.prompt).toBe(prompt)
  })
})

describe("vendor4/image-to-image", () => {
  it.each([v50, v45, v40])("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(ImageToImage, { model, input: { prompt: "a cat", image: url } })
    expect(out).toEqual({ model, input: { prompt: "a cat", image: url, size: "2K", watermark: true } })
  })

  it("keeps every given value", () => {
    const input = {
      prompt: "p",
      image: pngDataUri(1000, 800),
      images: [url, pngDataUri(6000, 6000)],
      width: 2048,
      height: 1536,
      watermark: false,
      optimize_prompt: "standard",
      output_format: "png",
      web_search: true
    }
    expect(valid(ImageToImage, { model: v50, input }).input).toEqual(input)
  })

  it.each([
    [v50, "1K"],
    [v50, "2K"],
    [v45, "2K"],
    [v45, "4K"],
    [v40, "1K"],
    [v40, "2K"],
    [v40, "4K"]
  ])("accepts on %s the preset %s", (model, size) => {
    expect(valid(ImageToImage, { model, input: { prompt: "p", image: url, size } }).input.size).toBe(size)
  })

  it.each([
    [v50, "4K", "input.size: preset \"4K\" is not available for model vendor4-5-0-lite"],
    [v45, "1K", "input.size: preset \"1K\" is not available for model vendor4-4-5"],
    [v50, "3K", "input.size: must be one of \"1K\", \"2K\", \"4K\" or a custom size"],
    [v40, "3K", "input.size: must be one of \"1K\", \"2K\", \"4K\" or a custom size"]
  ])("refuses on %s the preset %s", (model, size, message) => {
    invalid(ImageToImage, { model, input: { prompt: "p", image: url, size } }, "input.size", message)
  })

  it.each([
    [v40, "384x2432"],
    [v40, "16384x1024"],
    [v45, "1920x1920"],
    [v50, "3072x3072"],
    [v50, "768x12288"]
  ])("accepts on %s the size %s", (model, size) => {
    expect(valid(ImageToImage, { model, input: { prompt: "p", image: url, size } }).input.size).toBe(size)
  })

  it.each([
    [v40, { size: "1088x1024" }, "input.size: width and height must be multiples of 128 for model vendor4-4-0"],
    [v40, { size: "896x1024" }, "input.size: total pixels must be from 921,600 to 16,777,216 for model vendor4-4-0"],
    [v45, { size: "1920x1792" }, "input.size: total pixels must be from 3,686,400 to 16,777,216 for model vendor4-4-5"],
    [
      v50,
      { size: "3072x3200" },
      "input.size: total pixels must be from 921,600 to 9,437,184 for model vendor4-5-0-lite"
    ],
    [v50, { size: "4352x256" }, "input.size: width/height ratio must be from 1:16 to 16:1 for model vendor4-5-0-lite"],
    [v40, { width: 4352, height: 256 }, "input.width: width/height ratio must be from 1:16 to 16:1"],
    [v40, { width: 2048, height: 1088 }, "input.height: width and height must be multiples of 128"],
    [v40, { size: "2K", height: 2048 }, "input.size: cannot be combined with width/height"],
    [v40, { width: 2048 }, "input.height: is required when width is given"],
    [v40, { height: 2048 }, "input.width: is required when height is given"]
  ])("refuses on %s the size fields %j", (model, fields, message) => {
    invalid(ImageToImage, { model, input: { prompt: "p", image: url, ...fields } }, pathOf(message), message)
  })

  it.each([
    [v50, pngDataUri(1000, 1000)],
    [v50, pngDataUri(6000, 6000)],
    [v50, pngDataUri(6000, 1)],
    [v45, gifDataUri(640, 480)],
    [v40, gifDataUri(640, 480)],
    [v40, pngDataUri(100, 6000)]
  ])("accepts on %s the data URI image %#", (model, image) => {
    expect(valid(ImageToImage, { model, input: { prompt: "p", image } }).input.image).toBe(image)
    expect(valid(ImageToImage, { model, input: { prompt: "p", image: url, images: [image] } }).input.images)
      .toEqual([image])
  })

  it("accepts a data URI of exactly 10 MB", () => {
    const image = bigPngDataUri(1000, 1000, 10 * 1024 * 1024)
    expect(valid(ImageToImage, { model: v40, input: { prompt: "p", image } }).input.image).toBe(image)
  })

  it.each([
    [v50, gifDataUri(640, 480), "input.image: image format must be one of jpeg, png for model vendor4-5-0-lite"],
    [v40, svgDataUri, "input.image: image format must be one of jpeg, png, webp, bmp, tiff, gif"],
    [v50, pngDataUri(6001, 100), "input.image: image sides must be at most 6000 px (got 6001x100)"],
    [v45, pngDataUri(100, 6001), "input.image: image sides must be at most 6000 px (got 100x6001)"],
    [v40, "data:image/png;base64,", "input.image: data URI carries no data"],
    [v40, "data:image/png;base64,AAAA", "input.image: data URI does not hold a readable image"],
    [v40, "data:text/plain;base64,AAAA", "input.image: data URI media type text/plain is not an image type"],
    [v40, "ftp://example.com/a.png", "input.image: must be an absolute http(s) URL"],
    [v40, "http://127.0.0.1/a.png", "input.image: address 127.0.0.1 is not a public address"],
    [v40, 42, "input.image: must be a string"]
  ])("refuses on %s the image %#", (model, image, message) => {
    invalid(ImageToImage, { model, input: { prompt: "p", image } }, "input.image", message)
  })

  it("refuses a data URI over 10 MB", () => {
    const image = bigPngDataUri(1000, 1000, 10 * 1024 * 1024 + 1)
    invalid(ImageToImage, { model: v40, input: { prompt: "p", image } }, "input.image", "image must be at most 10 MB")
  })

  it("accepts 0 to 14 reference images", () => {
    expect(valid(ImageToImage, { model: v45, input: { prompt: "p", image: url, images: [] } }).input.images)
      .toEqual([])
    const images = Array.from({ length: 14 }, (_, i) => `https://example.com/${i}.png`)
    expect(valid(ImageToImage, { model: v45, input: { prompt: "p", image: url, images } }).input.images)
      .toEqual(images)
  })

  it.each([
    [v45, Array.from({ length: 15 }, () => url), "input.images: must contain at most 14 images"],
    [
      v50,
      [url, url, gifDataUri(10, 10)],
      "input.images[2]: image format must be one of jpeg, png for model vendor4-5-0-lite"
    ],
    [v40, [pngDataUri(6001, 6001)], "input.images[0]: image sides must be at most 6000 px"],
    [v40, [url, svgDataUri], "input.images[1]: image format must be one of jpeg, png, webp, bmp, tiff, gif"],
    [v40, ["not a url"], "input.images[0]: must be an absolute http(s) URL"],
    [v40, url, "input.images: must be an array"]
  ])("refuses on %s the reference images %#", (model, images, message) => {
    invalid(ImageToImage, { model, input: { prompt: "p", image: url, images } }, pathOf(message), message)
  })

  it("refuses a reference image over 10 MB", () => {
    const images = [bigPngDataUri(10, 10, 10 * 1024 * 1024 + 1)]
    invalid(
      ImageToImage,
      { model: v50, input: { prompt: "p", image: url, images } },
      "input.images[0]",
      "image must be at most 10 MB"
    )
  })

  it.each([
    [v40, { optimize_prompt: "fast" }],
    [v45, { optimize_prompt: "standard" }],
    [v50, { optimize_prompt: "standard", output_format: "jpeg", web_search: true }]
  ])("accepts on %s the fields %j", (model, fields) => {
    expect(valid(ImageToImage, { model, input: { prompt: "p", image: url, ...fields } }).input).toMatchObject(fields)
  })

  it.each([
    [v50, { optimize_prompt: "fast" }, "input.optimize_prompt: must be one of \"standard\" for model vendor4-5-0-lite"],
    [v40, { output_format: "jpeg" }, "input.output_format: is not supported by model vendor4-4-0"],
    [v45, { web_search: true }, "input.web_search: is not supported by model vendor4-4-5"],
    [v50, { seed: 1 }, "input.seed: is not a known field"],
    [v50, { guidance_scale: 2 }, "input.guidance_scale: is not a known field"]
  ])("refuses on %s the fields %j", (model, fields, message) => {
    invalid(ImageToImage, { model, input: { prompt: "p", image: url, ...fields } }, pathOf(message), message)
  })

  it.each([
    [{ model: v40, input: { image: url } }, "input.prompt is required"],
    [{ model: v40, input: { prompt: "p" } }, "input.image is required"],
    [
      { model: v30, input: { prompt: "p", image: url } },
      "model: must be one of vendor4-5-0-lite, vendor4-4-5, vendor4-4-0"
    ]
  ])("refuses %j", (body, message) => {
    invalid(ImageToImage, body, pathOf(message), message)
  })
})

type SizeCase = [Vendor4Model, { size?: string; width?: number; height?: number }, number, number]

describe("vendor4OutputSize", () => {
  it.each<SizeCase>([
    [v50, {}, 2048, 2048],
    [v45, {}, 2048, 2048],
    [v40, {}, 2048, 2048],
    [v30, {}, 1024, 1024],
    [v40, { size: "1K" }, 1024, 1024],
    [v40, { size: "2K" }, 2048, 2048],
    [v50, { size: "3K" }, 3072, 3072],
    [v45, { size: "4K" }, 4096, 4096],
    [v40, { size: "16384x1024" }, 16384, 1024],
    [v30, { size: "576x2048" }, 576, 2048],
    [v40, { width: 2048, height: 1536 }, 2048, 1536]
  ])("on %s for %j is %ix%i", (model, input, width, height) => {
    expect(vendor4OutputSize(model, input)).toEqual({ width, height })
  })

  it.each([v50, v45, v40, v30])("gives the default size of %s for a normalized minimal request", (model) => {
    const out = valid(TextToImage, { model, input: { prompt: "p" } })
    expect(vendor4OutputSize(out.model, out.input)).toEqual(
      model === v30 ? { width: 1024, height: 1024 } : { width: 2048, height: 2048 }
    )
  })

  it("reads a normalized image-to-image request", () => {
    const out = valid(ImageToImage, { model: v45, input: { prompt: "p", image: url, width: 4096, height: 1024 } })
    expect(vendor4OutputSize(out.model, out.input)).toEqual({ width: 4096, height: 1024 })
  })
})

{
  const { image, prompt } = priceSample
  describePrices(vendor4, [
    // vendor4 per image
    ["vendor4-5-0-lite t2i", "vendor4/text-to-image", "vendor4-5-0-lite", { prompt }, 40_000],
    ["vendor4-4-5 t2i", "vendor4/text-to-image", "vendor4-4-5", { prompt, size: "4K" }, 40_000],
    ["vendor4-4-0 t2i", "vendor4/text-to-image", "vendor4-4-0", { prompt }, 30_000],
    ["vendor4-3-0-t2i t2i", "vendor4/text-to-image", "vendor4-3-0-t2i", { prompt }, 30_000],
    ["vendor4-5-0-lite i2i", "vendor4/image-to-image", "vendor4-5-0-lite", { prompt, image }, 40_000],
    ["vendor4-4-5 i2i", "vendor4/image-to-image", "vendor4-4-5", { prompt, image, images: [image, image] }, 40_000],
    ["vendor4-4-0 i2i", "vendor4/image-to-image", "vendor4-4-0", { prompt, image }, 30_000]
  ])
}
