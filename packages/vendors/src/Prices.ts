/**
 * Prices: the operator-overridable price table (decisions.md §4), the price of a validated request in integer
 * micro-dollars, the price file (`MEDIAGATE_PRICES_FILE`, decisions.md §10) and the `PriceBook` service.
 *
 * The table is JSON, keyed by model id, with prices in USD as an operator writes them (at most 6 decimals, i.e.
 * micro-dollar precision, never negative). Every computation converts a USD price to integer micro-dollars first
 * and then multiplies by integers (seconds, credits) or by a factor with exact integer arithmetic, so no float drift
 * reaches a charge. See `docs/prices.md` for the table and the rules.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Catalog, type Generation, Money } from "@mediagate/contract"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

// ---------------------------------------------------------------------------------------------------------------------
// Field Schemas
// ---------------------------------------------------------------------------------------------------------------------

/** Largest price or factor accepted in a table (keeps every product well inside the safe integers). */
const maxAmount = 1_000_000
/** Largest credit count accepted in a table. */
const maxCredits = 1_000_000

/** True when `value` has at most 6 decimals (is a whole number of micro-units). */
const isMicroPrecise = (value: number): boolean => {
  const scaled = value * Money.microsPerDollar
  return Math.abs(scaled - Math.round(scaled)) < 1e-6
}

/** A non-negative decimal of at most 6 decimals, at most `max`. */
const decimal = (noun: string, max: number) =>
  Schema.Number.pipe(
    Schema.filter((value) => {
      if (!Number.isFinite(value)) return `must be a finite ${noun}`
      if (value < 0) return `must not be negative (got ${value})`
      if (value > max) return `must be at most ${max} (got ${value})`
      if (!isMicroPrecise(value)) return `must have at most 6 decimals (got ${value})`
      return true
    }, { jsonSchema: { minimum: 0, maximum: max } })
  )

/** A price in USD: at least 0, at most 6 decimals (a whole number of micro-dollars). */
export const Price = decimal("price in USD", maxAmount).annotations({
  title: "Price",
  description: "Price in USD, at least 0, at most 6 decimals"
})

/** A factor applied to a price (at least 0, at most 6 decimals). */
export const Factor = decimal("factor", maxAmount).annotations({
  title: "Factor",
  description: "Factor applied to a price, at least 0, at most 6 decimals"
})

/** A discount factor: 0 to 1 (0.5 halves the price). */
export const DiscountFactor = decimal("factor", 1).annotations({
  title: "DiscountFactor",
  description: "Factor from 0 to 1 applied to a price (0.5 halves it)"
})

/** A whole number of credits. */
export const Credits = Schema.Number.pipe(
  Schema.filter((value) =>
    (Number.isSafeInteger(value) && value >= 0 && value <= maxCredits) ||
    `must be an integer number of credits from 0 to ${maxCredits} (got ${value})`
  )
).annotations({ title: "Credits" })

/** Prices by resolution, for the resolutions of `keys`. */
const byKey = <const K extends string>(keys: readonly [K, ...Array<K>], description: string) =>
  Schema.Struct(Object.fromEntries(keys.map((key) => [key, Price])) as { readonly [P in K]: typeof Price })
    .annotations({ title: `an object of prices for ${keys.join(", ")}`, description })

const vendor1Resolutions = ["480p", "720p", "1080p"] as const
const vendor5Resolutions = ["540p", "720p", "1080p"] as const
const vendor6Resolutions = ["1K", "2K", "4K"] as const
const vendor7Resolutions = ["480p", "720p"] as const
const vendor8Resolutions = ["720p", "1080p"] as const

/** A vendor1 resolution. */
export type Vendor1Resolution = typeof vendor1Resolutions[number]

const perSecondByResolution = <const K extends string>(keys: readonly [K, ...Array<K>]) =>
  byKey(keys, "USD per second of output, by resolution")

// ---------------------------------------------------------------------------------------------------------------------
// Model entries
// ---------------------------------------------------------------------------------------------------------------------

/** `vendor1-2`: per second by resolution, without and with a video reference. */
export const Vendor1MultimodalPrices = Schema.Struct({
  perSecond: perSecondByResolution(vendor1Resolutions).annotations({
    description: "USD per second of output without reference_video_urls, by resolution"
  }),
  videoReferencePerSecond: perSecondByResolution(vendor1Resolutions).annotations({
    description: "USD per second with reference_video_urls (output seconds at accept, reference seconds when " +
      "measured), by resolution"
  })
}).annotations({ title: "Vendor1MultimodalPrices" })

