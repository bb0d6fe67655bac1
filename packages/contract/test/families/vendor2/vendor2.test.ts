import { describe, expect, it } from "@effect/vitest"
import { vendor2 } from "../../../src/families/vendor2/index.js"
import {
  Vendor2ImageToVideoRequest as ImageToVideo,
  Vendor2TextToVideoRequest as TextToVideo
} from "../../../src/families/vendor2/requests.js"
import { describePrices, invalid, pngDataUri, priceSample, valid } from "../../helpers.js"

const image = "https://example.com/start.png"
const tail = "https://example.com/end.png"
const defaults = { duration: 5, aspect_ratio: "16:9", mode: "std", sound: "off" }
const models = ["vendor2-v3", "vendor2-v2-6"] as const

const segments = [
  { index: 1, prompt: "a wide shot of a harbour", duration: 3 },
  { index: 2, prompt: "a close-up of a boat", duration: 4 },
  { index: 3, prompt: "the boat leaves", duration: 3 }
]

/** A full V3 multi-shot input (image-to-video fields excluded). */
const fullV3 = {
  prompt: "a harbour at dawn",
  negative_prompt: "blur",
  duration: 10,
  aspect_ratio: "9:16",
  mode: "pro",
  sound: "on",
  multi_shot: "true",
  multi_prompt: segments,
  element_list: [{ element_id: 1 }, { element_id: 42 }],
  voice_list: [{ voice_id: "voice-1", text: "Good morning" }]
}

