/**
 * The Replicate fake's HTTP routes: creates (through `create.ts`), reads, cancels and cursor-paged lists of
 * predictions, the server-sent events of `urls.stream`, the webhook secret, the account, and the output files under
 * `/fake-files/`; every `/v1` route but the streams needs the token.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { faultedSubmit, sendJson } from "../common.js"
import type { makeCreate } from "./create.js"
import { bytesOf, contentTypeOfName, problem } from "./http.js"
import { ending, viewOf } from "./prediction.js"
import { type ReplicateState, settle, wake } from "./state.js"
import { type Entry, logLimit, modelPattern, type ReplicateFake, type Target } from "./types.js"
import type { Webhooks } from "./webhooks.js"

/** The request handler of one fake; `fakeOf` answers the fake itself, for its `down`. */
export const makeRoutes = (
  state: ReplicateState,
  webhooks: Webhooks,
  create: ReturnType<typeof makeCreate>,
  fakeOf: () => ReplicateFake
) => {
  const { counts, entries, files, order, pageSize, submitFaults, token, webhookSecret } = state
  const { schedule } = webhooks

  const cancel = (response: ServerResponse, entry: Entry) => {
    counts.cancel++
    const now = Date.now()
    if (now < ending(entry.p).at) {
      entry.p.canceledAt = now
      wake(entry)
      schedule(entry)
    }
    sendJson(response, 200, viewOf(entry.p, state.base, now))
  }

  /** Cursors as Django REST's CursorPagination makes them: base64 of `p=<position>` (`r=1&` for backwards). */
  const cursorOf = (seq: number, reverse: boolean) => {
    const cursor = Buffer.from(`${reverse ? "r=1&" : ""}p=${seq}`).toString("base64")
    return `${state.base}/v1/predictions?cursor=${encodeURIComponent(cursor)}`
  }

  const list = (response: ServerResponse, cursor: string | null) => {
    counts.list++
    let reverse = false
    let position = order.length
    if (cursor !== null) {
      const decoded = new URLSearchParams(Buffer.from(cursor, "base64").toString("utf8"))
      const p = Number(decoded.get("p"))
      if (decoded.get("p") === null || !Number.isInteger(p)) {
        return problem(response, 400, "Bad Request", "Invalid cursor")
      }
      reverse = decoded.get("r") === "1"
      position = p
    }
    const page: Array<Entry> = []
    if (reverse) {
      for (let seq = position + 1; seq < order.length && page.length < pageSize; seq++) page.unshift(order[seq]!)
    } else {
      for (let seq = Math.min(position, order.length) - 1; seq >= 0 && page.length < pageSize; seq--) {
        page.push(order[seq]!)
      }
    }
    const now = Date.now()
    const first = page[0]?.p.seq
    const last = page[page.length - 1]?.p.seq
    sendJson(response, 200, {
      next: last !== undefined && last > 0 ? cursorOf(last, false) : null,
      previous: first !== undefined && first < order.length - 1 ? cursorOf(first, true) : null,
      results: page.map((entry) => viewOf(entry.p, state.base, now))
    })
  }

  /** Server-sent events of `urls.stream`: the output URLs and `done` at the end, or `error`. */
  const stream = async (response: ServerResponse, entry: Entry) => {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" })
    response.flushHeaders()
    await settle(state, entry, Infinity)
    if (response.destroyed) return
    const end = ending(entry.p)
    if (end.status === "succeeded") {
      entry.p.outputUrls.forEach((url, n) => response.write(`event: output\nid: ${n}\ndata: ${url}\n\n`))
      response.write("event: done\ndata: {}\n\n")
    } else if (end.status === "failed") {
      const message = (entry.p.plan.fail ?? "the model failed").split("\n").map((line) => `data: ${line}`).join("\n")
      response.write(`event: error\n${message}\n\n`)
    } else {
      response.write(`event: done\ndata: {"reason":"canceled"}\n\n`)
    }
    response.end()
  }

  const serveFile = (request: IncomingMessage, response: ServerResponse, name: string) => {
    const contentType = files.get(name) ?? contentTypeOfName(name)
    if (contentType === undefined) return problem(response, 404, "Not found", `No file ${name}`)
    counts.files++
    const bytes = bytesOf(contentType)
    response.writeHead(200, {
      "content-type": contentType,
      "content-length": bytes.byteLength,
      "cache-control": "public, max-age=3600"
    })
    if (request.method === "HEAD") response.end()
    else response.end(bytes)
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const method = request.method ?? "GET"
    state.log.push({ method, url: request.url ?? "/", at: Date.now(), headers: request.headers })
    if (state.log.length >= 2 * logLimit) state.log = state.log.slice(-logLimit)
    if (fakeOf().down) return problem(response, 503, "Service Unavailable", "The fake is down.")
    const url = new URL(request.url ?? "/", state.base)
    const parts = url.pathname.split("/").filter((part) => part !== "").map(decodeURIComponent)
    const notFound = () => problem(response, 404, "Not found", "The requested resource could not be found.")
    const notAllowed = () => problem(response, 405, "Method Not Allowed", `${method} is not allowed here.`)

    if (parts[0] === "fake-files" && parts.length === 2) {
      return method === "GET" || method === "HEAD" ? serveFile(request, response, parts[1]!) : notAllowed()
    }
    if (parts[0] !== "v1") return notFound()
    if (parts[1] === "streams" && parts.length === 3) {
      const entry = entries.get(parts[2]!)
      if (entry === undefined) return notFound()
      return method === "GET" ? stream(response, entry) : notAllowed()
    }

    const authorization = request.headers["authorization"] ?? ""
    const presented = /^(?:Bearer|Token)\s+(.+)$/i.exec(authorization)?.[1]?.trim()
    if (presented !== token) {
      return problem(
        response,
        401,
        "Unauthenticated",
        presented === undefined
          ? "You did not pass an authentication token"
          : "You did not pass a valid authentication token"
      )
    }

    const [, resource, a, b, c] = parts
    if (resource === "predictions") {
      if (parts.length === 2) {
        if (method === "POST") {
          const target: Target = { _tag: "version" }
          return faultedSubmit(submitFaults, response, (answer) => create(request, response, target, answer))
        }
        if (method === "GET") return list(response, url.searchParams.get("cursor"))
        return notAllowed()
      }
      const entry = entries.get(a!)
      if (parts.length === 3) {
        if (method !== "GET") return notAllowed()
        counts.get++
        return entry === undefined ? notFound() : sendJson(response, 200, viewOf(entry.p, state.base, Date.now()))
      }
      if (parts.length === 4 && b === "cancel") {
        if (method !== "POST") return notAllowed()
        return entry === undefined ? notFound() : cancel(response, entry)
      }
      return notFound()
    }
    if ((resource === "models" || resource === "deployments") && parts.length === 5 && c === "predictions") {
      const name = `${a}/${b}`
      if (!modelPattern.test(name)) return notFound()
      if (method !== "POST") return notAllowed()
      const target: Target = resource === "models"
        ? { _tag: "model", model: name }
        : { _tag: "deployment", deployment: name }
      return faultedSubmit(submitFaults, response, (answer) => create(request, response, target, answer))
    }
    if (resource === "webhooks" && a === "default" && b === "secret" && parts.length === 4) {
      return method === "GET" ? sendJson(response, 200, { key: webhookSecret }) : notAllowed()
    }
    if (resource === "account" && parts.length === 2) {
      return method === "GET"
        ? sendJson(response, 200, { type: "user", username: "fake", name: "Fake Replicate", github_url: null })
        : notAllowed()
    }
    return notFound()
  }

  return handle
}
