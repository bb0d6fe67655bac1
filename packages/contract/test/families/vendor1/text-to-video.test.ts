/** The vendor1/text-to-video request: its defaults per model, the values it keeps and what it refuses. */
import { describe, expect, it } from "@effect/vitest"
import { Vendor1TextToVideoRequest as TextToVideo } from "../../../src/families/vendor1/requests.js"
import { valid } from "../../helpers.js"
import { img, refusals } from "./support.js"

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
