/**
 * What the vendor1 request suites share: reference image URLs, HEIF and SVG data URIs of a given size, and the
 * table-driven refusals of a request schema.
 */
import { it } from "@effect/vitest"
import type { Schema } from "effect"
import { invalid } from "../../helpers.js"

/** A minimal HEIF container (ftyp + meta/iprp/ipco/ispe) of the given pixel size, as a data URI. */
export const heifDataUri = (width: number, height: number, brand = "heic"): string => {
  const box = (type: string, ...content: Array<Uint8Array>): Uint8Array => {
    const size = 8 + content.reduce((n, part) => n + part.length, 0)
    const out = new Uint8Array(size)
    new DataView(out.buffer).setUint32(0, size)
    out.set(new TextEncoder().encode(type), 4)
    let offset = 8
    for (const part of content) {
      out.set(part, offset)
      offset += part.length
    }
    return out
  }
  const uint32s = (...values: Array<number>) => {
    const out = new Uint8Array(values.length * 4)
    values.forEach((value, i) => new DataView(out.buffer).setUint32(i * 4, value))
    return out
  }
  const ftyp = box("ftyp", new TextEncoder().encode(brand), uint32s(0))
  const meta = box("meta", uint32s(0), box("iprp", box("ipco", box("ispe", uint32s(0, width, height)))))
  const bytes = new Uint8Array(ftyp.length + meta.length)
  bytes.set(ftyp, 0)
  bytes.set(meta, ftyp.length)
  return `data:image/heic;base64,${Buffer.from(bytes).toString("base64")}`
}

export const svgDataUri = `data:image/svg+xml;base64,${
  Buffer.from("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"600\"></svg>").toString("base64")
}`

export const img = "https://example.com/a.png"
export const img2 = "https://example.com/b.png"

export const refusals = <A, I>(
  schema: Schema.Schema<A, I>,
  cases: ReadonlyArray<readonly [string, unknown, string]>
) =>
  it.each(cases)("refuses: %s", (_name, body, message) => {
    invalid(schema, body, message.split(/[: ]/)[0]!, message)
  })
