import { describe, expect, it } from "@effect/vitest"
import { vendor3 } from "../../../src/families/vendor3/index.js"
import { Vendor3TextToVideoRequest as Request } from "../../../src/families/vendor3/requests.js"
import { describePrices, invalid, priceSample, valid } from "../../helpers.js"

describe("vendor3/text-to-video", () => {
  it.each(["vendor3-3", "vendor3-3_fast"])("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(Request, { model, input: { prompt: "a cat" } })
    expect(out).toEqual({ model, input: { prompt: "a cat", aspect_ratio: "16:9" } })
  })

  it("keeps given values", () => {
    const input = { prompt: "p", aspect_ratio: "Auto", seed: 12345, enable_translation: true, watermark: "none" }
    expect(valid(Request, { model: "vendor3-3", input }).input).toEqual(input)
  })

  it.each([
    [{ model: "vendor3-3", input: {} }, "input.prompt is required"],
    [{ model: "vendor3-4", input: { prompt: "p" } }, "model: must be one of vendor3-3, vendor3-3_fast"],
    [{ model: "vendor3-3", input: { prompt: "p", aspect_ratio: "4:3" } }, "input.aspect_ratio: must be one of"],
    [{ model: "vendor3-3", input: { prompt: "p", seed: 9999 } }, "input.seed: must be an integer from 10000 to 99999"],
    [{ model: "vendor3-3", input: { prompt: "p", seed: 100_000 } }, "input.seed: must be an integer"],
    [{ model: "vendor3-3", input: { prompt: "p", seed: 12345.5 } }, "input.seed: must be an integer"],
    [
      { model: "vendor3-3", input: { prompt: "p", enable_translation: "yes" } },
      "input.enable_translation: must be a boolean"
    ],
    [{ model: "vendor3-3", input: { prompt: "p", colour: "red" } }, "input.colour: is not a known field"],
    [{ model: "vendor3-3", input: { prompt: "p" }, extra: 1 }, "extra: is not a known field"],
    [{ model: "vendor3-3", input: { prompt: "   " } }, "input.prompt: must be a non-empty string"],
    [{ model: "vendor3-3" }, "input is required"],
    [{ model: "vendor3-3", input: "p" }, "input: must be an object"]
  ])("refuses %j", (body, message) => {
    invalid(Request, body, message.split(/[: ]/)[0]!, message)
  })
})

{
  const { prompt } = priceSample
  describePrices(vendor3, [
    // vendor3 per request
    ["vendor3-3", "vendor3/text-to-video", "vendor3-3", { prompt }, 3_200_000],
    ["vendor3-3_fast", "vendor3/text-to-video", "vendor3-3_fast", { prompt, aspect_ratio: "9:16" }, 1_200_000]
  ])
}
