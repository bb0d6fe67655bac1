import { describe, expect, it } from "@effect/vitest"
import { vendor6, vendor6Size } from "../../../src/families/vendor6/index.js"
import { Vendor6ImageToImageRequest as Request } from "../../../src/families/vendor6/requests.js"
import { describePrices, invalid, priceSample, valid } from "../../helpers.js"

const url = (i: number) => `https://example.com/ref-${i}.png`

describe("vendor6/image-to-image", () => {
  it.each(["vendor6-2"])("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(Request, { model, input: { prompt: "a cat" } })
    expect(out).toEqual({
      model,
      input: { prompt: "a cat", aspect_ratio: "auto", resolution: "1K", output_format: "jpg", vendor6_search: false }
    })
  })

  it.each([
    ["no", []],
    ["14", Array.from({ length: 14 }, (_, i) => url(i))]
  ])("accepts %s reference images", (_, image_input) => {
    const input = {
      prompt: "p",
      image_input,
      aspect_ratio: "8:1",
      resolution: "4K",
      output_format: "png",
      vendor6_search: true
    }
    expect(valid(Request, { model: "vendor6-2", input }).input).toEqual(input)
  })

  const body = (input: Record<string, unknown>, model = "vendor6-2") => ({ model, input: { prompt: "p", ...input } })

  it.each([
    [{ model: "vendor6-2", input: {} }, "input.prompt is required"],
    [body({ prompt: " " }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [body({ prompt: "x".repeat(10_001) }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [
      body({ image_input: Array.from({ length: 15 }, (_, i) => url(i)) }),
      "input.image_input: must contain at most 14 URLs"
    ],
    [body({ image_input: url(0) }), "input.image_input: must be an array"],
    [body({ image_input: ["not a url"] }), "input.image_input[0]: must be an absolute http(s) URL"],
    [
      body({ image_input: [url(0), "http://127.0.0.1/a.png"] }),
      "input.image_input[1]: address 127.0.0.1 is not a public"
    ],
    [body({ image_input: ["http://[::1]/x"] }), "input.image_input[0]: address ::1 is not a public address"],
    [body({ image_input: ["http://169.254.169.254/"] }), "input.image_input[0]: address 169.254.169.254"],
    [body({ image_input: ["data:image/png;base64,AAAA"] }), "input.image_input[0]: must be an absolute http(s) URL"],
    [body({ aspect_ratio: "2:1" }), `input.aspect_ratio: must be one of "auto", "1:1"`],
    [body({ resolution: "8K" }), `input.resolution: must be one of "1K", "2K", "4K"`],
    [body({ resolution: "1k" }), `input.resolution: must be one of "1K", "2K", "4K"`],
    [body({ output_format: "jpeg" }), `input.output_format: must be one of "jpg", "png"`],
    [body({ vendor6_search: "true" }), "input.vendor6_search: must be a boolean"],
    [body({ seed: 1 }), "input.seed: is not a known field"],
    [body({}, "vendor6-1"), "model: must be one of vendor6-2 for this endpoint"],
    [{ ...body({}), extra: 1 }, "extra: is not a known field"],
    [{ model: "vendor6-2", input: [] }, "input: must be an object"]
  ])("refuses %j", (body, message) => {
    invalid(Request, body, message.split(/[: ]/)[0]!, message)
  })
})

{
  const { image, prompt } = priceSample
  describePrices(vendor6, [
    // vendor6-2 per image by resolution; search is free
    ["vendor6-2 1K (default)", "vendor6/image-to-image", "vendor6-2", { prompt }, 80_000],
    ["vendor6-2 2K", "vendor6/image-to-image", "vendor6-2", { prompt, resolution: "2K" }, 120_000],
    [
      "vendor6-2 4K",
      "vendor6/image-to-image",
      "vendor6-2",
      { prompt, resolution: "4K", image_input: [image] },
      160_000
    ],
    ["vendor6-2 1K with search", "vendor6/image-to-image", "vendor6-2", { prompt, vendor6_search: true }, 80_000]
  ])
}

describe("vendor6 output size", () => {
  it.each([
    ["1K", "auto", 1024, 1024],
    ["2K", "16:9", 2048, 1152],
    ["4K", "9:16", 2304, 4096],
    ["1K", "21:9", 1024, 440],
    ["2K", "1:8", 256, 2048]
  ])("vendor6 %s %s is %ix%i", (resolution, ratio, width, height) => {
    expect(vendor6Size(resolution, ratio)).toEqual({ width, height })
  })
})
