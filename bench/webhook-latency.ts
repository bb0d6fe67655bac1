/**
 * Webhook dispatch latency: from a task's terminal write to the first delivery attempt of its webhooks. Prints
 * figures; asserts nothing.
 *
 *   tsx bench/webhook-latency.ts -- [--db sqlite,pg] [--rate 50] [--seconds 20] [--built] [--detail]
 *
 * The server runs as a child process: the source stack (`node --import tsx --conditions=@mediagate/source
 * examples/server/src/main.ts`), or with `--built` the built one (`examples/server/dist/server.js`, after `npm run
 * build`). A local receiver (node:http, 127.0.0.1, `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`) answers 200 at once.
 * The bench posts `rate` tasks a second for `seconds` seconds, each a zero-latency simulated job
 * (`[sim:delay=0]`) with a per-task `webhookUrl`, and the account has a webhook subscribed to `task.completed`:
 * two deliveries per task. A delivery's latency is the time its first request reaches the receiver minus the event's
 * `created_at` (the outbox entry's time: the terminal transition's clock reading, in the same transaction).
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres), dropped afterwards; SQLite in a temporary
 * folder.
 *
 * On PostgreSQL the server's statements are counted (a preload module wraps `pg`'s `Client.prototype.query`; the
 * bench asks for the counts with `SIGUSR2`) and printed per delivery of the measured run: the webhook storage's
 * (cursor, deliveries, attempts, registrations), the outbox reads (`readOutbox`), and the transaction control
 * (`BEGIN`/`COMMIT`/`SAVEPOINT`) of transactions holding a webhook statement.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { account, arg, call, flag, mainScript, pgDatabase, root, serverEnv, sleep, start } from "./support.js"

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

/**
 * The preload module counting the server's PostgreSQL statements by kind; on `SIGUSR2` it writes the counts so far
 * to `out` (JSON).
 */
const counterModule = (out: string) => `
import { createRequire } from "node:module"
import { writeFileSync } from "node:fs"
const pg = createRequire(${JSON.stringify(join(root, "package.json"))})("pg")
const counts = {}
const add = (kind, n = 1) => { counts[kind] = (counts[kind] ?? 0) + n }
const kindOf = (text) =>
  /^\\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/i.test(text) ? "control"
  : /webhook(s\\b|_deliver|_dispatch|_idempotency)/i.test(text) ? "webhooks"
  : /outbox/i.test(text) && !/^\\s*INSERT/i.test(text) ? "outbox reads"
  : "other"
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (config, ...rest) {
  const text = typeof config === "string" ? config : (config && config.text) || ""
  const kind = kindOf(text)
  add("all")
  if (kind === "control") {
    if (/^\\s*BEGIN/i.test(text)) this.__tx = { control: 0, webhooks: false }
    if (this.__tx !== undefined) this.__tx.control++
    if (/^\\s*(COMMIT|ROLLBACK)/i.test(text) && this.__tx !== undefined) {
      add(this.__tx.webhooks ? "webhook transaction control" : "other transaction control", this.__tx.control)
      this.__tx = undefined
    }
  } else {
    add(kind)
    if (kind !== "other") add(kind + ": " + text.replace(/\\s+/g, " ").trim().slice(0, 60))
    if (kind === "webhooks" && this.__tx !== undefined) this.__tx.webhooks = true
  }
  return query.call(this, config, ...rest)
}
process.on("SIGUSR2", () => writeFileSync(${JSON.stringify(out)}, JSON.stringify(counts)))
`

/** The statement counts of a server started with the counter module (see {@link counterModule}). */
const statementCounts = async (child: { kill: (signal: NodeJS.Signals) => boolean }, out: string) => {
  rmSync(out, { force: true })
  child.kill("SIGUSR2")
  for (let i = 0; i < 100; i++) {
    try {
      return JSON.parse(readFileSync(out, "utf8")) as Record<string, number>
    } catch {
      await sleep(20)
    }
  }
  return {} as Record<string, number>
}

/**
 * Where the time went on PostgreSQL, from the rows: event (`created_at` of the payload, the terminal write) → its
 * delivery row (`created_at`, the fan-out's clock reading) → the first attempt's record (`at`, read after the
 * answer): percentiles 50/95/99 in ms.
 */
