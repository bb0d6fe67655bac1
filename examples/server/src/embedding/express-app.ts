/**
 * Embedding Mediagate into an Express 5 app: `mediagate.middleware` mounted at `/media` serves Mediagate's API,
 * files, docs and dashboard below it (`/media/api/v1/...`, `/media/dashboard`) and passes every other request on to
 * the app's own routes and parsers.
 *
 *   npm run embed:express --workspace=@mediagate/example-server     (PORT, default 3300; SQLite in memory)
 */
import { Mediagate } from "@mediagate/node"
import express from "express"

/** Where the app mounts Mediagate. */
export const prefix = "/media"

/** Builds the app; `options` override the example's settings. Call `mediagate.close()` on shutdown. */
export const makeApp = (options: Mediagate.Options = {}) => {
  const mediagate = Mediagate.make({
    database: { sqlite: ":memory:" },
    dataDir: "./data/express-app",
    publicBaseUrl: `http://localhost:3300${prefix}`,
    ...options
  })
  const app = express()
  app.use(prefix, mediagate.middleware) // before the app's body parsers: Mediagate reads its own bodies
  app.use(express.json())
  app.get("/", (_req, res) => {
    res.type("text/plain").send("the host app")
  })
  app.post("/echo", (req, res) => {
    res.json(req.body)
  })
  return { app, mediagate }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { app, mediagate } = makeApp()
  const port = Number(process.env["PORT"] ?? "3300")
  const server = app.listen(port, () => console.log(`on :${port}, dashboard at ${prefix}/dashboard`))
  const created = await mediagate.bootstrap()
  if (created !== undefined) console.log(`test key: ${created.test.key}`)
  process.once("SIGTERM", () => server.close(() => void mediagate.close()))
}
