/**
 * Embedding Mediagate into a Hono 4 app on Node (`@hono/node-server`): a middleware on `/media/*` hands Mediagate's
 * requests to its `node:http` handler with the Node request and response Hono runs on (`c.env.incoming`,
 * `c.env.outgoing`; Hono has not read the body) and tells Hono the answer is sent. Mediagate serves its API, files,
 * docs and dashboard there (`/media/api/v1/...`, `/media/dashboard`); everything else is Hono's.
 *
 *   npm run embed:hono --workspace=@mediagate/example-server        (PORT, default 3500; SQLite in memory)
 */
import { type HttpBindings, serve } from "@hono/node-server"
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response"
import { Mediagate, NodeAdapters } from "@mediagate/node"
import { Hono } from "hono"

/** Where the app mounts Mediagate. */
export const prefix = "/media"

/** Builds the app; `options` override the example's settings. Call `mediagate.close()` on shutdown. */
export const makeApp = (options: Mediagate.Options = {}) => {
  const mediagate = Mediagate.make({
    database: { sqlite: ":memory:" },
    dataDir: "./data/hono-app",
    publicBaseUrl: `http://localhost:3500${prefix}`,
    ...options
  })
  const app = new Hono<{ Bindings: HttpBindings }>()
  app.use(`${prefix}/*`, async (c, next) => {
    const url = NodeAdapters.urlBelow(prefix, c.env.incoming.url ?? "/")
    if (url === undefined) return next()
    c.env.incoming.url = url
    mediagate.handler(c.env.incoming, c.env.outgoing)
    return RESPONSE_ALREADY_SENT
  })
  app.get("/", (c) => c.text("the host app"))
  app.post("/echo", async (c) => c.json(await c.req.json()))
  return { app, mediagate }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { app, mediagate } = makeApp()
  const port = Number(process.env["PORT"] ?? "3500")
  const server = serve({ fetch: app.fetch, port }, () => console.log(`on :${port}, dashboard at ${prefix}/dashboard`))
  const created = await mediagate.bootstrap()
  if (created !== undefined) console.log(`test key: ${created.test.key}`)
  process.once("SIGTERM", () => server.close(() => void mediagate.close()))
}
