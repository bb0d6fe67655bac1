/**
 * HTTP helpers of the Replicate fake: the `Cancel-After` and `Prefer: wait` headers, output file names and bytes,
 * and errors as RFC 7807 problems.
 */
import type { ServerResponse } from "node:http"
import { mp4Bytes, pngBytes, sendJson } from "../common.js"

/** Parses a `Cancel-After` duration: `90`, `30s`, `5m`, `1h30m`, `250ms` (milliseconds; undefined when invalid). */
export const parseDuration = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
  let total = 0
  let rest = trimmed
  while (rest !== "") {
    const part = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest)
    if (part === null) return undefined
    total += Number(part[1]) * units[part[2]!]!
    rest = rest.slice(part[0].length)
  }
  return trimmed === "" ? undefined : total
}

/** The seconds a `Prefer` header asks to wait (`wait` alone: 60; clamped to 1..60), or undefined. */
export const preferWait = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined
  const match = /(?:^|[\s,;])wait(?:\s*=\s*"?(\d+)"?)?(?=$|[\s,;])/i.exec(header)
  if (match === null) return undefined
  const asked = match[1] === undefined ? 60 : Number(match[1])
  return Math.min(60, Math.max(1, asked))
}

export const extensionOf = (contentType: string) => {
  const subtype = contentType.split("/")[1]?.split(/[;+]/)[0]?.trim() ?? "bin"
  return subtype === "jpeg" ? "jpg" : subtype === "mpeg" ? "mp3" : subtype
}

export const contentTypeOfName = (name: string): string | undefined => {
  const extension = name.split(".").pop()?.toLowerCase()
  const known: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    webp: "image/webp",
    mp4: "video/mp4"
  }
  return extension === undefined ? undefined : known[extension]
}

export const bytesOf = (contentType: string): Uint8Array =>
  contentType.startsWith("video/") ? mp4Bytes : contentType.startsWith("image/") ? pngBytes : Buffer.from("fake")

/** An RFC 7807 problem, as Replicate answers errors. */
export const problem = (
  response: ServerResponse,
  status: number,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {}
) => sendJson(response, status, { title, detail, status, ...extra }, { "content-type": "application/problem+json" })

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
