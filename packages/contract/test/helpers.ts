import { describe, it } from "@effect/vitest"
import type { ParseResult } from "effect"
import { Either, Schema } from "effect"
import { expect } from "vitest"
import type * as Catalog from "../src/Catalog.js"
import { registry } from "../src/families/index.js"
import type * as Family from "../src/Family.js"
import { requestSchema } from "../src/Generation.js"
import * as Pricing from "../src/Pricing.js"
import { formatParseError } from "../src/ValidationMessage.js"

/** Decodes a body that must be valid and returns the normalized value. */
export const valid = <A, I>(schema: Schema.Schema<A, I>, body: unknown): A => {
  const result = Schema.decodeUnknownEither(schema)(body)
  if (Either.isLeft(result)) {
    throw new Error(`expected a valid body, got: ${formatParseError(result.left)}\n${JSON.stringify(body)}`)
  }
  return result.right
}

/** Decodes a body that must be invalid and returns the API message; the message must start with `path`. */
export const invalid = <A, I>(schema: Schema.Schema<A, I>, body: unknown, path: string, fragment?: string): string => {
  const result = Schema.decodeUnknownEither(schema)(body)
  if (Either.isRight(result)) throw new Error(`expected ${path} to be refused: ${JSON.stringify(body)}`)
  const message = formatParseError(result.left as ParseResult.ParseError)
  expect(message.startsWith(path), `message "${message}" should name ${path}`).toBe(true)
  if (fragment !== undefined) expect(message).toContain(fragment)
  return message
}

/** A tiny valid PNG of the given size as a data URI (only the header matters to the size reader). */
export const pngDataUri = (width: number, height: number): string => {
  const header = new Uint8Array(33)
  header.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
  const view = new DataView(header.buffer)
  view.setUint32(16, width)
  view.setUint32(20, height)
  header.set([8, 6, 0, 0, 0], 24)
  return `data:image/png;base64,${Buffer.from(header).toString("base64")}`
}

/** A price row: label, endpoint, model, input as a client sends it, expected micro-dollars. */
export type PriceRow = readonly [
  label: string,
  endpoint: Catalog.EndpointKey,
  model: string,
  input: Record<string, unknown>,
  micros: number
]

/** Values the price rows use. */
export const priceSample = {
  prompt: "a lighthouse at dusk",
  image: "https://example.com/first.png",
  video: "https://example.com/reference.mp4"
} as const

const priceOfRegistry = Pricing.priceOf(registry)

/** The price of a raw body, decoded (validated and normalized) by the contract's request Schema, as the API would. */
export const priceOf = (
  endpoint: Catalog.EndpointKey,
  model: string,
  input: Record<string, unknown>,
  table: Pricing.Table<typeof registry> = Pricing.defaults(registry)
): number => priceOfRegistry(endpoint, Schema.decodeUnknownSync(requestSchema(endpoint))({ model, input }), table)

/**
 * A family's price rows (expected figures computed by hand from decisions.md §4: USD per unit × units, written in
 * micro-dollars), and a check that they price every model of every endpoint of the family.
 */
export const describePrices = (family: Family.Any, rows: ReadonlyArray<PriceRow>) =>
  describe(`${family.name} prices`, () => {
    it.each(rows)("%s", (_label, endpoint, model, input, micros) => {
      expect(priceOf(endpoint, model, input)).toBe(micros)
    })

    it("prices every model of every endpoint", () => {
      const priced = new Set(rows.map(([, endpoint, model]) => `${endpoint} ${model}`))
      const missing = family.endpoints.flatMap((endpoint) =>
        endpoint.models.map((model) => `${endpoint.key} ${model}`).filter((key) => !priced.has(key))
      )
      expect(missing).toEqual([])
    })
  })
