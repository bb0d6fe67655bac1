/** HTTP helpers of the ComfyUI fake: aiohttp's empty and plain-text answers, a JSON body reader, an abortable sleep. */
import type { IncomingMessage, ServerResponse } from "node:http"
import { STATUS_CODES } from "node:http"
import { readBody } from "../common.js"

export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener("abort", done)
  })

export const sendEmpty = (response: ServerResponse, status: number) => {
  response.writeHead(status, { "content-length": 0 })
  response.end()
}

/** aiohttp's plain-text error pages (`404: Not Found`). */
export const sendText = (response: ServerResponse, status: number) => {
  const text = `${status}: ${STATUS_CODES[status] ?? ""}`
  response.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) })
  response.end(text)
}

export const readJson = async (request: IncomingMessage): Promise<{ readonly value: unknown } | undefined> => {
  const text = await readBody(request)
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}