/** `vendor1-1-5-pro`: per second by resolution, without and with audio (`generate_audio`). */
export const Vendor1AudioPrices = Schema.Struct({
  perSecond: perSecondByResolution(vendor1Resolutions).annotations({
    description: "USD per second with generate_audio false, by resolution"
  }),
  perSecondWithAudio: perSecondByResolution(vendor1Resolutions).annotations({
    description: "USD per second with generate_audio true, by resolution"
  })
}).annotations({ title: "Vendor1AudioPrices" })

/** The vendor1 1.0 series: per second by resolution. */
export const Vendor1Prices = Schema.Struct({
  perSecond: perSecondByResolution(vendor1Resolutions)
}).annotations({ title: "Vendor1Prices" })

const byMode = (description: string) => byKey(["std", "pro"], description)

/** `vendor2-v3`: per second by mode, without and with sound. */
export const Vendor2V3Prices = Schema.Struct({
  perSecond: byMode("USD per second with sound \"off\", by mode"),
  perSecondWithSound: byMode("USD per second with sound \"on\", by mode")
}).annotations({ title: "Vendor2V3Prices" })

const byDuration = byKey(["5", "10"], "USD per video, by duration in seconds")

/** `vendor2-v2-6`: per video by mode and duration; `sound: "on"` multiplies. */
export const Vendor2V26Prices = Schema.Struct({
  perVideo: Schema.Struct({ std: byDuration, pro: byDuration }).annotations({
    description: "USD per video, by mode and duration"
  }),
  soundMultiplier: Factor.annotations({ description: "Factor applied with sound \"on\"" })
}).annotations({ title: "Vendor2V26Prices" })

/** A price per request (vendor3). */
export const PerRequestPrices = Schema.Struct({
  perRequest: Price.annotations({ description: "USD per request" })
}).annotations({ title: "PerRequestPrices" })

/** A price per image (vendor4; one image per request). */
export const PerImagePrices = Schema.Struct({
  perImage: Price.annotations({ description: "USD per image" })
}).annotations({ title: "PerImagePrices" })

/** vendor5 Q3 models: per second by resolution, plus the `off_peak` discount and the `is_rec` surcharge. */
export const Vendor5Prices = Schema.Struct({
  perSecond: perSecondByResolution(vendor5Resolutions),
  offPeakFactor: DiscountFactor.annotations({ description: "Factor applied to the generation price with off_peak" }),
  isRecCredits: Credits.annotations({ description: "Credits added with is_rec" }),
  creditPrice: Price.annotations({ description: "USD per credit" })
}).annotations({ title: "Vendor5Prices" })

/** `vendor6-2`: per image by resolution (search is free). */
export const Vendor6Prices = Schema.Struct({
  perImage: byKey(vendor6Resolutions, "USD per image, by resolution")
}).annotations({ title: "Vendor6Prices" })

/** vendor7: per second of output by resolution. */
export const Vendor7Prices = Schema.Struct({
  perSecond: perSecondByResolution(vendor7Resolutions)
}).annotations({ title: "Vendor7Prices" })

/** vendor8: per second of output by resolution. */
export const Vendor8Prices = Schema.Struct({
  perSecond: perSecondByResolution(vendor8Resolutions)
}).annotations({ title: "Vendor8Prices" })

// ---------------------------------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------------------------------

/** The whole price table: one entry per model id of the catalog. */
export const PriceTable = Schema.Struct({
  "vendor1-2": Vendor1MultimodalPrices,
  "vendor1-1-5-pro": Vendor1AudioPrices,
  "vendor1-1-0-pro": Vendor1Prices,
  "vendor1-1-0-pro-fast": Vendor1Prices,
  "vendor1-1-0-lite-i2v": Vendor1Prices,
  "vendor1-1-0-lite-t2v": Vendor1Prices,
  "vendor2-v3": Vendor2V3Prices,
  "vendor2-v2-6": Vendor2V26Prices,
  "vendor3-3": PerRequestPrices,
  "vendor3-3_fast": PerRequestPrices,
  "vendor4-5-0-lite": PerImagePrices,
  "vendor4-4-5": PerImagePrices,
  "vendor4-4-0": PerImagePrices,
  "vendor4-3-0-t2i": PerImagePrices,
  "vendor5q3-pro": Vendor5Prices,
  "vendor5q3-turbo": Vendor5Prices,
  "vendor6-2": Vendor6Prices,
  "vendor7-imagine/text-to-video": Vendor7Prices,
  "vendor8/2-6-text-to-video": Vendor8Prices,
  "vendor8/2-6-image-to-video": Vendor8Prices,
  "vendor8/2-6-video-to-video": Vendor8Prices
}).annotations({
  title: "PriceTable",
  description: "Prices in USD by model id (decisions.md §4)"
})

