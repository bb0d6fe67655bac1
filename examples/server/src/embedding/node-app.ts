/**
 * Embedding Mediagate into a plain Node app (`node:http`): `Mediagate.make` starts the stack in the background and
 * hands back a request listener; the app sends Mediagate's paths to it and keeps the rest. (Express and Connect
 * apps use `mediagate.middleware` instead.)
 *
 *   npm run embed:node --workspace=@mediagate/example-server        (PORT, default 3200; SQLite in memory)
 */
import { Mediagate, NodeAdapters } from "@mediagate/node"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"

/** Builds the app: its own routes, and Mediagate's handler for Mediagate's paths. Call `close` on shutdown. */
export const makeApp = () => {
  const mediagate = Mediagate.make({ database: { sqlite: ":memory:" }, dataDir: "./data/node-app" })
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?", 1)[0]!
    if (NodeAdapters.isMediagatePath(path)) return mediagate.handler(req, res)
    res.writeHead(200, { "content-type": "text/plain" }).end("the host app")
  }
  return { listener, mediagate }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { listener, mediagate } = makeApp()
  const port = Number(process.env["PORT"] ?? "3200")
  const server = createServer(listener).listen(port, () => console.log(`host app on :${port}`))
  const created = await mediagate.bootstrap()
  if (created !== undefined) console.log(`test key: ${created.test.key}`)
  process.once("SIGTERM", () => server.close(() => void mediagate.close()))
}
