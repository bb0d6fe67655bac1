/**
 * A real PostgreSQL restart under load (docs/operations.md#outages), by hand: the CI test (test/chaos.test.ts)
 * simulates the restart on its own database; this restarts the whole local cluster, so run it only where nothing
 * else uses it, as root (or a user allowed to run `pg_ctlcluster`).
 *
 *   npm run build && npx tsx bench/outage.ts [--cluster "15 main"] [--seconds 10]
 *
 * Two built servers (both with workers) on a fresh database take a steady stream of task creations (each with an
 * `Idempotency-Key`, retried on 503) and reads; mid-way the cluster is restarted. It prints the answers by status
 * (with the slowest of each) and `/readyz` during the restart, waits until every task is terminal, and checks the
 * same invariants as the CI test: one task per key, one charge per task, at most one refund, ledger = balances.
 * Exit code 1 when an invariant fails or any answer was a 5xx other than 503.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { adminToken, arg, mainScript, pgDatabase, type Running, sleep, start } from "./support.js"

const cluster = arg("cluster", "15 main").split(" ")
const seconds = Number(arg("seconds", "10"))
const database = pgDatabase("outage")
const name = database.url.split("/").at(-1)!
const sql = (text: string) =>
  spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", name, "-Atqc", text], { encoding: "utf8" }).stdout
    .trim()

const env = {
  DATABASE_URL: database.url,
  MEDIAGATE_ADMIN_TOKEN: adminToken,
  MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-outage-")),
  MEDIAGATE_FILE_SECRET: "outage-file-secret-0123456789abcdef",
  MEDIAGATE_SIM_TIME_SCALE: "0.01",
  MEDIAGATE_WORKER_LEASE: "5s"
}
const nodes: Array<Running> = []
try {
  nodes.push(await start(mainScript, env), await start(mainScript, env))
  const post = (base: string, path: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000)
    })
  const account =
    (await (await post(nodes[0]!.base, "/admin/v1/accounts", adminToken, { name: "outage" })).json()).data.id
  await post(nodes[0]!.base, `/admin/v1/accounts/${account}/credits`, adminToken, { amount: 100_000 })
  const key =
    (await (await post(nodes[0]!.base, `/admin/v1/accounts/${account}/api-keys`, adminToken, { name: "outage" }))
      .json())
      .data.key as string

  const stats = new Map<string, { n: number; slowest: number }>()
  const note = (label: string, ms: number) => {
    const entry = stats.get(label) ?? { n: 0, slowest: 0 }
    stats.set(label, { n: entry.n + 1, slowest: Math.max(entry.slowest, ms) })
  }
  const tasks = new Set<string>()
  let stop = false
  let counter = 0
  const client = async (c: number) => {
    while (!stop) {
      const i = counter++
      for (let attempt = 0; !stop; attempt++) {
        const base = nodes[(c + attempt) % 2]!.base
        const started = Date.now()
        try {
          const response = await post(base, "/api/v1/vendor4/text-to-image", key, {
            model: "vendor4-3-0-t2i",
            input: { prompt: `outage ${i}` }
          }, { "idempotency-key": `outage-${i}` })
          const body = await response.json()
          note(`POST ${response.status}`, Date.now() - started)
          if (response.ok) {
            tasks.add(body.data.id)
            const read = await fetch(`${base}/api/v1/tasks/${body.data.id}`, {
              headers: { authorization: `Bearer ${key}` }
            })
            note(`GET ${read.status}`, Date.now() - started)
            break
          }
        } catch (error) {
          note(`POST ${(error as Error).name}`, Date.now() - started)
        }
        await sleep(200)
      }
      await sleep(50)
    }
  }
  const clients = Array.from({ length: 8 }, (_, c) => client(c))
  await sleep(2000)
  const readyz: Array<string> = []
  const probe = (async () => {
    while (!stop) {
      const response = await fetch(`${nodes[0]!.base}/readyz`).catch(() => undefined)
      readyz.push(String(response?.status ?? "error"))
      await sleep(250)
    }
  })()
  console.log(`restarting the cluster ${cluster.join(" ")} ...`)
  // (not spawnSync: the clients must keep running while the cluster restarts)
  const restart = spawn("pg_ctlcluster", ["--skip-systemctl-redirect", ...cluster, "restart"], { stdio: "inherit" })
  const status = await new Promise<number | null>((resolve) => restart.on("exit", resolve))
  if (status !== 0) throw new Error(`pg_ctlcluster failed with ${status}`)
  console.log("restarted")
  await sleep(seconds * 1000)
  stop = true
  await Promise.all([...clients, probe])
  for (const [label, { n, slowest }] of [...stats].sort()) console.log(`${label}: ${n} (slowest ${slowest} ms)`)
  console.log(`/readyz of node 1 every 250 ms: ${readyz.join(" ")}`)

  let active = "?"
  for (let i = 0; i < 120 && active !== "0"; i++) {
    active = sql(
      `SELECT count(*) FROM mediagate_tasks WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'expired')`
    )
    if (active !== "0") await sleep(500)
  }
  const checks: Record<string, boolean> = {
    "every task terminal": active === "0",
    "one task per key": sql("SELECT count(*) FROM mediagate_tasks") === String(tasks.size),
    "one charge per task":
      sql("SELECT count(*) - count(DISTINCT task_id) FROM mediagate_billing_ledger WHERE kind = 'charge'") === "0" &&
      sql("SELECT count(DISTINCT task_id) FROM mediagate_billing_ledger WHERE kind = 'charge'") === String(tasks.size),
    "at most one refund per task":
      sql("SELECT count(*) - count(DISTINCT task_id) FROM mediagate_billing_ledger WHERE kind = 'refund'") === "0",
    "ledger = balances": sql(`SELECT count(*) FROM mediagate_billing_accounts a WHERE balance_micros <>
      (SELECT COALESCE(sum(amount_micros), 0) FROM mediagate_billing_ledger l WHERE l.account_id = a.account_id)`) ===
      "0",
    "no 5xx but 503": [...stats.keys()].every((label) => !/ 5\d\d$/.test(label) || label.endsWith(" 503"))
  }
  for (const [check, ok] of Object.entries(checks)) console.log(`${ok ? "ok  " : "FAIL"} ${check}`)
  process.exitCode = Object.values(checks).every(Boolean) ? 0 : 1
} finally {
  await Promise.all(nodes.map((node) => node.stop()))
  database.drop()
}
