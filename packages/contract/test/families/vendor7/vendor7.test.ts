import { describe, expect, it } from "@effect/vitest"
import { vendor7 } from "../../../src/families/vendor7/index.js"
import { Vendor7TextToVideoRequest as Request } from "../../../src/families/vendor7/requests.js"
import { describePrices, invalid, priceSample, valid } from "../../helpers.js"

describe("vendor7/text-to-video", () => {
  it.each(["vendor7-imagine/text-to-video"])("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(Request, { model, input: { prompt: "a cat" } })
    expect(out).toEqual({
      model,
      input: { prompt: "a cat", duration: "6", resolution: "720p", aspect_ratio: "16:9", mode: "normal" }
    })
  })

  it.each([
    { prompt: "p", duration: "10", resolution: "480p", aspect_ratio: "21:9", mode: "spicy" },
    { prompt: "x".repeat(10_000), duration: "15", resolution: "720p", aspect_ratio: "3:4", mode: "fun" }
  ])("keeps given values %#", (input) => {
    expect(valid(Request, { model: "vendor7-imagine/text-to-video", input }).input).toEqual(input)
  })

  const body = (input: Record<string, unknown>, model = "vendor7-imagine/text-to-video") => ({
    model,
    input: { prompt: "p", ...input }
  })

  it.each([
    [{ model: "vendor7-imagine/text-to-video", input: {} }, "input.prompt is required"],
    [body({ prompt: "" }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [body({ prompt: "x".repeat(10_001) }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [body({ duration: 6 }), `input.duration: must be one of "6", "10", "15"`],
    [body({ duration: "5" }), `input.duration: must be one of "6", "10", "15"`],
    [body({ resolution: "1080p" }), `input.resolution: must be one of "480p", "720p"`],
    [body({ aspect_ratio: "2:3" }), `input.aspect_ratio: must be one of "16:9", "9:16", "1:1", "4:3", "3:4", "21:9"`],
    [body({ mode: "crazy" }), `input.mode: must be one of "normal", "fun", "spicy"`],
    [body({ seed: 1 }), "input.seed: is not a known field"],
    [body({}, "vendor7-imagine/image-to-video"), "model: must be one of vendor7-imagine/text-to-video"],
    [{ ...body({}), extra: 1 }, "extra: is not a known field"]
  ])("refuses %j", (body, message) => {
    invalid(Request, body, message.split(/[: ]/)[0]!, message)
  })
})

{
  const { prompt } = priceSample
  describePrices(vendor7, [
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
    [
      "vendor7 720p 10 s",
      "vendor7/text-to-video",
      "vendor7-imagine/text-to-video",
      { prompt, duration: "10" },
      700_000
    ],
    [
      "vendor7 720p 15 s",
      "vendor7/text-to-video",
      "vendor7-imagine/text-to-video",
      { prompt, duration: "15", mode: "fun" },
      1_050_000
    ]
  ])
}
