/**
 * Embedding Mediagate into a plain Node app (`node:http`): `Mediagate.make` starts the stack in the background and
 * hands back a request listener; the app keeps its own routes and sends what is below `/media` to Mediagate, which
 * serves its API, files, docs and dashboard there (`/media/api/v1/...`, `/media/dashboard`).
 *
 *   npm run embed:node --workspace=@mediagate/example-server        (PORT, default 3200; SQLite in memory)
 */
import { Mediagate, NodeAdapters } from "@mediagate/node"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"

/** Where the app mounts Mediagate. */
export const prefix = "/media"

/**
 * Builds the app: its own routes, and Mediagate's handler below {@link prefix}. `options` override the example's
 * settings (the tests give each run its own data directory). Call `mediagate.close()` on shutdown.
 */
export const makeApp = (options: Mediagate.Options = {}) => {
  const mediagate = Mediagate.make({
    database: { sqlite: ":memory:" },
    dataDir: "./data/node-app",
    publicBaseUrl: `http://localhost:3200${prefix}`,
    ...options
  })
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    // `/media/api/v1/tasks?limit=5` → `/api/v1/tasks?limit=5`; undefined when not Mediagate's
    const url = NodeAdapters.urlBelow(prefix, req.url ?? "/")
    if (url !== undefined) {
      req.url = url
      return mediagate.handler(req, res)
    }
    res.writeHead(200, { "content-type": "text/plain" }).end("the host app")
  }
  return { listener, mediagate }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { listener, mediagate } = makeApp()
  const port = Number(process.env["PORT"] ?? "3200")
  const server = createServer(listener).listen(port, () => console.log(`on :${port}, dashboard at ${prefix}/dashboard`))
  server.on("clientError", NodeAdapters.clientError)
  const created = await mediagate.bootstrap()
  if (created !== undefined) console.log(`test key: ${created.test.key}`)
  process.once("SIGTERM", () => server.close(() => void mediagate.close()))
}
