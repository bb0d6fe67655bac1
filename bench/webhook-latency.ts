/**
 * Webhook dispatch latency: from a task's terminal write to the first delivery attempt of its webhooks. Prints
 * figures; asserts nothing.
 *
 *   tsx bench/webhook-latency.ts -- [--db sqlite,pg] [--rate 50] [--seconds 20] [--built]
 *
 * The server runs as a child process: the source stack (`node --import tsx --conditions=@mediagate/source
 * examples/server/src/main.ts`), or with `--built` the built one (`examples/server/dist/main.js`, after `npm run
 * build`). A local receiver (node:http, 127.0.0.1, `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`) answers 200 at once.
 * The bench posts `rate` tasks a second for `seconds` seconds, each a zero-latency simulated job
 * (`[sim:delay=0]`) with a per-task `webhookUrl`, and the account has a webhook subscribed to `task.completed`:
 * two deliveries per task. A delivery's latency is the time its first request reaches the receiver minus the event's
 * `created_at` (the outbox entry's time: the terminal transition's clock reading, in the same transaction).
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres), dropped afterwards; SQLite in a temporary
 * folder.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { loadavg } from "node:os"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { account, arg, call, flag, mainScript, pgDatabase, serverEnv, sleep, start } from "./support.js"

const databases = arg("db", "sqlite,pg").split(",")
const rate = Number(arg("rate", "50"))
const seconds = Number(arg("seconds", "20"))
const built = flag("built")

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** A first request of one delivery, as the receiver saw it. */
interface Arrival {
  readonly kind: "job" | "account"
  readonly eventId: string
  readonly latencyMs: number
}

/** A receiver answering 200 at once; it keeps the first request of each (event, kind). */
const receiver = () =>
  new Promise<{ url: string; arrivals: Map<string, Arrival>; close: () => Promise<void> }>((resolve) => {
    const arrivals = new Map<string, Arrival>()
    const server = createServer((req, res) => {
      const at = Date.now()
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        res.writeHead(200).end()
        try {
          const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: string; created_at: string }
          const kind = (req.url ?? "").startsWith("/job") ? "job" : "account"
          const key = `${kind}:${event.id}`
          if (!arrivals.has(key)) {
            arrivals.set(key, { kind, eventId: event.id, latencyMs: at - Date.parse(event.created_at) })
          }
        } catch {
          // not an event (ignored)
        }
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resolve({
        url: `http://127.0.0.1:${port}`,
        arrivals,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })

const figures = (label: string, values: ReadonlyArray<number>) =>
  `  ${label.padEnd(9)} n=${String(values.length).padEnd(6)} p50 ${percentile(values, 50)} ms  p95 ${percentile(values, 95)} ms  ` +
  `p99 ${percentile(values, 99)} ms  max ${Math.max(...values)} ms`

console.log(`load average before: ${loadavg().map((n) => n.toFixed(2)).join(" ")}`)
for (const db of databases) {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-webhooks-"))
  const pg = db === "pg" ? pgDatabase("webhooks") : undefined
  const hooks = await receiver()
  try {
    const env = serverEnv(dir, pg?.url, { MEDIAGATE_SIM_TIME_SCALE: "1", MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true" })
    const server = built
      ? await start(mainScript, env)
      : await start("examples/server/src/main.ts", env, { nodeArgs: ["--import", "tsx", "--conditions=@mediagate/source"] })
    try {
      const { token } = await account(server.base, 100_000_000)
      await call(server.base, "/api/v1/webhooks", {
        method: "POST",
        token,
        body: { url: `${hooks.url}/account`, events: ["task.completed"] }
      })
      const post = (i: number) =>
        call(server.base, "/api/v1/vendor3/text-to-video", {
          method: "POST",
          token,
          body: { model: "vendor3-3", input: { prompt: `webhook ${i} [sim:delay=0]` }, webhookUrl: `${hooks.url}/job?i=${i}` }
        })
      // warm-up: the renderer's first clip, the first connections; then forget what arrived
      await post(-1)
      for (let i = 0; i < 600 && hooks.arrivals.size < 2; i++) await sleep(50)
      hooks.arrivals.clear()
      const load = loadavg()[0]!

      const total = Math.round(rate * seconds)
      const begin = Date.now()
      const posts: Array<Promise<unknown>> = []
      for (let i = 0; i < total; i++) {
        const due = begin + (i * 1000) / rate
        const wait = due - Date.now()
        if (wait > 0) await sleep(wait)
        posts.push(post(i).catch((error: unknown) => console.error(`POST ${i} failed: ${String(error)}`)))
      }
      await Promise.all(posts)
      const deadline = Date.now() + 60_000
      while (hooks.arrivals.size < total * 2 && Date.now() < deadline) await sleep(100)
      const all = [...hooks.arrivals.values()]
      console.log(`${db}: ${total} tasks at ${rate}/s (${all.length} of ${total * 2} deliveries arrived), load average ${load.toFixed(2)} at the start`)
      console.log(figures("per-task", all.filter((a) => a.kind === "job").map((a) => a.latencyMs)))
      console.log(figures("account", all.filter((a) => a.kind === "account").map((a) => a.latencyMs)))
      console.log(figures("all", all.map((a) => a.latencyMs)))
    } finally {
      await server.stop()
    }
  } finally {
    await hooks.close()
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}
console.log(`load average after: ${loadavg().map((n) => n.toFixed(2)).join(" ")}`)
