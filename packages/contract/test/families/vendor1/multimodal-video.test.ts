/** The vendor1/multimodal-video request (vendor1-2): its defaults, the values it keeps and what it refuses. */
import { describe, expect, it } from "@effect/vitest"
import { Vendor1MultimodalVideoRequest as Multimodal } from "../../../src/families/vendor1/requests.js"
import { invalid, pngDataUri, valid } from "../../helpers.js"
import { img, img2, refusals } from "./support.js"

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
