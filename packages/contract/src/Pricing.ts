/**
 * The building blocks of the price table (decisions.md §4) that every family's prices use, and the whole
 * table of a registry: its Schema fields, its default prices and the price of a request.
 *
 * The table is JSON, keyed by model id, with prices in USD as an operator writes them (at most 6 decimals, i.e.
 * micro-dollar precision, never negative). Every computation converts a USD price to integer micro-dollars first
 * and then multiplies by integers (seconds, credits) or by a factor with exact integer arithmetic, so no float drift
 * reaches a charge. See `docs/prices.md` for the table and the rules.
 *
 * @since 0.1.0
 */
import * as Rec from "effect/Record"
import * as Schema from "effect/Schema"
import * as Family from "./Family.js"
import type { AnyGenerationRequest } from "./Generation.js"
import * as Records from "./internal/records.js"
import * as Money from "./Money.js"

/** Largest price or factor accepted in a table (keeps every product well inside the safe integers). */
const maxAmount = 1_000_000
/** Largest credit count accepted in a table. */
const maxCredits = 1_000_000

/** A non-negative decimal of at most 6 decimals, at most `max`. */
const decimal = (noun: string, max: number) =>
  Schema.Number.pipe(
    Schema.filter((value) => {
      if (!Number.isFinite(value)) return `must be a finite ${noun}`
      if (value < 0) return `must not be negative (got ${value})`
      if (value > max) return `must be at most ${max} (got ${value})`
      if (!Money.isMicroPrecise(value)) return `must have at most 6 decimals (got ${value})`
      return true
    }, { jsonSchema: { minimum: 0, maximum: max } })
  )

/**
 * A price in USD: at least 0, at most 6 decimals (a whole number of micro-dollars).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Price = decimal("price in USD", maxAmount).annotations({
  title: "Price",
  description: "Price in USD, at least 0, at most 6 decimals"
})

/**
 * A factor applied to a price (at least 0, at most 6 decimals).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Factor = decimal("factor", maxAmount).annotations({
  title: "Factor",
  description: "Factor applied to a price, at least 0, at most 6 decimals"
})

/**
 * A discount factor: 0 to 1 (0.5 halves the price).
 *
 * @since 0.1.0
 * @category schemas
 */
export const DiscountFactor = decimal("factor", 1).annotations({
  title: "DiscountFactor",
  description: "Factor from 0 to 1 applied to a price (0.5 halves it)"
})

/**
 * A whole number of credits.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Credits = Schema.Number.pipe(
  Schema.filter((value) =>
    (Number.isSafeInteger(value) && value >= 0 && value <= maxCredits) ||
    `must be an integer number of credits from 0 to ${maxCredits} (got ${value})`
  )
).annotations({ title: "Credits" })

/**
 * The same value for every key (models that share a price Schema or defaults).
 *
 * @since 0.1.0
 * @category utils
 */
export const each = <const K extends string, A>(keys: ReadonlyArray<K>, value: A): { readonly [P in K]: A } =>
  Rec.map(Records.indexBy(keys, (key) => key), () => value)

/**
 * Prices by key (resolutions, modes, durations), for the keys of `keys`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const byKey = <const K extends string>(keys: readonly [K, ...Array<K>], description: string) =>
  Schema.Struct(each(keys, Price)).annotations({ title: `an object of prices for ${keys.join(", ")}`, description })

/**
 * USD per second of output, by resolution.
 *
 * @since 0.1.0
 * @category schemas
 */
export const perSecondBy = <const K extends string>(keys: readonly [K, ...Array<K>]) =>
  byKey(keys, "USD per second of output, by resolution")

/**
 * A USD price to integer micro-dollars (exact for the ≤ 6 decimals the Schema allows).
 *
 * @since 0.1.0
 * @category utils
 */
export const micros = (usd: number): number => Money.toMicros(usd)

/**
 * `a × b / c` for non-negative integers, rounded half up, without float drift.
 *
 * @since 0.1.0
 * @category utils
 */
export const mulDivHalfUp = (a: number, b: number, c: number): number => {
  const divisor = BigInt(c)
  return Number((BigInt(a) * BigInt(b) * 2n + divisor) / (2n * divisor))
}

/**
 * Integer micro-dollars times a factor of at most 6 decimals, rounded half up to a micro-dollar.
 *
 * @since 0.1.0
 * @category utils
 */
export const applyFactor = (amountMicros: number, factor: number): number =>
  mulDivHalfUp(amountMicros, Math.round(factor * Money.microsPerDollar), Money.microsPerDollar)

/**
 * A per-second price times whole seconds, in micro-dollars.
 *
 * @since 0.1.0
 * @category utils
 */
export const perSecond = (usdPerSecond: number, seconds: number): number => micros(usdPerSecond) * seconds

/**
 * A request the price table cannot price (only possible for an input that skipped validation).
 *
 * @since 0.1.0
 * @category errors
 */
