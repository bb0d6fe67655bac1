/**
 * Outages under load (docs/operations.md#outages): two built servers on one fresh PostgreSQL database, both with
 * workers, take N generation requests (a live key, per-task webhooks to a local receiver) while the database's
 * connections are killed (`pg_terminate_backend`), one node is SIGKILLed and started again, and the database
 * "restarts": every backend of the test database terminated and new connections refused for a few seconds
 * (`ALLOW_CONNECTIONS false`), which is what clients see of a restart without disturbing other suites on the
 * same cluster (`bench/outage.ts` restarts the real cluster).
 *
 * Clients behave as the docs tell them to: an `Idempotency-Key` per request, retried on 503 or a dropped
 * connection. Then, within bounds:
 * - every answer was a 2xx or a 503 `SERVICE_UNAVAILABLE` (never a 500), within a bound (no hang); connection
 *   errors only from the killed node; `/readyz` said 503 during the outage and 200 after;
 * - every request got its task, exactly one task per idempotency key, every task terminal;
 * - each task charged exactly once, refunded at most once (never when it succeeded), and every account's ledger
 *   sums to its balance;
 * - the webhook dispatcher recovered: one per-task delivery per task, none lost or doubled, deliveries sent after
 *   the outage; both nodes `LISTEN` for wakeups again.
 *
 * Runs on PostgreSQL only: skipped (with a warning) when none answers at 127.0.0.1:5432, failing under `CI=true`.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { awaitBuild } from "./build.js"
import {
  type Answer,
  call,
  expectBilledOnce,
  query,
  restartDatabase,
  runLoad,
  sleep,
  terminalList,
  terminateAll,
  unexpectedAnswers
} from "./chaos.js"
import { freePort, psql, type RunningServer, runPostgres, startServer } from "./server.js"

if (!runPostgres) console.warn("PostgreSQL is not running at 127.0.0.1:5432: the chaos test is skipped")

/** Logical requests (each retried until it gets its task). */
const N = 200
/** The longest any one request may take: the pool's connect timeout (2 s here) plus a loaded machine's slack. */
const answerBound = 12_000
const adminToken = "chaos-admin-token-0123456789abcdef"

awaitBuild()

