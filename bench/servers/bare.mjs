/**
 * The bare baseline of the memory benchmark (bench/rss.ts): a `node:http` server answering `ok` to everything.
 *
 *   PORT=... [HOST=127.0.0.1] node bench/servers/bare.mjs
 */
import { createServer } from "node:http"

createServer((_request, response) => response.end("ok")).listen(Number(process.env.PORT ?? 3000), process.env.HOST)