const stages = (url: string) => {
  const query = `SELECT stage, percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY ms) FROM (
    SELECT 'event -> fan-out' AS stage,
      d.created_at - floor(extract(epoch FROM (d.payload::json->>'created_at')::timestamptz) * 1000) AS ms
    FROM mediagate_webhook_deliveries d
    UNION ALL
    SELECT 'fan-out -> first answer recorded', a.at - d.created_at
    FROM mediagate_webhook_deliveries d JOIN mediagate_webhook_delivery_attempts a ON a.delivery_id = d.id AND a.attempt = 1
  ) x GROUP BY stage ORDER BY stage DESC`
  const result = spawnSync("psql", ["-At", "-d", url, "-c", query], { encoding: "utf8" })
  return result.stdout.trim().split("\n").filter((line) => line !== "").map((line) => {
    const [stage, values] = line.split("|")
    return `  ${stage}: p50/p95/p99 ${values?.replace(/[{}]/g, "").split(",").join(" / ")} ms`
  })
}

const figures = (label: string, values: ReadonlyArray<number>) =>
  `  ${label.padEnd(9)} n=${String(values.length).padEnd(6)} p50 ${percentile(values, 50)} ms  p95 ${
    percentile(values, 95)
  } ms  ` +
  `p99 ${percentile(values, 99)} ms  max ${Math.max(...values)} ms`

console.log(`load average before: ${loadavg().map((n) => n.toFixed(2)).join(" ")}`)
for (const db of databases) {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-webhooks-"))
  const pg = db === "pg" ? pgDatabase("webhooks") : undefined
  const hooks = await receiver()
  try {
    const env = serverEnv(dir, pg?.url, { MEDIAGATE_SIM_TIME_SCALE: "1", MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true" })
    const counter = join(dir, "count-statements.mjs")
    const countsFile = join(dir, "statement-counts.json")
    if (pg !== undefined) writeFileSync(counter, counterModule(countsFile))
    const counting = pg === undefined ? [] : ["--import", pathToFileURL(counter).href]
    const server = built
      ? await start(mainScript, env, { nodeArgs: counting })
      : await start("examples/server/src/main.ts", env, {
        nodeArgs: [...counting, "--import", "tsx", "--conditions=@mediagate/source"]
      })
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
          body: {
            model: "vendor3-3",
            input: { prompt: `webhook ${i} [sim:delay=0]` },
            webhookUrl: `${hooks.url}/job?i=${i}`
          }
        })
      // warm-up: the renderer's first clip, the first connections; then forget what arrived
      await post(-1)
      for (let i = 0; i < 600 && hooks.arrivals.size < 2; i++) await sleep(50)
      hooks.arrivals.clear()
      const load = loadavg()[0]!
      const countsBefore = pg === undefined ? {} : await statementCounts(server.child, countsFile)

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
      console.log(
        `${db}: ${total} tasks at ${rate}/s (${all.length} of ${total * 2} deliveries arrived), load average ${
          load.toFixed(2)
        } at the start`
      )
      console.log(figures("per-task", all.filter((a) => a.kind === "job").map((a) => a.latencyMs)))
      console.log(figures("account", all.filter((a) => a.kind === "account").map((a) => a.latencyMs)))
      console.log(figures("all", all.map((a) => a.latencyMs)))
      if (pg !== undefined) {
        // settles of the last deliveries may still be under way: a moment for them
        await sleep(500)
        const after = await statementCounts(server.child, countsFile)
        const per = (kind: string) =>
          (((after[kind] ?? 0) - (countsBefore[kind] ?? 0)) / Math.max(1, all.length)).toFixed(2)
        console.log(
          `  statements per delivery: webhook storage ${per("webhooks")}, outbox reads ${per("outbox reads")}, ` +
            `transaction control of webhook transactions ${per("webhook transaction control")}; ` +
            `everything of the server ${per("all")}`
        )
        if (flag("detail")) {
          // per statement shape (its first 60 characters)
          for (const kind of Object.keys(after).filter((k) => k.includes(": ")).sort()) {
            console.log(`    ${per(kind)}  ${kind}`)
          }
        }
        for (const line of stages(pg.url)) console.log(line)
      }
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
