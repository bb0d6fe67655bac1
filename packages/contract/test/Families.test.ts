import { describe, expect, it } from "@effect/vitest"
import { minimalRequests } from "../src/Examples.js"
import { registry } from "../src/families/index.js"
import * as Family from "../src/Family.js"
import { seconds, videoSize } from "../src/Outputs.js"

describe("output geometry", () => {
  it.each([
    ["480p", "16:9", 854, 480],
    ["540p", "16:9", 960, 540],
    ["720p", "16:9", 1280, 720],
    ["1080p", "16:9", 1920, 1080],
    ["720p", "9:16", 720, 1280],
    ["720p", "1:1", 720, 720],
    ["720p", "4:3", 960, 720],
    ["720p", "3:4", 720, 960],
    ["720p", "21:9", 1680, 720],
    ["1080p", "adaptive", 1920, 1080],
    ["1080p", "Auto", 1920, 1080]
  ])("video %s %s is %ix%i", (resolution, ratio, width, height) => {
    expect(videoSize(resolution, ratio)).toEqual({ width, height })
  })

  it("reads durations given as numbers or strings", () => {
    expect([seconds(5, 1), seconds("10", 1), seconds(undefined, 6), seconds("x", 6)]).toEqual([5, 10, 6, 6])
  })

  it("every endpoint and model has outputs and a positive default estimate", () => {
    for (const { body, endpoint } of minimalRequests) {
      const family = Family.familyOf(registry, endpoint)
      const info = Family.findEndpoint(registry, endpoint)
      expect(family?.endpoints).toContain(info)
      const outputs = info?.outputs(body) ?? []
      expect(outputs.length).toBeGreaterThan(0)
      expect(outputs.every((o) => o.width > 0 && o.height > 0 && o.width % 2 === 0 && o.height % 2 === 0)).toBe(true)
      expect(info?.estimateSeconds(body)).toBeGreaterThan(0)
    }
  })
})
