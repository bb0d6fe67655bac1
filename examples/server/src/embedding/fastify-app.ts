/**
 * Embedding Mediagate into a Fastify 5 app: an `onRequest` hook, which runs before Fastify reads the body, hands
 * the requests below `/media` to Mediagate's `node:http` handler (`reply.hijack()`: Fastify leaves the answer to
 * it), so Mediagate serves its API, files, docs and dashboard there (`/media/api/v1/...`, `/media/dashboard`).
 * Every other request goes through Fastify's routes as usual.
 *
 *   npm run embed:fastify --workspace=@mediagate/example-server     (PORT, default 3400; SQLite in memory)
 */
import { Mediagate, NodeAdapters } from "@mediagate/node"
import Fastify from "fastify"

/** Where the app mounts Mediagate. */
export const prefix = "/media"

/** Builds the app; `options` override the example's settings. Call `app.close()`, then `mediagate.close()`. */
export const makeApp = (options: Mediagate.Options = {}) => {
  const mediagate = Mediagate.make({
    database: { sqlite: ":memory:" },
    dataDir: "./data/fastify-app",
    publicBaseUrl: `http://localhost:3400${prefix}`,
    ...options
  })
  const app = Fastify()
  app.addHook("onRequest", (request, reply, done) => {
    const url = NodeAdapters.urlBelow(prefix, request.raw.url ?? "/")
    if (url === undefined) return done()
    reply.hijack()
    request.raw.url = url
    mediagate.handler(request.raw, reply.raw)
  })
  app.get("/", async (_request, reply) => reply.type("text/plain").send("the host app"))
  app.post("/echo", async (request) => request.body)
  return { app, mediagate }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { app, mediagate } = makeApp()
  const port = Number(process.env["PORT"] ?? "3400")
  await app.listen({ port })
  console.log(`on :${port}, dashboard at ${prefix}/dashboard`)
  const created = await mediagate.bootstrap()
  if (created !== undefined) console.log(`test key: ${created.test.key}`)
  process.once("SIGTERM", () => void app.close().then(() => mediagate.close()))
}
