/**
 * A webhook receiver for configured Mediagate webhooks, as an application would write it:
 *
 * 1. read the raw body (the signature covers the exact bytes, so verify before parsing);
 * 2. verify `X-Webhook-Signature` and the timestamp (at most 300 s old) with the contract's helper;
 * 3. answer 2xx quickly, and handle each event id once: delivery is at least once, retries reuse the event id.
 */
import { type Webhook, WebhookSignature } from "@mediagate/contract"
import * as Either from "effect/Either"
import type { IncomingMessage, ServerResponse } from "node:http"

/** What the receiver does with a verified, new event. */
export type OnEvent = (event: Webhook.WebhookEvent) => void | Promise<void>

/** Largest body read (a task event is a few KB). */
export const maxBodyBytes = 1024 * 1024

const readBody = (req: IncomingMessage): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBodyBytes) {
        resolve(undefined)
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

/** A `node:http` request handler that verifies deliveries with `secret` and passes each new event to `onEvent`. */
export const makeHandler = (secret: string, onEvent: OnEvent, options: { readonly seenLimit?: number } = {}) => {
  const seen = new Set<string>()
  const seenLimit = options.seenLimit ?? 10_000
  return async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "POST") return void res.writeHead(405, { allow: "POST" }).end()
    const body = await readBody(req)
    if (body === undefined) return void res.writeHead(413).end()
    const verified = WebhookSignature.verifyAt({ secret, headers: req.headers, body, now: Date.now() })
    if (Either.isLeft(verified)) {
      return void res.writeHead(400, { "content-type": "text/plain" }).end(verified.left.message)
    }
    const event = verified.right as Webhook.WebhookEvent
    if (!seen.has(event.id)) {
      seen.add(event.id)
      if (seen.size > seenLimit) seen.delete(seen.values().next().value!)
      await onEvent(event)
    }
    res.writeHead(204).end()
  }
}
