/**
 * Embedding Mediagate into a plain Node app (`node:http`; Express and others work the same way): requests under
 * Mediagate's paths go to its web handler (`Http.toWebHandler`), with the socket address passed in, so API-key IP
 * whitelists see the real client.
 *
 *   npx tsx examples/server/src/embedding/node-app.ts        (PORT, default 3200; SQLite in memory)
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { ClientAddress, Http } from "@mediagate/server"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Readable } from "node:stream"
import * as Stack from "../Stack.js"

const mediagatePaths = ["/api/", "/admin/", "/files/", "/docs"]

/** Builds the app: its own routes, and Mediagate's handler for Mediagate's paths. Call `dispose` on shutdown. */
export const makeApp = () => {
  const { dispose, handler } = Http.toWebHandler(Stack.Ports.pipe(Layer.provide(SqliteClient.layer({ filename: ":memory:" }))))
  const listener = async (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? "/"
    if (!mediagatePaths.some((prefix) => path.startsWith(prefix))) {
      res.writeHead(200, { "content-type": "text/plain" }).end("the host app")
      return
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD"
    const request = new Request(`http://${req.headers.host ?? "localhost"}${path}`, {
      method: req.method ?? "GET",
      headers: Object.entries(req.headers).flatMap(([k, v]) =>
        v === undefined ? [] : Array.isArray(v) ? v.map((x) => [k, x] as [string, string]) : [[k, v] as [string, string]]
      ),
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {})
    } as RequestInit)
    const response = await handler(request, Context.make(ClientAddress.RemoteAddress, req.socket.remoteAddress ?? ""))
    // a body Mediagate did not read (refused early): do not reuse the connection
    res.on("finish", () => void (req.complete || req.destroy()))
    res.writeHead(response.status, Object.fromEntries(response.headers))
    if (response.body === null) res.end()
    else Readable.fromWeb(response.body as import("node:stream/web").ReadableStream).pipe(res)
  }
  return { listener, dispose }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { listener } = makeApp()
  const port = Number(process.env["PORT"] ?? "3200")
  createServer((req, res) => void listener(req, res)).listen(port, () => console.log(`host app on :${port}`))
}
