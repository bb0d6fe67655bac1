/**
 * Money: USD amounts on the wire, integer micro-dollars inside (decisions.md §4).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Micro-dollars in one US dollar.
 *
 * @since 0.1.0
 * @category constants
 */
export const microsPerDollar = 1_000_000

/**
 * USD to integer micro-dollars (rounded to the nearest micro-dollar).
 *
 * @since 0.1.0
 * @category encoding
 */
export const toMicros = (usd: number): number => Math.round(usd * microsPerDollar)

/**
 * Integer micro-dollars to USD.
 *
 * @since 0.1.0
 * @category encoding
 */
export const fromMicros = (micros: number): number => micros / microsPerDollar

/**
 * True when `usd` has at most 6 decimals (is a whole number of micro-dollars).
 *
 * @since 0.1.0
 * @category guards
 */
export const isMicroPrecise = (usd: number): boolean => {
  const scaled = usd * microsPerDollar
  return Math.abs(scaled - Math.round(scaled)) < 1e-6
}

/**
 * A USD amount of at most 6 decimals, from 0 to one billion.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Usd = Schema.Number.pipe(
  Schema.filter((usd) =>
    (Number.isFinite(usd) && usd >= 0 && usd <= 1_000_000_000 && isMicroPrecise(usd)) ||
    "must be an amount in USD from 0 to 1000000000 with at most 6 decimals", {
    jsonSchema: { minimum: 0, maximum: 1_000_000_000 }
  })
).annotations({ title: "Usd", description: "Amount in USD" })

/**
 * A strictly positive USD amount of at most 6 decimals.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PositiveUsd = Usd.pipe(
  Schema.filter((usd) => usd > 0 || "must be a positive amount in USD", { jsonSchema: { exclusiveMinimum: 0 } })
)
