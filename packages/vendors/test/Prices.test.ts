import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { type Catalog, Generation, Pricing } from "@mediagate/contract"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import {
  defaultPrices,
  loadPriceFile,
  mergePrices,
  parsePriceFile,
  price,
  PriceBook,
  PriceFileError,
  PriceOverride,
  PriceTable
} from "../src/Prices.js"

/** A raw body decoded (validated and normalized) by the contract's request Schema, as the API would. */
const decode = (endpoint: Catalog.EndpointKey, model: string, input: Record<string, unknown>) =>
  Schema.decodeUnknownSync(Generation.requestSchema(endpoint))({ model, input })

const prompt = "a lighthouse at dusk"
const image = "https://example.com/first.png"

describe("price: the default table (decisions.md §4)", () => {
  it("the default table is a valid PriceTable and round-trips as JSON", () => {
    const json: unknown = JSON.parse(JSON.stringify(defaultPrices))
    expect(Schema.decodeUnknownSync(PriceTable, { onExcessProperty: "error" })(json)).toEqual(defaultPrices)
  })

  it("reads the input as stored (normalized) without the Schema, duration as number or string", () => {
    expect(price("vendor7/text-to-video", {
      model: "vendor7-imagine/text-to-video",
      input: { prompt, duration: "15", resolution: "480p" }
    })).toBe(750_000)
    expect(price("vendor8/text-to-video", { model: "vendor8/2-6-text-to-video", input: { prompt, duration: 10 } }))
      .toBe(1_500_000)
    expect(price("vendor2/text-to-video", { model: "vendor2-v2-6", input: { prompt, duration: 10, sound: "on" } }))
      .toBe(840_000)
  })

  it("refuses a model of another endpoint and a value without a price", () => {
    expect(() => price("vendor3/text-to-video", { model: "vendor4-4-0", input: { prompt } }))
      .toThrow(Pricing.UnpriceableRequestError)
    expect(() => price("vendor6/image-to-image", { model: "vendor6-2", input: { prompt, resolution: "8K" } }))
      .toThrow(/input\.resolution "8K" has no price/)
    expect(() => price("vendor1/text-to-video", { model: "vendor1-1-0-pro", input: { prompt } }))
      .toThrow(/input\.duration is missing/)
    expect(() => price("vendor2/text-to-video", { model: "vendor2-v2-6", input: { prompt, duration: 7 } }))
      .toThrow(/input\.duration 7 has no price/)
  })
})

describe("exact arithmetic", () => {
  it("has no float drift on per-second prices", () => {
    // 0.1 × 3 and 0.07 × 3 are not exact in binary floating point
    const table = mergePrices(defaultPrices, { "vendor8/2-6-text-to-video": { perSecond: { "720p": 0.1 } } })
    const request = { model: "vendor8/2-6-text-to-video", input: { duration: 3, resolution: "720p" } }
    expect(price("vendor8/text-to-video", request, table)).toBe(300_000)
    expect(price("vendor7/text-to-video", { model: "vendor7-imagine/text-to-video", input: { duration: 3 } }))
      .toBe(210_000)
  })

  it("rounds an off_peak half micro-dollar up, and a multiplier exactly", () => {
    const table = mergePrices(defaultPrices, {
      "vendor5q3-pro": { perSecond: { "720p": 0.000003 } },
      "vendor2-v2-6": { perVideo: { std: { "5": 0.333333 } }, soundMultiplier: 1.5 }
    })
    // 3 micro-dollars × 0.5 = 1.5 → 2
    expect(price("vendor5/text-to-video", { model: "vendor5q3-pro", input: { duration: 1, off_peak: true } }, table))
      .toBe(2)
    // 333333 × 1.5 = 499999.5 → 500000
    expect(price("vendor2/text-to-video", { model: "vendor2-v2-6", input: { sound: "on" } }, table)).toBe(500_000)
  })
})

describe("mergePrices", () => {
  it("merges to the leaves: a partial override keeps every other default", () => {
    const merged = mergePrices(defaultPrices, {
      "vendor1-2": { perSecond: { "1080p": 0.6 } },
      "vendor5q3-pro": { offPeakFactor: 0.25 },
      "vendor3-3": { perRequest: 2 }
    })
    expect(merged["vendor1-2"]).toEqual({
      perSecond: { "480p": 0.095, "720p": 0.205, "1080p": 0.6 },
      videoReferencePerSecond: defaultPrices["vendor1-2"].videoReferencePerSecond
    })
    expect(merged["vendor5q3-pro"]).toEqual({ ...defaultPrices["vendor5q3-pro"], offPeakFactor: 0.25 })
    expect(merged["vendor3-3"]).toEqual({ perRequest: 2 })
    expect(merged["vendor3-3_fast"]).toBe(defaultPrices["vendor3-3_fast"])
    expect(defaultPrices["vendor1-2"].perSecond["1080p"]).toBe(0.51)
  })

  it("an empty override is the base", () => {
    expect(mergePrices(defaultPrices, {})).toEqual(defaultPrices)
  })
})