/** The whole price table. */
export type PriceTable = typeof PriceTable.Type

/** Every key of the table is a model id of the catalog, and the reverse. */
type MissingModels = Exclude<Catalog.ModelId, keyof PriceTable>
type UnknownModels = Exclude<keyof PriceTable, Catalog.ModelId>
const _everyModelPriced: [MissingModels, UnknownModels] extends [never, never] ? true : never = true
void _everyModelPriced

/** `T` with every field at every depth optional (numbers stay numbers). */
export type DeepPartial<T> = T extends number ? T : { readonly [K in keyof T]?: DeepPartial<T[K]> }

/** An override: any part of the table (some models, some fields of a model, some prices of a field). */
export type PriceOverride = DeepPartial<PriceTable>

/** The same AST with every property at every depth optional (identifiers dropped: it is another Schema). */
const deepPartialAst = (ast: AST.AST): AST.AST => {
  if (!AST.isTypeLiteral(ast)) return ast
  const { [AST.IdentifierAnnotationId]: _identifier, ...annotations } = ast.annotations
  return new AST.TypeLiteral(
    ast.propertySignatures.map((property) =>
      new AST.PropertySignature(
        property.name,
        deepPartialAst(property.type),
        true,
        property.isReadonly,
        property.annotations
      )
    ),
    ast.indexSignatures,
    annotations
  )
}

/** The Schema of a price file: {@link PriceTable} with every field at every depth optional. */
export const PriceOverride: Schema.Schema<PriceOverride> = Schema.make<PriceOverride, PriceOverride, never>(
  deepPartialAst(PriceTable.ast)
).annotations({
  title: "PriceOverride",
  description: "Any part of the price table; what is absent keeps its default"
})

const vendor1 = (p480: number, p720: number, p1080: number) => ({ "480p": p480, "720p": p720, "1080p": p1080 })

const vendor5 = (p540: number, p720: number, p1080: number) => ({
  perSecond: { "540p": p540, "720p": p720, "1080p": p1080 },
  offPeakFactor: 0.5,
  isRecCredits: 10,
  creditPrice: 0.005
})

const vendor8 = { perSecond: { "720p": 0.10, "1080p": 0.15 } }

/** The project's default prices (decisions.md §4), in USD. */
export const defaultPrices: PriceTable = {
  "vendor1-2": {
    perSecond: vendor1(0.095, 0.205, 0.51),
    videoReferencePerSecond: vendor1(0.0575, 0.125, 0.31)
  },
  "vendor1-1-5-pro": {
    perSecond: vendor1(0.012, 0.026, 0.058),
    perSecondWithAudio: vendor1(0.024, 0.052, 0.116)
  },
  "vendor1-1-0-pro": { perSecond: vendor1(0.024, 0.054, 0.122) },
  "vendor1-1-0-pro-fast": { perSecond: vendor1(0.010, 0.022, 0.049) },
  "vendor1-1-0-lite-i2v": { perSecond: vendor1(0.017, 0.039, 0.088) },
  "vendor1-1-0-lite-t2v": { perSecond: vendor1(0.017, 0.039, 0.088) },
  "vendor2-v3": {
    perSecond: { std: 0.084, pro: 0.112 },
    perSecondWithSound: { std: 0.126, pro: 0.168 }
  },
  "vendor2-v2-6": {
    perVideo: { std: { "5": 0.21, "10": 0.42 }, pro: { "5": 0.35, "10": 0.70 } },
    soundMultiplier: 2
  },
  "vendor3-3": { perRequest: 3.20 },
  "vendor3-3_fast": { perRequest: 1.20 },
  "vendor4-5-0-lite": { perImage: 0.04 },
  "vendor4-4-5": { perImage: 0.04 },
  "vendor4-4-0": { perImage: 0.03 },
  "vendor4-3-0-t2i": { perImage: 0.03 },
  "vendor5q3-pro": vendor5(0.07, 0.10, 0.16),
  "vendor5q3-turbo": vendor5(0.04, 0.06, 0.08),
  "vendor6-2": { perImage: { "1K": 0.08, "2K": 0.12, "4K": 0.16 } },
  "vendor7-imagine/text-to-video": { perSecond: { "480p": 0.05, "720p": 0.07 } },
  "vendor8/2-6-text-to-video": vendor8,
  "vendor8/2-6-image-to-video": vendor8,
  "vendor8/2-6-video-to-video": vendor8
}

