/**
 * The ComfyUI fake's `/ws` WebSocket (also `/api/ws`): the upgrade with the same log, `down` and key checks as HTTP,
 * the `sid` (the `clientId` asked for, else a new one), the first `status`, the `feature_flags` answer, and the
 * node a prompt of that client is executing when it reconnects.
 */
import { randomUUID } from "node:crypto"
import { type IncomingMessage, type Server, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { WebSocketServer } from "ws"
import { authorized, type ComfyState, type Messages, record } from "./state.js"
import { type ComfyFake, isObject } from "./types.js"

/** Serves the WebSocket on `server`'s upgrades; `fakeOf` answers the fake itself, for its `down`. */
export const attachWebSocket = (
  server: Server,
  state: ComfyState,
  messages: Messages,
  fakeOf: () => ComfyFake
): WebSocketServer => {
  const { running, sockets } = state
  const { queueInfo, send } = messages
  const wss = new WebSocketServer({ noServer: true })
  const reject = (socket: Duplex, status: number) => {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
  }
  wss.on("error", () => undefined)
  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => undefined)
    record(state, request)
    if (fakeOf().down) return reject(socket, 503)
    if (!authorized(state, request)) return reject(socket, 401)
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    if (url.pathname !== "/ws" && url.pathname !== "/api/ws") return reject(socket, 404)
    wss.handleUpgrade(request, socket, head, (ws) => {
      const given = url.searchParams.get("clientId") ?? ""
      const sid = given !== "" ? given : randomUUID().replaceAll("-", "")
      sockets.set(sid, ws)
      ws.on("error", () => undefined)
      let first = true
      ws.on("message", (data, isBinary) => {
        if (isBinary) return
        try {
          const message: unknown = JSON.parse(String(data))
          if (first && isObject(message) && message["type"] === "feature_flags") {
            send(ws, "feature_flags", { supports_preview_metadata: true, max_upload_size: 104_857_600 })
          }
        } catch {
          // ComfyUI logs and ignores a message that is not JSON
        }
        first = false
      })
      ws.on("close", () => {
        if (sockets.get(sid) === ws) sockets.delete(sid)
      })
      send(ws, "status", { status: queueInfo(), sid })
      for (const job of running) {
        if (job.clientId === sid && job.currentNode !== undefined) send(ws, "executing", { node: job.currentNode })
      }
    })
  })
  return wss
}