describe("vendor2/image-to-video", () => {
  it.each(models)("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(ImageToVideo, { model, input: { image } })
    expect(out).toEqual({ model, input: { image, ...defaults } })
  })

  it("accepts a full V3 multi-shot request unchanged", () => {
    const input = { image, image_tail: tail, ...fullV3 }
    const body = { model: "vendor2-v3", input, webhookUrl: "https://example.com/hook", metadata: { a: 1 } }
    expect(valid(ImageToVideo, body)).toEqual(body)
  })

  it("takes the sum of the segment durations as duration when duration is absent", () => {
    const input = { image, multi_shot: "true", multi_prompt: segments }
    expect(valid(ImageToVideo, { model: "vendor2-v3", input }).input).toEqual({ ...input, ...defaults, duration: 10 })
  })

  it("keeps the default duration when some segments have no duration", () => {
    const multi_prompt = [{ index: 1, prompt: "a", duration: 2 }, { index: 2, prompt: "b" }]
    const input = { image, multi_shot: "true", multi_prompt }
    expect(valid(ImageToVideo, { model: "vendor2-v3", input }).input.duration).toBe(5)
  })

  it.each([
    ["vendor2-v3", { image_tail: tail }],
    ["vendor2-v3", { image_tail: tail, mode: "pro" }],
    ["vendor2-v2-6", { image_tail: tail, mode: "pro", duration: 10 }],
    ["vendor2-v2-6", { sound: "on", voice_list: [{ voice_id: "v", text: "hi" }] }],
    ["vendor2-v3", { multi_shot: "intelligence", duration: 15 }],
    ["vendor2-v3", { duration: 3 }]
  ])("accepts %s with %j", (model, extra) => {
    const input = { image, ...extra }
    expect(valid(ImageToVideo, { model, input }).input).toEqual({ ...defaults, ...input })
  })

  it.each([
    // body, model and unknown fields
    [{ model: "vendor2-v4", input: { image } }, "model: must be one of vendor2-v3, vendor2-v2-6"],
    [{ model: "vendor3-3", input: { image } }, "model: must be one of vendor2-v3, vendor2-v2-6"],
    [{ model: "vendor2-v3", input: { image, colour: "red" } }, "input.colour: is not a known field"],
    [{ model: "vendor2-v3", input: { image }, extra: 1 }, "extra: is not a known field"],
    // image, image_tail
    [{ model: "vendor2-v3", input: {} }, "input.image is required"],
    [{ model: "vendor2-v3", input: { image: pngDataUri(512, 512) } }, "input.image: must be an absolute http(s) URL"],
    [{ model: "vendor2-v3", input: { image: "ftp://example.com/a.png" } }, "input.image: must be an absolute http(s)"],
    [{ model: "vendor2-v3", input: { image: "http://127.0.0.1/a.png" } }, "input.image: address 127.0.0.1"],
    [{ model: "vendor2-v3", input: { image, image_tail: "not a url" } }, "input.image_tail: must be an absolute"],
    [
      { model: "vendor2-v2-6", input: { image, image_tail: tail } },
      "input.image_tail: is not supported by model vendor2-v2-6 in mode \"std\""
    ],
    [
      { model: "vendor2-v2-6", input: { image, image_tail: tail, mode: "std" } },
      "input.image_tail: is not supported by model vendor2-v2-6 in mode \"std\""
    ],
    // prompt, negative_prompt
    [{ model: "vendor2-v3", input: { image, prompt: "  " } }, "input.prompt: must be a non-empty string"],
    [{ model: "vendor2-v3", input: { image, prompt: "p".repeat(10_001) } }, "input.prompt: must be a non-empty string"],
    [{ model: "vendor2-v3", input: { image, negative_prompt: "n".repeat(10_001) } }, "input.negative_prompt: must be"],
    [{ model: "vendor2-v3", input: { image, negative_prompt: 1 } }, "input.negative_prompt: must be a string"],
    // duration
    [{ model: "vendor2-v3", input: { image, duration: 2 } }, "input.duration: must be an integer from 3 to 15"],
    [{ model: "vendor2-v3", input: { image, duration: 16 } }, "input.duration: must be an integer from 3 to 15"],
    [{ model: "vendor2-v3", input: { image, duration: 5.5 } }, "input.duration: must be an integer from 3 to 15"],
    [{ model: "vendor2-v3", input: { image, duration: "5" } }, "input.duration: must be an integer from 3 to 15"],
    [
      { model: "vendor2-v2-6", input: { image, duration: 7 } },
      "input.duration: must be 5 or 10 for model vendor2-v2-6"
    ],
    [
      { model: "vendor2-v2-6", input: { image, duration: 15 } },
      "input.duration: must be 5 or 10 for model vendor2-v2-6"
    ],
    // aspect_ratio, mode, sound
    [{ model: "vendor2-v3", input: { image, aspect_ratio: "4:3" } }, "input.aspect_ratio: must be one of \"16:9\""],
    [{ model: "vendor2-v3", input: { image, mode: "max" } }, "input.mode: must be one of \"std\", \"pro\""],
    [{ model: "vendor2-v3", input: { image, sound: true } }, "input.sound: must be one of \"on\", \"off\""],
    // multi_shot
    [
      { model: "vendor2-v2-6", input: { image, multi_shot: "intelligence" } },
      "input.multi_shot: is not supported by model vendor2-v2-6"
    ],
    [{ model: "vendor2-v3", input: { image, multi_shot: true } }, "input.multi_shot: must be one of \"true\""],
    [{ model: "vendor2-v3", input: { image, multi_shot: "manual" } }, "input.multi_shot: must be one of"],
    // multi_prompt
    [
      { model: "vendor2-v2-6", input: { image, multi_shot: "true", multi_prompt: segments } },
      "input.multi_shot: is not supported by model vendor2-v2-6"
    ],
    [
      { model: "vendor2-v2-6", input: { image, multi_prompt: segments } },
      "input.multi_prompt: is not supported by model vendor2-v2-6"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_prompt: segments } },
      "input.multi_prompt: requires multi_shot \"true\""
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "intelligence", multi_prompt: segments } },
      "input.multi_prompt: requires multi_shot \"true\""
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true" } },
      "input.multi_prompt: is required when multi_shot is \"true\""
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: [] } },
      "input.multi_prompt: must contain 1 to 6"
    ],
    [
      {
        model: "vendor2-v3",
        input: {
          image,
          multi_shot: "true",
          multi_prompt: [1, 2, 3, 4, 5, 6, 7].map((index) => ({ index, prompt: "p" }))
        }
      },
      "input.multi_prompt: must contain 1 to 6 segments"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: "p" } },
      "input.multi_prompt: must be an array"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: ["p"] } },
      "input.multi_prompt[0]: must be an object"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: [{ prompt: "p" }] } },
      "input.multi_prompt[0].index is required"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: [{ index: 1.5, prompt: "p" }] } },
      "input.multi_prompt[0].index: must be a positive integer"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: [{ index: 2, prompt: "p" }] } },
      "input.multi_prompt[0].index: must be 1 (indexes are consecutive from 1)"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, multi_shot: "true", multi_prompt: [{ index: 1, prompt: "a" }, { index: 3, prompt: "b" }] }
      },
      "input.multi_prompt[1].index: must be 2 (indexes are consecutive from 1)"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, multi_shot: "true", multi_prompt: [{ index: 2, prompt: "a" }, { index: 1, prompt: "b" }] }
      },
      "input.multi_prompt[0].index: must be 1 (indexes are consecutive from 1)"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: [{ index: 1 }] } },
      "input.multi_prompt[0].prompt is required"
    ],
    [
      { model: "vendor2-v3", input: { image, multi_shot: "true", multi_prompt: [{ index: 1, prompt: 7 }] } },
      "input.multi_prompt[0].prompt: must be a non-empty string"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, multi_shot: "true", multi_prompt: [{ index: 1, prompt: "p", duration: 2.5 }] }
      },
      "input.multi_prompt[0].duration: must be an integer from 1 to 15"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, multi_shot: "true", multi_prompt: [{ index: 1, prompt: "p", duration: 0 }] }
      },
      "input.multi_prompt[0].duration: must be an integer from 1 to 15"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, multi_shot: "true", multi_prompt: [{ index: 1, prompt: "p", camera: "pan" }] }
      },
      "input.multi_prompt[0].camera: is not a known field"
    ],
    [
      { model: "vendor2-v3", input: { image, duration: 12, multi_shot: "true", multi_prompt: segments } },
      "input.multi_prompt: segment durations must sum to duration (12 s), got 10 s"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, multi_shot: "true", multi_prompt: [{ index: 1, prompt: "a", duration: 2 }] }
      },
      "input.multi_prompt: segment durations must sum to 3 to 15 s for model vendor2-v3"
    ],
    [
      {
        model: "vendor2-v3",
        input: {
          image,
          multi_shot: "true",
          multi_prompt: [{ index: 1, prompt: "a", duration: 10 }, { index: 2, prompt: "b", duration: 6 }]
        }
      },
      "input.multi_prompt: segment durations must sum to 3 to 15 s for model vendor2-v3"
    ],
    [
      {
        model: "vendor2-v3",
        input: {
          image,
          multi_shot: "true",
          multi_prompt: [{ index: 1, prompt: "a", duration: 5 }, { index: 2, prompt: "b" }]
        }
      },
      "input.multi_prompt: segment durations (5 s) must leave at least 1 s for each of the 1 segments"
    ],
    // element_list
    [
      { model: "vendor2-v2-6", input: { image, element_list: [{ element_id: 1 }] } },
      "input.element_list: is not supported by model vendor2-v2-6"
    ],
    [{ model: "vendor2-v3", input: { image, element_list: [] } }, "input.element_list: must contain 1 to 4 elements"],
    [
      { model: "vendor2-v3", input: { image, element_list: [1, 2, 3, 4, 5].map((element_id) => ({ element_id })) } },
      "input.element_list: must contain 1 to 4 elements"
    ],
    [{ model: "vendor2-v3", input: { image, element_list: [{}] } }, "input.element_list[0].element_id is required"],
    [
      { model: "vendor2-v3", input: { image, element_list: [{ element_id: 0 }] } },
      "input.element_list[0].element_id: must be a positive integer"
    ],
    [
      { model: "vendor2-v3", input: { image, element_list: [{ element_id: 1.5 }] } },
      "input.element_list[0].element_id: must be a positive integer"
    ],
    [
      { model: "vendor2-v3", input: { image, element_list: [{ element_id: "1" }] } },
      "input.element_list[0].element_id: must be a positive integer"
    ],
    [
      { model: "vendor2-v3", input: { image, element_list: [{ element_id: 1, name: "x" }] } },
      "input.element_list[0].name: is not a known field"
    ],
    // voice_list
    [
      { model: "vendor2-v3", input: { image, voice_list: [{ voice_id: "v", text: "hi" }] } },
      "input.voice_list: requires sound \"on\""
    ],
    [
      { model: "vendor2-v2-6", input: { image, sound: "off", voice_list: [{ voice_id: "v", text: "hi" }] } },
      "input.voice_list: requires sound \"on\""
    ],
    [
      { model: "vendor2-v3", input: { image, sound: "on", voice_list: [] } },
      "input.voice_list: must contain 1 to 10 voices"
    ],
    [
      {
        model: "vendor2-v3",
        input: { image, sound: "on", voice_list: Array.from({ length: 11 }, () => ({ voice_id: "v", text: "t" })) }
      },
      "input.voice_list: must contain 1 to 10 voices"
    ],
    [
      { model: "vendor2-v3", input: { image, sound: "on", voice_list: [{ text: "t" }] } },
      "input.voice_list[0].voice_id is required"
    ],
    [
      { model: "vendor2-v3", input: { image, sound: "on", voice_list: [{ voice_id: "", text: "t" }] } },
      "input.voice_list[0].voice_id: must be a string of 1 to 200 characters"
    ],
    [
      { model: "vendor2-v3", input: { image, sound: "on", voice_list: [{ voice_id: "v" }] } },
      "input.voice_list[0].text is required"
    ],
    [
      { model: "vendor2-v3", input: { image, sound: "on", voice_list: [{ voice_id: "v", text: " " }] } },
      "input.voice_list[0].text: must be a non-empty string"
    ],
    [
      { model: "vendor2-v3", input: { image, sound: "on", voice_list: [{ voice_id: "v", text: "t", speed: 2 }] } },
      "input.voice_list[0].speed: is not a known field"
    ]
  ])("refuses %j", (body, message) => {
    invalid(ImageToVideo, body, message.split(/[: ]/)[0]!, message)
  })
})