// ---------------------------------------------------------------------------------------------------------------------
// Merging
// ---------------------------------------------------------------------------------------------------------------------

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const mergeDeep = (base: unknown, override: unknown): unknown => {
  if (override === undefined) return base
  if (!isRecord(base) || !isRecord(override)) return override
  const merged: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(override)) {
    if (value !== undefined) merged[key] = mergeDeep(base[key], value)
  }
  return merged
}

/**
 * `override` over `base`, merged to the leaves: every number given in the override replaces the same number of the
 * base; objects (models, fields, resolution maps) merge key by key at every depth; anything absent keeps the base.
 */
export const mergePrices = (base: PriceTable, override: PriceOverride): PriceTable =>
  mergeDeep(base, override) as PriceTable

// ---------------------------------------------------------------------------------------------------------------------
// Exact arithmetic
// ---------------------------------------------------------------------------------------------------------------------

/** A USD price to integer micro-dollars (exact for the ≤ 6 decimals the Schema allows). */
const micros = (usd: number): number => Money.toMicros(usd)

/** `a × b / c` for non-negative integers, rounded half up, without float drift. */
const mulDivHalfUp = (a: number, b: number, c: number): number => {
  const divisor = BigInt(c)
  return Number((BigInt(a) * BigInt(b) * 2n + divisor) / (2n * divisor))
}

/** Integer micro-dollars times a factor of at most 6 decimals, rounded half up to a micro-dollar. */
const applyFactor = (amountMicros: number, factor: number): number =>
  mulDivHalfUp(amountMicros, Math.round(factor * Money.microsPerDollar), Money.microsPerDollar)

/** A per-second price times whole seconds, in micro-dollars. */
const perSecond = (usdPerSecond: number, seconds: number): number => micros(usdPerSecond) * seconds

// ---------------------------------------------------------------------------------------------------------------------
// Reading a normalized input
// ---------------------------------------------------------------------------------------------------------------------

/** A request the price table cannot price (only possible for an input that skipped validation). */
export class UnpriceableRequestError extends Data.TaggedError("UnpriceableRequestError")<{
  readonly model: string
  readonly message: string
}> {}

const unpriceable = (model: string, detail: string): never => {
  throw new UnpriceableRequestError({ model, message: `cannot price model ${model}: ${detail}` })
}

type Input = Readonly<Record<string, unknown>>

/** The key of `prices` named by `input[field]` (or `fallback` when absent); a number names the key "5" etc. */
const keyOf = <K extends string>(
  model: string,
  input: Input,
  field: string,
  prices: { readonly [P in K]: unknown },
  fallback: K | undefined
): K => {
  const value = input[field] ?? fallback
  const key = typeof value === "number" ? String(value) : value
  if (typeof key === "string" && Object.hasOwn(prices, key)) return key as K
  return unpriceable(
    model,
    `input.${field} ${value === undefined ? "is missing" : `${JSON.stringify(value)} has no price`}`
  )
}

/** The price of `prices` named by `input[field]` (or `fallback` when absent). */
const pick = <K extends string>(
  model: string,
  input: Input,
  field: string,
  prices: { readonly [P in K]: number },
  fallback: K | undefined
): number => prices[keyOf(model, input, field, prices, fallback)]

/** Whole seconds from `input[field]`: an integer or an integer string ("5"), or `fallback` when absent. */
const seconds = (model: string, input: Input, field: string, fallback: number | undefined): number => {
  const value = input[field] ?? fallback
  const number = typeof value === "string" && /^\d{1,6}$/.test(value) ? Number(value) : value
  if (typeof number === "number" && Number.isSafeInteger(number) && number >= 0) return number
  return unpriceable(
    model,
    `input.${field} ${value === undefined ? "is missing" : `${JSON.stringify(value)} is not a whole number of seconds`}`
  )
}

const flag = (input: Input, field: string, fallback: boolean): boolean => {
  const value = input[field]
  return typeof value === "boolean" ? value : fallback
}