export class UnpriceableRequestError extends Schema.TaggedError<UnpriceableRequestError>()("UnpriceableRequestError", {
  model: Schema.String,
  message: Schema.String
}) {}

/**
 * Throws {@link UnpriceableRequestError} (a defect: validation refuses such requests first).
 *
 * @since 0.1.0
 * @category errors
 */
export const unpriceable = (model: string, detail: string): never => {
  throw new UnpriceableRequestError({ model, message: `cannot price model ${model}: ${detail}` })
}

type Input = Readonly<Record<string, unknown>>

/**
 * The key of `prices` named by `input[field]` (or `fallback` when absent); a number names the key "5" etc.
 *
 * @since 0.1.0
 * @category utils
 */
export const keyOf = <K extends string>(
  model: string,
  input: Input,
  field: string,
  prices: { readonly [P in K]: unknown },
  fallback: K | undefined
): K => {
  const value = input[field] ?? fallback
  const key = typeof value === "number" ? String(value) : value
  if (typeof key === "string" && hasKey(prices, key)) return key
  return unpriceable(
    model,
    `input.${field} ${value === undefined ? "is missing" : `${JSON.stringify(value)} has no price`}`
  )
}

const hasKey = <K extends string>(prices: { readonly [P in K]: unknown }, key: string): key is K =>
  Object.hasOwn(prices, key)

/**
 * The price of `prices` named by `input[field]` (or `fallback` when absent).
 *
 * @since 0.1.0
 * @category utils
 */
export const pick = <K extends string>(
  model: string,
  input: Input,
  field: string,
  prices: { readonly [P in K]: number },
  fallback: K | undefined
): number => prices[keyOf(model, input, field, prices, fallback)]

/**
 * Whole seconds from `input[field]`: an integer or an integer string ("5"), or `fallback` when absent.
 *
 * @since 0.1.0
 * @category utils
 */
export const seconds = (model: string, input: Input, field: string, fallback: number | undefined): number => {
  const value = input[field] ?? fallback
  const number = typeof value === "string" && /^\d{1,6}$/.test(value) ? Number(value) : value
  if (typeof number === "number" && Number.isSafeInteger(number) && number >= 0) return number
  return unpriceable(
    model,
    `input.${field} ${value === undefined ? "is missing" : `${JSON.stringify(value)} is not a whole number of seconds`}`
  )
}

/**
 * A boolean field, or `fallback`.
 *
 * @since 0.1.0
 * @category utils
 */
export const flag = (input: Input, field: string, fallback: boolean): boolean => {
  const value = input[field]
  return typeof value === "boolean" ? value : fallback
}

/**
 * The price per second named by `input[field]` times the seconds of `input.duration` (fallbacks when absent).
 *
 * @since 0.1.0
 * @category utils
 */
export const bySecond = <K extends string>(
  { input, model }: AnyGenerationRequest,
  prices: { readonly [P in K]: number },
  fallback: K,
  duration: number | undefined,
  field = "resolution"
): number => perSecond(pick(model, input, field, prices, fallback), seconds(model, input, "duration", duration))

/**
 * True when the field holds a non-empty list.
 *
 * @since 0.1.0
 * @category utils
 */
export const hasItems = (value: unknown): boolean => Array.isArray(value) && value.length > 0

/**
 * The whole price table of a registry (one entry per model id).
 *
 * @since 0.1.0
 * @category models
 */
export type Table<R extends Family.Registry> = Schema.Struct.Type<Family.PriceFields<R>>

/**
 * The Schema fields of a registry's price table: every family's entries.
 *
 * @since 0.1.0
 * @category schemas
 */
export const fields = <const R extends Family.Registry>(registry: R): Family.PriceFields<R> =>
  Records.merge(registry.map((family) => family.prices.fields), "model id")

/**
 * The default prices of a registry (decisions.md §4), in USD.
 *
 * @since 0.1.0
 * @category utils
 */
export const defaults = <const R extends Family.Registry>(registry: R): Table<R> =>
  Records.merge(registry.map((family) => family.prices.defaults), "model id")

/**
 * The price function of a registry: the price charged at accept, in integer micro-dollars, of a validated
 * (normalized) request. A model that the endpoint does not offer, or a value the table has no price for, throws
 * {@link UnpriceableRequestError}.
 *
 * @since 0.1.0
 * @category utils
 */
export const priceOf = (registry: Family.Registry) =>
(
  endpoint: string,
  request: AnyGenerationRequest,
  table: Schema.Struct.Type<Schema.Struct.Fields>
): number => {
  const family = Family.familyOf(registry, endpoint)
  const models: ReadonlyArray<string> = Family.findEndpoint(registry, endpoint)?.models ?? []
  if (family === undefined || !models.includes(request.model)) {
    return unpriceable(request.model, `the model is not offered by endpoint ${endpoint}`)
  }
  return family.prices.price(endpoint, request, table)
}
