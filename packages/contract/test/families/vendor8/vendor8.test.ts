import { describe, expect, it } from "@effect/vitest"
import type { Schema } from "effect"
import { vendor8 } from "../../../src/families/vendor8/index.js"
import {
  Vendor8ImageToVideoRequest as ImageToVideo,
  Vendor8TextToVideoRequest as TextToVideo,
  Vendor8VideoToVideoRequest as VideoToVideo
} from "../../../src/families/vendor8/requests.js"
import { describePrices, invalid, priceSample, valid } from "../../helpers.js"

const image = "https://example.com/a.png"
const video = (i: number) => `https://example.com/v-${i}.mp4`
const refuse = <A, I>(schema: Schema.Schema<A, I>) => (body: unknown, message: string) => {
  invalid(schema, body, message.split(/[: ]/)[0]!, message)
}

describe("vendor8/text-to-video", () => {
  it.each(["vendor8/2-6-text-to-video"])("accepts a minimal request for %s and fills defaults", (model) => {
    expect(valid(TextToVideo, { model, input: { prompt: "a cat" } }))
      .toEqual({ model, input: { prompt: "a cat", duration: "5", resolution: "1080p" } })
  })

  it.each([["10", "720p"], ["15", "1080p"]])("keeps duration %s and resolution %s", (duration, resolution) => {
    const input = { prompt: "p", duration, resolution }
    expect(valid(TextToVideo, { model: "vendor8/2-6-text-to-video", input }).input).toEqual(input)
  })

  const body = (input: Record<string, unknown>, model = "vendor8/2-6-text-to-video") => ({
    model,
    input: { prompt: "p", ...input }
  })

  it.each([
    [{ model: "vendor8/2-6-text-to-video", input: {} }, "input.prompt is required"],
    [body({ prompt: "   " }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [body({ prompt: "x".repeat(10_001) }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [body({ duration: 5 }), `input.duration: must be one of "5", "10", "15"`],
    [body({ duration: "6" }), `input.duration: must be one of "5", "10", "15"`],
    [body({ resolution: "480p" }), `input.resolution: must be one of "720p", "1080p"`],
    [body({ image_urls: [image] }), "input.image_urls: is not a known field"],
    [body({}, "vendor8/2-6-image-to-video"), "model: must be one of vendor8/2-6-text-to-video for this endpoint"],
    [{ ...body({}), extra: 1 }, "extra: is not a known field"]
  ])("refuses %j", refuse(TextToVideo))
})

describe("vendor8/image-to-video", () => {
  it.each(["vendor8/2-6-image-to-video"])("accepts a minimal request for %s and fills defaults", (model) => {
    expect(valid(ImageToVideo, { model, input: { prompt: "a cat", image_urls: [image] } }))
      .toEqual({ model, input: { prompt: "a cat", image_urls: [image], duration: "5", resolution: "1080p" } })
  })

  it("keeps given values", () => {
    const input = { prompt: "p", image_urls: [image], duration: "15", resolution: "720p" }
    expect(valid(ImageToVideo, { model: "vendor8/2-6-image-to-video", input }).input).toEqual(input)
  })

  const body = (input: Record<string, unknown>, model = "vendor8/2-6-image-to-video") => ({
    model,
    input: { prompt: "p", image_urls: [image], ...input }
  })

  it.each([
    [{ model: "vendor8/2-6-image-to-video", input: { image_urls: [image] } }, "input.prompt is required"],
    [body({ prompt: "" }), "input.prompt: must be a non-empty string"],
    [{ model: "vendor8/2-6-image-to-video", input: { prompt: "p" } }, "input.image_urls is required"],
    [body({ image_urls: [] }), "input.image_urls: must contain exactly one URL"],
    [body({ image_urls: [image, image] }), "input.image_urls: must contain exactly one URL"],
    [body({ image_urls: image }), "input.image_urls: must be an array"],
    [body({ image_urls: ["data:image/png;base64,AAAA"] }), "input.image_urls[0]: must be an absolute http(s) URL"],
    [
      body({ image_urls: ["http://127.0.0.1/a.mp4"] }),
      "input.image_urls[0]: address 127.0.0.1 is not a public address"
    ],
    [body({ image_urls: ["http://[::1]/x"] }), "input.image_urls[0]: address ::1 is not a public address"],
    [body({ image_urls: ["http://169.254.169.254/"] }), "input.image_urls[0]: address 169.254.169.254"],
    [body({ image_urls: ["http://localhost/a.png"] }), "input.image_urls[0]: host localhost is not a public host"],
    [body({ duration: 10 }), `input.duration: must be one of "5", "10", "15"`],
    [body({ duration: "20" }), `input.duration: must be one of "5", "10", "15"`],
    [body({ resolution: "4k" }), `input.resolution: must be one of "720p", "1080p"`],
    [body({ image_url: image }), "input.image_url: is not a known field"],
    [body({}, "vendor8/2-6-text-to-video"), "model: must be one of vendor8/2-6-image-to-video for this endpoint"],
    [{ ...body({}), extra: 1 }, "extra: is not a known field"]
  ])("refuses %j", refuse(ImageToVideo))
})

describe("vendor8/video-to-video", () => {
  it.each(["vendor8/2-6-video-to-video"])("accepts a minimal request for %s and fills defaults", (model) => {
    expect(valid(VideoToVideo, { model, input: { prompt: "a cat", video_urls: [video(1)] } }))
      .toEqual({ model, input: { prompt: "a cat", video_urls: [video(1)], duration: "5", resolution: "1080p" } })
  })

  it("keeps given values (3 videos)", () => {
    const input = { prompt: "p", video_urls: [video(1), video(2), video(3)], duration: "10", resolution: "720p" }
    expect(valid(VideoToVideo, { model: "vendor8/2-6-video-to-video", input }).input).toEqual(input)
  })

  const body = (input: Record<string, unknown>, model = "vendor8/2-6-video-to-video") => ({
    model,
    input: { prompt: "p", video_urls: [video(1)], ...input }
  })

  it.each([
    [{ model: "vendor8/2-6-video-to-video", input: { video_urls: [video(1)] } }, "input.prompt is required"],
    [body({ prompt: "x".repeat(10_001) }), "input.prompt: must be a non-empty string of at most 10000 characters"],
    [{ model: "vendor8/2-6-video-to-video", input: { prompt: "p" } }, "input.video_urls is required"],
    [body({ video_urls: [] }), "input.video_urls: must contain 1 to 3 URLs"],
    [body({ video_urls: [1, 2, 3, 4].map(video) }), "input.video_urls: must contain 1 to 3 URLs"],
    [body({ video_urls: video(1) }), "input.video_urls: must be an array"],
    [
      body({ video_urls: [video(1), "http://127.0.0.1/a.mp4"] }),
      "input.video_urls[1]: address 127.0.0.1 is not a public"
    ],
    [body({ video_urls: ["http://[::1]/x"] }), "input.video_urls[0]: address ::1 is not a public address"],
    [body({ video_urls: ["http://169.254.169.254/"] }), "input.video_urls[0]: address 169.254.169.254"],
    [body({ video_urls: ["file:///etc/passwd"] }), "input.video_urls[0]: must be an absolute http(s) URL"],
    [body({ duration: 5 }), `input.duration: must be one of "5", "10"`],
    [body({ duration: "15" }), `input.duration: must be one of "5", "10"`],
    [body({ resolution: "480p" }), `input.resolution: must be one of "720p", "1080p"`],
    [body({ image_urls: [image] }), "input.image_urls: is not a known field"],
    [body({}, "vendor8/2-6-image-to-video"), "model: must be one of vendor8/2-6-video-to-video for this endpoint"],
    [{ ...body({}), extra: 1 }, "extra: is not a known field"]
  ])("refuses %j", refuse(VideoToVideo))
})

{
  const { image, prompt, video } = priceSample
  describePrices(vendor8, [
    // vendor8: 720p 0.10, 1080p 0.15 per second; durations "5" (default), "10", "15" (video-to-video: "5", "10")
    [
      "vendor8 t2v 720p 5 s",
      "vendor8/text-to-video",
      "vendor8/2-6-text-to-video",
      { prompt, resolution: "720p" },
      500_000
    ],
    [
      "vendor8 t2v 720p 10 s",
      "vendor8/text-to-video",
      "vendor8/2-6-text-to-video",
      { prompt, resolution: "720p", duration: "10" },
      1_000_000
    ],
    [
      "vendor8 t2v 720p 15 s",
      "vendor8/text-to-video",
      "vendor8/2-6-text-to-video",
      { prompt, resolution: "720p", duration: "15" },
      1_500_000
    ],
    ["vendor8 t2v 1080p 5 s (defaults)", "vendor8/text-to-video", "vendor8/2-6-text-to-video", { prompt }, 750_000],
    [
      "vendor8 t2v 1080p 10 s",
      "vendor8/text-to-video",
      "vendor8/2-6-text-to-video",
      { prompt, duration: "10" },
      1_500_000
    ],
    [
      "vendor8 t2v 1080p 15 s",
      "vendor8/text-to-video",
      "vendor8/2-6-text-to-video",
      { prompt, duration: "15" },
      2_250_000
    ],
    [
      "vendor8 i2v 720p 5 s",
      "vendor8/image-to-video",
      "vendor8/2-6-image-to-video",
      { prompt, image_urls: [image], resolution: "720p" },
      500_000
    ],
    [
      "vendor8 i2v 720p 15 s",
      "vendor8/image-to-video",
      "vendor8/2-6-image-to-video",
      { prompt, image_urls: [image], resolution: "720p", duration: "15" },
      1_500_000
    ],
    [
      "vendor8 i2v 1080p 10 s",
      "vendor8/image-to-video",
      "vendor8/2-6-image-to-video",
      { prompt, image_urls: [image], duration: "10" },
      1_500_000
    ],
    [
      "vendor8 i2v 1080p 15 s",
      "vendor8/image-to-video",
      "vendor8/2-6-image-to-video",
      { prompt, image_urls: [image], duration: "15" },
      2_250_000
    ],
    [
      "vendor8 v2v 720p 10 s",
      "vendor8/video-to-video",
      "vendor8/2-6-video-to-video",
      { prompt, video_urls: [video], resolution: "720p", duration: "10" },
      1_000_000
    ],
    [
      "vendor8 v2v 1080p 5 s (defaults)",
      "vendor8/video-to-video",
      "vendor8/2-6-video-to-video",
      { prompt, video_urls: [video, video] },
      750_000
    ]
  ])
}
