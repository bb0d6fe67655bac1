/**
 * The mapping module: its checks of a channel's model mappings, and its defaults and expressions on the way in and
 * out.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Mapping from "../src/Mapping.js"

describe("model mapping", () => {
  it("names the model and the expression that does not compile, and models the channel does not serve", () => {
    expect(Mapping.problem({ "m-1": { target: "x", input: "{ \"a\": " } }, () => true)).toMatch(
      /^settings\.mapping\.m-1\.input: the input mapping of model m-1 does not compile: /
    )
    expect(Mapping.problem({ "m-1": { target: "x", output: "images[0].url" } }, () => true)).toBeUndefined()
    expect(Mapping.problem({ "m-2": { target: "x" } }, (model) => model === "m-1")).toBe(
      "settings.mapping.m-2: the channel does not serve model m-2"
    )
  })

  it("finds every file URL of an output by default, with what it says of the files", () => {
    expect(Mapping.findFiles({
      images: [{ url: "https://cdn.fal.media/a.png", content_type: "image/png", width: 8, height: 8, file_size: 99 }],
      video: { url: "https://cdn.fal.media/b.mp4" },
      prompt: "https://not-an-output.example/x.png",
      output: ["https://replicate.delivery/c.webp", "data:image/png;base64,AAAA", "plain text"]
    })).toEqual([
      { url: "https://cdn.fal.media/a.png", contentType: "image/png", sizeBytes: 99, width: 8, height: 8 },
      { url: "https://cdn.fal.media/b.mp4" },
      { url: "https://replicate.delivery/c.webp" },
      { url: "data:image/png;base64,AAAA" }
    ])
  })

  it.effect("applies input and output expressions, and refuses an output that names no file", () =>
    Effect.gen(function*() {
      const compiled = Mapping.compile({
        m: { target: "t", input: `{ "text": input.prompt, "model": $target, "id": $task_id }`, output: "data.url" },
        bad: { target: "t", output: `"not a url"` }
      })
      expect(
        yield* Mapping.mapInput(compiled("m"), { model: "m", input: { prompt: "p" }, taskId: "task_1", metadata: {} })
      )
        .toEqual({ text: "p", model: "t", id: "task_1" })
      expect(
        yield* Mapping.mapOutput(compiled("m"), "m", {
          data: [{ url: "https://x.example/1.png" }, { url: "https://x.example/2.png" }]
        })
      )
        .toEqual([{ url: "https://x.example/1.png" }, { url: "https://x.example/2.png" }])
      const refused = yield* Effect.flip(Mapping.mapOutput(compiled("bad"), "bad", {}))
      expect(refused).toMatchObject({ retryable: false, kind: "refused" })
      // without an entry: our model id is the target, the input goes unchanged
      expect(compiled("other").target).toBe("other")
      expect(yield* Mapping.mapInput(compiled("other"), { model: "other", input: { a: 1 }, taskId: "t", metadata: {} }))
        .toEqual({ a: 1 })
      expect(Option.isNone(Option.fromNullable(compiled("other").input))).toBe(true)
    }))
})