const tempDir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "mediagate-prices-"))
afterAll(() => fs.rmSync(tempDir, { recursive: true, force: true }))
const writeFile = (name: string, content: string): string => {
  const file = nodePath.join(tempDir, name)
  fs.writeFileSync(file, content)
  return file
}

describe("loadPriceFile", () => {
  it.effect("merges a partial file over the defaults", () =>
    Effect.gen(function*() {
      const file = writeFile(
        "partial.json",
        JSON.stringify({
          "vendor1-2": { perSecond: { "720p": 0.3 } },
          "vendor6-2": { perImage: { "4K": 0.2 } },
          "vendor5q3-turbo": { isRecCredits: 20, creditPrice: 0.01 }
        })
      )
      const table = yield* loadPriceFile(file)
      expect(table["vendor1-2"].perSecond).toEqual({ "480p": 0.095, "720p": 0.3, "1080p": 0.51 })
      expect(price("vendor1/multimodal-video", decode("vendor1/multimodal-video", "vendor1-2", { prompt }), table))
        .toBe(1_500_000)
      const fourK = decode("vendor6/image-to-image", "vendor6-2", { prompt, resolution: "4K" })
      expect(price("vendor6/image-to-image", fourK, table)).toBe(200_000)
      expect(price("vendor6/image-to-image", decode("vendor6/image-to-image", "vendor6-2", { prompt }), table))
        .toBe(80_000)
      // 0.06 × 5 + 20 × 0.01
      expect(price(
        "vendor5/image-to-video",
        decode("vendor5/image-to-video", "vendor5q3-turbo", { images: [image], is_rec: true }),
        table
      )).toBe(500_000)
      expect(table["vendor4-4-0"]).toEqual(defaultPrices["vendor4-4-0"])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("an empty object gives the defaults", () =>
    Effect.gen(function*() {
      const table = yield* loadPriceFile(writeFile("empty.json", "{}"))
      expect(table).toEqual(defaultPrices)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  const failure = (file: string) => loadPriceFile(file).pipe(Effect.flip, Effect.provide(NodeFileSystem.layer))

  it.effect("a missing file", () =>
    Effect.gen(function*() {
      const file = nodePath.join(tempDir, "absent.json")
      const error = yield* failure(file)
      expect(error).toBeInstanceOf(PriceFileError)
      expect(error._tag).toBe("PriceFileError")
      expect(error.file).toBe(file)
      expect(error.message).toBe(`price file ${file}: not found`)
    }))

  it.effect("invalid JSON", () =>
    Effect.gen(function*() {
      const file = writeFile("broken.json", "{ \"vendor3-3\": ")
      const error = yield* failure(file)
      expect(error.path).toEqual([])
      expect(error.message.startsWith(`price file ${file}: is not valid JSON (`)).toBe(true)
    }))

  it.effect("a negative price names the path", () =>
    Effect.gen(function*() {
      const file = writeFile("negative.json", JSON.stringify({ "vendor1-2": { perSecond: { "480p": -0.1 } } }))
      const error = yield* failure(file)
      expect(error.path).toEqual(["vendor1-2", "perSecond", "480p"])
      expect(error.message).toBe(`price file ${file}: vendor1-2.perSecond.480p: must not be negative (got -0.1)`)
    }))

  it.effect.each(
    [
      [
        "an unknown model",
        { "vendor9-x": { perRequest: 1 } },
        ["vendor9-x"],
        /vendor9-x: is unexpected/
      ],
      [
        "an unknown field",
        { "vendor3-3": { perSecond: 1 } },
        ["vendor3-3", "perSecond"],
        /vendor3-3\.perSecond: is unexpected/
      ],
      [
        "a string price",
        { "vendor4-4-0": { perImage: "0.03" } },
        ["vendor4-4-0", "perImage"],
        /vendor4-4-0\.perImage: Expected number, actual "0\.03"/
      ],
      [
        "more than 6 decimals",
        { "vendor7-imagine/text-to-video": { perSecond: { "480p": 0.0000001 } } },
        ["vendor7-imagine/text-to-video", "perSecond", "480p"],
        /vendor7-imagine\/text-to-video\.perSecond\.480p: must have at most 6 decimals/
      ],
      [
        "an off_peak factor above 1",
        { "vendor5q3-pro": { offPeakFactor: 1.5 } },
        ["vendor5q3-pro", "offPeakFactor"],
        /vendor5q3-pro\.offPeakFactor: must be at most 1 \(got 1\.5\)/
      ],
      [
        "a fractional credit count",
        { "vendor5q3-pro": { isRecCredits: 2.5 } },
        ["vendor5q3-pro", "isRecCredits"],
        /vendor5q3-pro\.isRecCredits: must be an integer number of credits from 0 to 1000000 \(got 2\.5\)/
      ],
      [
        "a negative multiplier",
        { "vendor2-v2-6": { soundMultiplier: -2 } },
        ["vendor2-v2-6", "soundMultiplier"],
        /vendor2-v2-6\.soundMultiplier: must not be negative \(got -2\)/
      ],
      [
        "a missing price map",
        { "vendor1-2": { perSecond: null } },
        ["vendor1-2", "perSecond"],
        /vendor1-2\.perSecond: Expected an object of prices for 480p, 720p, 1080p, actual null/
      ],
      ["not an object", [1, 2], [], /: Expected PriceOverride, actual \[1,2\]/]
    ] as const
  )("refuses %s", ([name, content, path, message]) =>
    Effect.gen(function*() {
      const file = writeFile(`${name.replace(/\W+/g, "-")}.json`, JSON.stringify(content))
      const error = yield* failure(file)
      expect(error.path).toEqual(path)
      expect(error.message.startsWith(`price file ${file}: `)).toBe(true)
      expect(error.message).toMatch(message)
    }))

  it.effect("the example of docs/prices.md is a valid file", () =>
    Effect.gen(function*() {
      const doc = fs.readFileSync(new URL("../../../docs/prices.md", import.meta.url), "utf8")
      const example = /```json\n([\s\S]*?)```/.exec(doc)?.[1] ?? ""
      const table = yield* parsePriceFile("docs/prices.md", example)
      expect(table["vendor1-2"].perSecond).toEqual({ "480p": 0.095, "720p": 0.205, "1080p": 0.55 })
      // 0.75 × 1.8
      const v26 = { model: "vendor2-v2-6", input: { mode: "pro", duration: 10, sound: "on" } }
      expect(price("vendor2/text-to-video", v26, table)).toBe(1_350_000)
      expect(price("vendor5/text-to-video", { model: "vendor5q3-pro", input: { off_peak: true } }, table)).toBe(300_000)
    }))

  it.effect("reports every offending value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parsePriceFile(
        "inline.json",
        JSON.stringify({
          "vendor3-3": { perRequest: -1 },
          "vendor3-3_fast": { perRequest: -2 }
        })
      ))
      expect(error.message).toBe(
        "price file inline.json: vendor3-3.perRequest: must not be negative (got -1); " +
          "vendor3-3_fast.perRequest: must not be negative (got -2)"
      )
    }))
})

describe("PriceOverride", () => {
  it("accepts any part of the table and nothing else", () => {
    const decode = Schema.decodeUnknownEither(PriceOverride, { onExcessProperty: "error" })
    expect(Either.isRight(decode({ "vendor2-v2-6": { perVideo: { pro: { "10": 0.8 } } } }))).toBe(true)
    expect(Either.isLeft(decode({ "vendor2-v2-6": { perVideo: { pro: { "15": 0.8 } } } }))).toBe(true)
    expect(Either.isLeft(decode({ "vendor2-v2-6": { perVideo: 1 } }))).toBe(true)
  })
})

describe("PriceBook", () => {
  it.effect("layer: the defaults, or the given table", () =>
    Effect.gen(function*() {
      expect(yield* PriceBook).toBe(defaultPrices)
      const custom = mergePrices(defaultPrices, { "vendor3-3": { perRequest: 1 } })
      const table = yield* Effect.provide(PriceBook, PriceBook.layer(custom))
      expect(table["vendor3-3"].perRequest).toBe(1)
    }).pipe(Effect.provide(PriceBook.layer())))

  const withConfig = (map: Map<string, string>) =>
    PriceBook.layerConfig.pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(map)))
    )

  it.effect("layerConfig: the defaults without MEDIAGATE_PRICES_FILE", () =>
    Effect.gen(function*() {
      expect(yield* PriceBook).toEqual(defaultPrices)
    }).pipe(Effect.provide(withConfig(new Map()))))

  it.effect("layerConfig: a blank MEDIAGATE_PRICES_FILE counts as unset", () =>
    Effect.gen(function*() {
      expect(yield* PriceBook).toEqual(defaultPrices)
    }).pipe(Effect.provide(withConfig(new Map([["MEDIAGATE_PRICES_FILE", " "]])))))

  it.effect("layerConfig: the file named by MEDIAGATE_PRICES_FILE over the defaults", () =>
    Effect.gen(function*() {
      const file = writeFile("config.json", JSON.stringify({ "vendor3-3_fast": { perRequest: 0.9 } }))
      const table = yield* Effect.provide(PriceBook, withConfig(new Map([["MEDIAGATE_PRICES_FILE", file]])))
      expect(table["vendor3-3_fast"].perRequest).toBe(0.9)
      expect(table["vendor3-3"].perRequest).toBe(3.2)
      expect(price("vendor3/text-to-video", decode("vendor3/text-to-video", "vendor3-3_fast", { prompt }), table))
        .toBe(900_000)
    }))

  it.effect("layerConfig: a bad file fails the layer with PriceFileError", () =>
    Effect.gen(function*() {
      const file = writeFile("config-bad.json", JSON.stringify({ "vendor3-3": { perRequest: -3.2 } }))
      const error = yield* Effect.provide(PriceBook, withConfig(new Map([["MEDIAGATE_PRICES_FILE", file]])))
        .pipe(Effect.flip)
      expect(error).toBeInstanceOf(PriceFileError)
      expect(error.message).toBe(`price file ${file}: vendor3-3.perRequest: must not be negative (got -3.2)`)
    }))
})