describe("vendor2/text-to-video", () => {
  it.each(models)("accepts a minimal request for %s and fills defaults", (model) => {
    const out = valid(TextToVideo, { model, input: { prompt: "a cat" } })
    expect(out).toEqual({ model, input: { prompt: "a cat", ...defaults } })
  })

  it("accepts a full V3 multi-shot request unchanged", () => {
    expect(valid(TextToVideo, { model: "vendor2-v3", input: fullV3 })).toEqual({ model: "vendor2-v3", input: fullV3 })
  })

  it("takes the sum of the segment durations as duration when duration is absent", () => {
    const input = { prompt: "p", multi_shot: "true", multi_prompt: segments }
    expect(valid(TextToVideo, { model: "vendor2-v3", input }).input).toEqual({ ...input, ...defaults, duration: 10 })
  })

  it("accepts V2.6 pro with sound and voices", () => {
    const input = { prompt: "p", duration: 10, mode: "pro", sound: "on", voice_list: [{ voice_id: "v", text: "t" }] }
    expect(valid(TextToVideo, { model: "vendor2-v2-6", input }).input).toEqual({ ...input, aspect_ratio: "16:9" })
  })

  it.each([
    [{ model: "vendor2-v5", input: { prompt: "p" } }, "model: must be one of vendor2-v3, vendor2-v2-6"],
    [{ model: "vendor2-v3", input: {} }, "input.prompt is required"],
    [{ model: "vendor2-v3", input: { prompt: "" } }, "input.prompt: must be a non-empty string"],
    [{ model: "vendor2-v3", input: { prompt: "p".repeat(10_001) } }, "input.prompt: must be a non-empty string"],
    [{ model: "vendor2-v3", input: { prompt: "p", image } }, "input.image: is not a known field"],
    [{ model: "vendor2-v3", input: { prompt: "p", image_tail: tail } }, "input.image_tail: is not a known field"],
    [{ model: "vendor2-v3", input: { prompt: "p", colour: "red" } }, "input.colour: is not a known field"],
    [{ model: "vendor2-v3", input: { prompt: "p" }, extra: 1 }, "extra: is not a known field"],
    [{ model: "vendor2-v3", input: { prompt: "p", duration: 20 } }, "input.duration: must be an integer from 3 to 15"],
    [
      { model: "vendor2-v2-6", input: { prompt: "p", duration: 3 } },
      "input.duration: must be 5 or 10 for model vendor2-v2-6"
    ],
    [{ model: "vendor2-v3", input: { prompt: "p", aspect_ratio: "21:9" } }, "input.aspect_ratio: must be one of"],
    [{ model: "vendor2-v3", input: { prompt: "p", mode: "fast" } }, "input.mode: must be one of"],
    [{ model: "vendor2-v3", input: { prompt: "p", sound: "loud" } }, "input.sound: must be one of"],
    [
      { model: "vendor2-v2-6", input: { prompt: "p", multi_shot: "true" } },
      "input.multi_shot: is not supported by model vendor2-v2-6"
    ],
    [
      { model: "vendor2-v2-6", input: { prompt: "p", element_list: [{ element_id: 1 }] } },
      "input.element_list: is not supported by model vendor2-v2-6"
    ],
    [{ model: "vendor2-v3", input: { prompt: "p", multi_shot: "true" } }, "input.multi_prompt: is required when"],
    [
      { model: "vendor2-v3", input: { prompt: "p", multi_prompt: segments } },
      "input.multi_prompt: requires multi_shot"
    ],
    [
      { model: "vendor2-v3", input: { prompt: "p", duration: 5, multi_shot: "true", multi_prompt: segments } },
      "input.multi_prompt: segment durations must sum to duration (5 s), got 10 s"
    ],
    [
      {
        model: "vendor2-v3",
        input: { prompt: "p", multi_shot: "true", multi_prompt: [{ index: 1, prompt: "a" }, { index: 1, prompt: "b" }] }
      },
      "input.multi_prompt[1].index: must be 2 (indexes are consecutive from 1)"
    ],
    [
      {
        model: "vendor2-v3",
        input: { prompt: "p", multi_shot: "true", multi_prompt: [{ index: 1, prompt: "a", x: 1 }] }
      },
      "input.multi_prompt[0].x: is not a known field"
    ],
    [
      { model: "vendor2-v3", input: { prompt: "p", element_list: [{ element_id: -1 }] } },
      "input.element_list[0].element_id: must be a positive integer"
    ],
    [
      { model: "vendor2-v2-6", input: { prompt: "p", voice_list: [{ voice_id: "v", text: "t" }] } },
      "input.voice_list: requires sound \"on\""
    ]
  ])("refuses %j", (body, message) => {
    invalid(TextToVideo, body, message.split(/[: ]/)[0]!, message)
  })
})

{
  const { image, prompt } = priceSample
  describePrices(vendor2, [
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
    ]
  ])
}
