/**
 * A small HTTP fault proxy for the end-to-end channel tests (test/channels.ts): put in front of an upstream
 * server, it passes requests through, answers `500` with the API's error envelope, or hangs (reads the request and
 * never answers), switchable at any time. It counts what it did, per mode and per method, so a test can tell how
 * many submits (`POST`) reached the upstream behind it.
 *
 * @since 0.1.0
 */
import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** What the proxy does with the next requests. */
export type FaultMode = "pass" | "error" | "hang"

/** What the proxy did so far. */
export interface FaultCounts {
  /** Requests passed through to the target, by method (`POST` = submits, `GET` = polls). */
  readonly passed: Record<string, number>
  /** Requests answered `500` by the proxy itself, by method. */
  readonly failed: Record<string, number>
  /** Requests held without an answer, by method. */
  readonly hung: Record<string, number>
}

/** A running fault proxy. */
export interface FaultProxy {
  /** The proxy's base URL (`http://127.0.0.1:<port>`). */
  readonly url: string
  /** The current mode. */
  readonly mode: () => FaultMode
  /** Switches the mode for the requests that arrive from now on. */
  readonly setMode: (mode: FaultMode) => void
  /** What the proxy did so far (a copy). */
  readonly counts: () => FaultCounts
  /** Closes the proxy, dropping held requests and open connections. */
  readonly close: () => Promise<void>
}

const bump = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1)

/** The body of the proxy's `500`: the error envelope of the API (`INTERNAL_ERROR`). */
export const errorEnvelope = JSON.stringify({
  success: false,
  error: { code: "INTERNAL_ERROR", message: "fault proxy: injected failure" }
})

/** Starts a fault proxy to `target` (a base URL such as `http://127.0.0.1:3001`) on a free local port. */
export const startFaultProxy = async (target: string, initial: FaultMode = "pass"): Promise<FaultProxy> => {
  const to = new URL(target)
  let mode: FaultMode = initial
  const counts: FaultCounts = { passed: {}, failed: {}, hung: {} }
  const held = new Set<ServerResponse>()

  const pass = (req: IncomingMessage, res: ServerResponse) => {
    const upstream = httpRequest(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: to.host }
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" })
      res.end(
        JSON.stringify({ success: false, error: { code: "PROVIDER_ERROR", message: "fault proxy: target failed" } })
      )
    })
    req.pipe(upstream)
  }

  const server: Server = createServer((req, res) => {
    const method = req.method ?? "GET"
    switch (mode) {
      case "pass":
        bump(counts.passed, method)
        return pass(req, res)
      case "error":
        bump(counts.failed, method)
        req.resume()
        req.on("end", () => res.writeHead(500, { "content-type": "application/json" }).end(errorEnvelope))
        return
      case "hang":
        bump(counts.hung, method)
        req.resume()
        held.add(res)
        res.on("close", () => held.delete(res))
        return
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    mode: () => mode,
    setMode: (next) => (mode = next),
    counts: () => ({ passed: { ...counts.passed }, failed: { ...counts.failed }, hung: { ...counts.hung } }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
