import { describe, expect, it } from "@effect/vitest"
import { Vendor7TextToVideoRequest as Request } from "../../src/inputs/vendor7.js"
import { invalid, valid } from "../helpers.js"

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
