/**
 * Rate limits across nodes (docs/security.md#rate-limits): two built server processes on one fresh PostgreSQL
 * database share the per-minute windows, so a key limited to Q requests a minute gets Q answers in all, whichever
 * node it calls, and the rest are `429 RATE_LIMITED` with `Retry-After` and the `RateLimit`/`RateLimit-Policy`
 * fields.
 *
 * Runs on PostgreSQL only: skipped (with a warning) when none answers at 127.0.0.1:5432, failing under `CI=true`.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { awaitBuild } from "./build.js"
import { freePort, psql, type RunningServer, runPostgres, startServer } from "./server.js"

if (!runPostgres) {
  console.warn("PostgreSQL is not running at 127.0.0.1:5432: the two-process rate limit test is skipped")
}

const adminToken = "ratelimit-admin-token-0123456789abcdef"

awaitBuild()

describe.skipIf(!runPostgres)("rate limits across processes", () => {
  it("two nodes on one database admit a key's quota once in all", async () => {
    const database = `mg_rate_${Date.now().toString(36)}`
    expect(psql(`CREATE DATABASE ${database}`)).toBe(0)
    const nodes: Array<RunningServer> = []
    try {
      const env = {
        HOST: "127.0.0.1",
        DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
        MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-rate-")),
        MEDIAGATE_ADMIN_TOKEN: adminToken,
        MEDIAGATE_ACCESS_LOG: "false",
        MEDIAGATE_WORKERS: "0"
      }
      for (let i = 0; i < 2; i++) nodes.push(await startServer({ ...env, PORT: await freePort() }))
      const [a, b] = nodes.map((node) => node.baseUrl) as [string, string]

      const admin = async (path: string, body: unknown) => {
        const response = await fetch(`${a}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        })
        return (await response.json()) as { data: Record<string, unknown> }
      }
      const account = String((await admin("/admin/v1/accounts", { name: "rate" })).data["id"])
      const quota = 40
      const created = await admin(`/admin/v1/accounts/${account}/api-keys`, {
        name: "limited",
        rateLimit: { requestsPerMinute: quota }
      })
      const key = String(created.data["key"])

      // 100 requests at once, alternating nodes, within one minute's window: started where 30 s of the window
      // remain (the windows are whole minutes), which a busy machine's burst does not outlast; were a window edge to
      // fall inside it, a second window would admit more, never fewer than the quota, never more than twice
      const left = 60_000 - (Date.now() % 60_000)
      if (left < 30_000) await new Promise((resolve) => setTimeout(resolve, left + 10))
      const answers = await Promise.all(
        Array.from(
          { length: 100 },
          (_, i) =>
            fetch(`${i % 2 === 0 ? a : b}/api/v1/balance`, { headers: { authorization: `Bearer ${key}` } }).then(
              async (response) => ({ status: response.status, headers: response.headers, body: await response.json() })
            )
        )
      )
      const ok = answers.filter((x) => x.status === 200)
      const limited = answers.filter((x) => x.status === 429)
      expect(ok.length + limited.length).toBe(100)
      expect(ok.length).toBeGreaterThanOrEqual(quota)
      expect(ok.length).toBeLessThanOrEqual(2 * quota)
      // both nodes refused some: neither counted alone
      expect(new Set(answers.flatMap((x, i) => x.status === 429 ? [i % 2] : [])).size).toBe(2)
      for (const refused of limited) {
        expect(refused.body).toMatchObject({ success: false, error: { code: "RATE_LIMITED" } })
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
        expect(refused.headers.get("ratelimit-policy")).toMatch(/q=40;w=60/)
        expect(refused.headers.get("ratelimit")).toMatch(/r=0;t=\d+/)
      }
    } finally {
      for (const node of nodes) await node.stop()
      psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    }
  }, 180_000)
})