describe.skipIf(!runPostgres)("outages", () => {
  it("two nodes under load survive killed connections, a SIGKILL and a database restart", async () => {
    const database = `mg_chaos_${Date.now().toString(36)}`
    expect(psql(`CREATE DATABASE ${database}`)).toBe(0)
    const nodes: Partial<Record<"a" | "b", RunningServer>> = {}
    let receiver: Server | undefined
    try {
      // per-task webhooks land here: the job ids and when they came
      const hooks: Array<{ readonly job: string; readonly at: number }> = []
      receiver = createServer((request, response) => {
        hooks.push({ job: String(request.headers["x-job-id"]), at: Date.now() })
        request.resume()
        request.on("end", () => response.end("ok"))
      })
      await new Promise<void>((resolve) => receiver!.listen(0, "127.0.0.1", resolve))
      const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`

      const logs = mkdtempSync(join(tmpdir(), "mg-chaos-logs-"))
      const env = {
        HOST: "127.0.0.1",
        DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
        MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-chaos-")),
        MEDIAGATE_ADMIN_TOKEN: adminToken,
        MEDIAGATE_FILE_SECRET: "chaos-file-secret-0123456789abcdef",
        MEDIAGATE_ACCESS_LOG: "false",
        MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true",
        MEDIAGATE_WORKER_LEASE: "3s",
        MEDIAGATE_DB_CONNECT_TIMEOUT: "2s"
      }
      const ports = { a: await freePort(), b: await freePort() }
      const start = async (node: "a" | "b") => (nodes[node] = await startServer({ ...env, PORT: ports[node] }))
      await start("a")
      await start("b")
      const base = { a: nodes.a!.baseUrl, b: nodes.b!.baseUrl }

      // an account with money and a live key
      const admin = (path: string, body: unknown) =>
        call("a", base.a, "admin", path, {
          method: "POST",
          headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        })
      const account = ((await admin("/admin/v1/accounts", { name: "chaos" })).body as { data: { id: string } }).data.id
      expect((await admin(`/admin/v1/accounts/${account}/credits`, { amount: 10_000 })).status).toBe(200)
      const created = await admin(`/admin/v1/accounts/${account}/api-keys`, { name: "chaos", environment: "live" })
      const key = (created.body as { data: { key: string } }).data.key
      const auth = { authorization: `Bearer ${key}` }

      const readiness: Array<Answer> = []
      const began = Date.now()
      const outage = { from: Infinity, to: Infinity }

      // N logical requests at a steady pace over ~6 s, each retried (same Idempotency-Key, the other node next)
      // on a 503 or a dropped connection until it has its task
      // (a model with a short estimate: a task whose completion callback died with its node is found by the
      // engine's safety-net poll 1.25 × the estimate after its submit, here 12.5 s)
      const load = runLoad({
        n: N,
        bases: base,
        key,
        keyPrefix: "chaos",
        began,
        paceMs: 30,
        deadline: began + 120_000,
        clients: 8,
        request: (i) => ({
          path: "/api/v1/vendor4/text-to-image",
          body: { model: "vendor4-3-0-t2i", input: { prompt: `chaos ${i}` }, webhookUrl: hookUrl }
        })
      })

      let loadDone = false
      const probe = (async () => {
        while (!loadDone) {
          readiness.push(await call("a", base.a, "readyz", "/readyz"))
          await sleep(200)
        }
      })()

      // the chaos, while the load runs
      await sleep(1000)
      for (let i = 0; i < 3; i++) {
        terminateAll(database)
        await sleep(300)
      }
      nodes.b!.child.kill("SIGKILL")
      await sleep(300)
      const restarted = start("b")
      await sleep(700)
      outage.from = Date.now()
      await restartDatabase(database, 3000)
      outage.to = Date.now()
      await restarted
      const { answers, taskOf } = await load
      loadDone = true
      await probe

      // every request has its task (none gave up, none got an unexpected answer)
      const unexpected = unexpectedAnswers(answers, "b")
      expect(
        unexpected.slice(0, 5),
        "answers other than 2xx / 503 SERVICE_UNAVAILABLE (or the killed node's dropped connections)"
      ).toEqual([])
      expect(taskOf.size).toBe(N)
      const slowest = answers.reduce((max, a) => Math.max(max, a.ms), 0)
      expect(slowest, "the slowest answer (ms)").toBeLessThan(answerBound)
      const unavailable = answers.filter((a) => a.status === 503).length
      expect(unavailable, "503 answers during the outage").toBeGreaterThan(0)
      console.info(
        `chaos: ${answers.length} answers (${unavailable} × 503, ${
          answers.filter((a) => a.error !== undefined).length
        } dropped ` +
          `by the killed node), slowest ${slowest} ms; outage ${outage.to - outage.from} ms; /readyz ` +
          readiness.filter((a) => a.at >= outage.from && a.at <= outage.to).map((a) => a.status ?? a.error).join(" ")
      )
      const during = readiness.filter((a) => a.at >= outage.from + 500 && a.at + a.ms <= outage.to)
      expect(during.some((a) => a.status === 503), "/readyz during the outage").toBe(true)

      // then every task terminal, every per-task webhook fanned out (bounded wait)
      const tasks = "mediagate_tasks"
      const ledger = "mediagate_billing_ledger"
      const deliveries = "mediagate_webhook_deliveries"
      let settled = false
      while (!settled && Date.now() < began + 240_000) {
        const [active, fannedOut] = query(
          database,
          `SELECT (SELECT count(*) FROM ${tasks} WHERE status NOT IN (${terminalList})),
             (SELECT count(*) FROM ${deliveries} WHERE webhook_id IS NULL)`
        ).split("|").map(Number)
        settled = active === 0 && fannedOut === N
        if (!settled) await sleep(250)
      }
      const statuses = query(database, `SELECT status, count(*) FROM ${tasks} GROUP BY status ORDER BY status`) + "\n" +
        query(
          database,
          `SELECT id, status, polls, upstream_job_id, lease_owner, lease_expires_at - ${Date.now()}, next_run_at - ${Date.now()}
           FROM ${tasks} WHERE status NOT IN (${terminalList}) LIMIT 5`
        )
      if (!settled) {
        for (const [name, node] of Object.entries(nodes)) {
          writeFileSync(join(logs, `node-${name}.log`), node?.output() ?? "")
        }
      }
      expect(settled, `tasks terminal and webhooks fanned out (node logs in ${logs}); statuses:\n${statuses}`).toBe(
        true
      )

      // exactly one task per idempotency key, and they are the tasks the clients were given
      const ids = query(database, `SELECT id FROM ${tasks} ORDER BY id`).split("\n")
      expect(ids).toEqual([...new Set(taskOf.values())].sort())

      // billing: one charge per task, at most one refund (never of a success), ledger = balance
      expectBilledOnce(database, N)
      const balance = await call("b", base.b, "GET", "/api/v1/balance", { headers: auth })
      const micros = Number(query(database, `SELECT sum(amount_micros) FROM ${ledger} WHERE account_id = '${account}'`))
      expect((balance.body as { data: { balance: number } }).data.balance).toBeCloseTo(micros / 1e6, 6)

      // webhooks: one per-task delivery each (none lost or doubled by the fan-out), still being sent after the outage
      expect(
        query(
          database,
          `SELECT count(DISTINCT payload::json #>> '{data,task,id}') FROM ${deliveries} WHERE webhook_id IS NULL`
        )
      )
        .toBe(String(N))
      expect(hooks.some((hook) => hook.at > outage.to)).toBe(true)

      // both nodes listen for wakeups again (a LISTEN connection for each thread of a node: two where the server runs
      // on two threads, MEDIAGATE_WORKER_THREAD=auto; a lost one is found by its probe)
      const listeners = String(2 * (availableParallelism() >= 2 ? 2 : 1))
      let listening = ""
      for (const until = Date.now() + 45_000; listening !== listeners && Date.now() < until; await sleep(250)) {
        listening = query(
          database,
          `SELECT count(*) FROM pg_stat_activity WHERE datname = '${database}' AND query LIKE 'LISTEN %'`
        )
      }
      expect(listening, "LISTEN connections").toBe(listeners)

      // both nodes ready again
      for (const node of ["a", "b"] as const) {
        expect((await call(node, base[node], "readyz", "/readyz")).status).toBe(200)
      }
    } finally {
      psql(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`)
      for (const node of Object.values(nodes)) node?.child.kill("SIGKILL")
      receiver?.close()
      psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    }
  }, 420_000)
})