const hasItems = (value: unknown): boolean => Array.isArray(value) && value.length > 0

// ---------------------------------------------------------------------------------------------------------------------
// Pricing
// ---------------------------------------------------------------------------------------------------------------------

/**
 * The price charged at accept, in integer micro-dollars, of a validated (normalized) request.
 *
 * The input's defaults are expected to be filled in (the contract's request Schemas do it); an absent field falls
 * back to the same default. A model that does not belong to the endpoint or a value the table has no price for
 * throws {@link UnpriceableRequestError} (a defect: validation refuses such requests first).
 */
export const price = (
  endpoint: Catalog.EndpointKey,
  request: Generation.AnyGenerationRequest,
  table: PriceTable = defaultPrices
): number => {
  const { input, model } = request
  if (!(Catalog.endpoints[endpoint].models as ReadonlyArray<string>).includes(model)) {
    return unpriceable(model, `the model is not offered by endpoint ${endpoint}`)
  }
  const id = model as Catalog.ModelId
  switch (id) {
    case "vendor1-2": {
      const entry = table["vendor1-2"]
      const tier = hasItems(input["reference_video_urls"]) ? entry.videoReferencePerSecond : entry.perSecond
      return perSecond(pick(model, input, "resolution", tier, "720p"), seconds(model, input, "duration", 5))
    }
    case "vendor1-1-5-pro": {
      const entry = table["vendor1-1-5-pro"]
      const tier = flag(input, "generate_audio", true) ? entry.perSecondWithAudio : entry.perSecond
      return perSecond(pick(model, input, "resolution", tier, "720p"), seconds(model, input, "duration", undefined))
    }
    case "vendor1-1-0-pro":
    case "vendor1-1-0-pro-fast":
    case "vendor1-1-0-lite-i2v":
    case "vendor1-1-0-lite-t2v": {
      const entry = table[id]
      const fallback = endpoint === "vendor1/text-to-video" && model !== "vendor1-1-0-lite-t2v" ? "1080p" : "720p"
      return perSecond(
        pick(model, input, "resolution", entry.perSecond, fallback),
        seconds(model, input, "duration", undefined)
      )
    }
    case "vendor2-v3": {
      const entry = table["vendor2-v3"]
      const tier = input["sound"] === "on" ? entry.perSecondWithSound : entry.perSecond
      return perSecond(pick(model, input, "mode", tier, "std"), seconds(model, input, "duration", 5))
    }
    case "vendor2-v2-6": {
      const entry = table["vendor2-v2-6"]
      const byDuration = entry.perVideo[keyOf(model, input, "mode", entry.perVideo, "std")]
      const video = micros(pick(model, input, "duration", byDuration, "5"))
      return input["sound"] === "on" ? applyFactor(video, entry.soundMultiplier) : video
    }
    case "vendor3-3":
    case "vendor3-3_fast":
      return micros(table[id].perRequest)
    case "vendor4-5-0-lite":
    case "vendor4-4-5":
    case "vendor4-4-0":
    case "vendor4-3-0-t2i":
      return micros(table[id].perImage)
    case "vendor5q3-pro":
    case "vendor5q3-turbo": {
      const entry = table[id]
      const generation = perSecond(
        pick(model, input, "resolution", entry.perSecond, "720p"),
        seconds(model, input, "duration", 5)
      )
      const discounted = flag(input, "off_peak", false) ? applyFactor(generation, entry.offPeakFactor) : generation
      const recommendation = flag(input, "is_rec", false) ? entry.isRecCredits * micros(entry.creditPrice) : 0
      return discounted + recommendation
    }
    case "vendor6-2":
      return micros(pick(model, input, "resolution", table["vendor6-2"].perImage, "1K"))
    case "vendor7-imagine/text-to-video": {
      const entry = table["vendor7-imagine/text-to-video"]
      return perSecond(
        pick(model, input, "resolution", entry.perSecond, "720p"),
        seconds(model, input, "duration", 6)
      )
    }
    case "vendor8/2-6-text-to-video":
    case "vendor8/2-6-image-to-video":
    case "vendor8/2-6-video-to-video": {
      const entry = table[id]
      return perSecond(
        pick(model, input, "resolution", entry.perSecond, "1080p"),
        seconds(model, input, "duration", 5)
      )
    }
  }
}

/**
 * The price of the reference seconds of a `vendor1-2` request with `reference_video_urls` (measured when the task
 * runs, charged then as a separate ledger entry): the video-reference tier of `resolution` times `seconds` (the
 * total length of the reference videos). Seconds are taken to the millisecond (rounded half up) and the price is
 * rounded half up to a micro-dollar; a negative or non-finite length prices 0.
 */
export const vendor1ReferenceSecondsPrice = (
  resolution: Vendor1Resolution,
  seconds: number,
  table: PriceTable = defaultPrices
): number => {
  const milliseconds = Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) : 0
  return mulDivHalfUp(micros(table["vendor1-2"].videoReferencePerSecond[resolution]), milliseconds, 1000)
}

// ---------------------------------------------------------------------------------------------------------------------
// The price file
// ---------------------------------------------------------------------------------------------------------------------

/** A price file that cannot be used: missing or unreadable, not JSON, or not a valid (partial) price table. */
export class PriceFileError extends Data.TaggedError("PriceFileError")<{
  /** The file. */
  readonly file: string
  /** The path inside the JSON of the first offending value (empty for a file-level problem). */
  readonly path: ReadonlyArray<string>
  readonly message: string
}> {}

const formatPath = (path: ReadonlyArray<PropertyKey>): string => path.map((key) => String(key)).join(".")

interface Problem {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const fileError = (file: string, problems: ReadonlyArray<Problem>) =>
  new PriceFileError({
    file,
    path: (problems[0]?.path ?? []).map((key) => String(key)),
    message: `price file ${file}: ${
      problems.map((problem) =>
        problem.path.length === 0 ? problem.message : `${formatPath(problem.path)}: ${problem.message}`
      ).join("; ")
    }`
  })

const decodeOverride = Schema.decodeUnknown(PriceOverride, { errors: "all", onExcessProperty: "error" })

/** Decodes the JSON text of a price file (`file` names it in errors) and merges it over `base`. */
export const parsePriceFile = (
  file: string,
  text: string,
  base: PriceTable = defaultPrices
): Effect.Effect<PriceTable, PriceFileError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (error) =>
      fileError(file, [{
        path: [],
        message: `is not valid JSON (${error instanceof Error ? error.message : String(error)})`
      }])
  }).pipe(
    Effect.flatMap((json) =>
      decodeOverride(json).pipe(
        Effect.mapError((error) => fileError(file, ParseResult.ArrayFormatter.formatErrorSync(error)))
      )
    ),
    Effect.map((override) => mergePrices(base, override))
  )

/**
 * Reads a JSON price file and merges it over `base` (the defaults): a missing or unreadable file, bad JSON, an
 * unknown model or field, or an invalid (e.g. negative) price fails with {@link PriceFileError}.
 */
export const loadPriceFile = (
  file: string,
  base: PriceTable = defaultPrices
): Effect.Effect<PriceTable, PriceFileError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((error) =>
        fileError(file, [{
          path: [],
          message: error._tag === "SystemError" && error.reason === "NotFound"
            ? "not found"
            : `cannot be read (${error.message})`
        }])
      )
    )
    return yield* parsePriceFile(file, text, base)
  })

// ---------------------------------------------------------------------------------------------------------------------
// PriceBook
// ---------------------------------------------------------------------------------------------------------------------

/** Name of the setting that points at a price file (decisions.md §10). */
export const pricesFileVariable = "MEDIAGATE_PRICES_FILE"

/** The setting: the price file, when set (a blank value counts as unset). */
export const pricesFileConfig: Config.Config<Option.Option<string>> = Config.option(Config.string(pricesFileVariable))
  .pipe(Config.map(Option.filter((file) => file.trim() !== "")))

/** The effective price table of the process. */
export class PriceBook extends Context.Tag("@mediagate/vendors/PriceBook")<PriceBook, PriceTable>() {
  /** A fixed table (the defaults when none is given). */
  static readonly layer = (table: PriceTable = defaultPrices): Layer.Layer<PriceBook> => Layer.succeed(PriceBook, table)

  /** The defaults, overridden by the file named by `MEDIAGATE_PRICES_FILE` when it is set. */
  static readonly layerConfig: Layer.Layer<
    PriceBook,
    PriceFileError | ConfigError.ConfigError,
    FileSystem.FileSystem
  > = Layer.effect(
    PriceBook,
    Effect.flatMap(
      pricesFileConfig,
      Option.match({ onNone: () => Effect.succeed(defaultPrices), onSome: (file) => loadPriceFile(file) })
    )
  )
}
