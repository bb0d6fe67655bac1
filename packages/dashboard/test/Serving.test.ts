/**
 * The dashboard as the composed server serves it (SQLite and PostgreSQL): index.html with a strict CSP and no
 * inline script, hashed assets cached for a year (gzip when accepted), index.html never cached, client-side
 * routes answered with index.html, unknown assets and other methods refused in the envelope, the API's 404s
 * untouched, `MEDIAGATE_DASHBOARD=false` switching it off; and the ledger endpoint the balance view reads
 * (`GET /api/v1/balance/ledger`) on the real billing storage.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Dashboard } from "../src/index.js"
import { databases, type Running, start } from "./server.js"

const get = (running: Running, path: string, init: RequestInit = {}) => fetch(`${running.baseUrl}${path}`, init)

for (const database of databases) {
  describe(`dashboard served by the composed server (${database})`, () => {
    let running: Running
    beforeAll(async () => {
      running = await start(database)
    })
    afterAll(() => running?.close())

    it("serves index.html with a strict CSP, no inline script or style, never cached", async () => {
      const answer = await get(running, "/dashboard")
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toBe("text/html; charset=utf-8")
      const csp = answer.headers.get("content-security-policy")
      expect(csp).toBe(Dashboard.contentSecurityPolicy)
      expect(csp).toContain("default-src 'self'")
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("style-src 'self'")
      expect(csp).toContain("connect-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).not.toContain("unsafe-inline")
      expect(answer.headers.get("cache-control")).toBe("no-cache")
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff")
      const html = await answer.text()
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
      expect(scripts.length).toBe(1)
      for (const [, attributes, body] of scripts) {
        expect(attributes).toMatch(/src="\.\/dashboard\/assets\/app-[A-Z0-9]{8}\.js"/)
        expect(body!.trim()).toBe("")
      }
      expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i)
      expect(html).toMatch(/<link rel="stylesheet" href="\.\/dashboard\/assets\/app-[A-Z0-9]{8}\.css">/)
    })

    it("answers client-side routes with index.html, its URLs relative to the page, and serves hashed assets for a year", async () => {
      const index = await (await get(running, "/dashboard")).text()
      // the same page at every depth, but for the way back to the app's root (any mount prefix is kept)
      for (
        const [route, root] of [
          ["/dashboard/", "../"],
          ["/dashboard/tasks", "../"],
          ["/dashboard/tasks/task_01ABC?status=failed", "../../"],
          ["/dashboard/admin/accounts/acct_1", "../../../"]
        ] as const
      ) {
        const answer = await get(running, route)
        expect(answer.status, route).toBe(200)
        expect(await answer.text(), route).toBe(index.replaceAll("\"./", `"${root}`))
      }
      expect(index).toContain(`<meta name="mediagate-root" content="./">`)
      const pathOf = (url: string) => new URL(url, `${running.baseUrl}/dashboard`).pathname
      const entry = pathOf(/src="([^"]+)"/.exec(index)![1]!)
      expect(entry).toMatch(/^\/dashboard\/assets\/app-[A-Z0-9]{8}\.js$/)
      expect((await get(running, entry)).headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      // the entry's chunks, preloaded by the page; the largest is checked with its gzip twin
      const preloaded = [...index.matchAll(/rel="modulepreload" href="([^"]+)"/g)].map((match) => pathOf(match[1]!))
      expect(preloaded.length).toBeGreaterThan(0)
      const sizes = await Promise.all(preloaded.map(async (path) => {
        const answer = await get(running, path, { headers: { "accept-encoding": "identity" } })
        expect(answer.status, path).toBe(200)
        return [path, (await answer.arrayBuffer()).byteLength] as const
      }))
      const [script] = [...sizes].sort((a, b) => b[1] - a[1])[0]!
      expect(script).toMatch(/^\/dashboard\/assets\/chunk-[A-Z0-9]{8}\.js$/)
      const js = await get(running, script, { headers: { "accept-encoding": "identity" } })
      expect(js.status).toBe(200)
      expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(js.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(js.headers.get("content-encoding")).toBeNull()
      const plain = new Uint8Array(await js.arrayBuffer())
      expect(plain.length).toBeGreaterThan(10_000)
      // fetch asks for gzip and decodes it: the same bytes
      const gzipped = await get(running, script)
      expect(gzipped.headers.get("content-encoding")).toBe("gzip")
      // compared as buffers: toEqual walks 0.5 MB element by element for seconds, past the server's keep-alive
      expect(Buffer.from(await gzipped.arrayBuffer()).equals(plain)).toBe(true)
      const head = await get(running, script, { method: "HEAD" })
      expect(head.status).toBe(200)
    })

    it("refuses unknown assets and other methods in the envelope; the API's 404s stay the API's", async () => {
      const missing = await get(running, "/dashboard/assets/app-AAAAAAAA.js")
      expect(missing.status).toBe(404)
      expect(await missing.json()).toMatchObject({ success: false, error: { code: "NOT_FOUND" } })
      const traversal = await get(running, "/dashboard/assets/..%2F..%2Fpackage.json")
      expect(traversal.status).toBe(404)
      const post = await get(running, "/dashboard/tasks", { method: "POST", body: "{}" })
      expect(post.status).toBe(405)
      expect(post.headers.get("allow")).toBe("GET, HEAD")
      expect(await post.json()).toMatchObject({ success: false, error: { code: "METHOD_NOT_ALLOWED" } })
      const other = await get(running, "/dashboards")
      expect(other.status).toBe(404)
      expect(await other.json()).toMatchObject({
        success: false,
        error: { code: "NOT_FOUND", message: "no route for GET /dashboards" }
      })
      expect(other.headers.get("content-security-policy")).toBeNull()
    })

    it("GET /api/v1/balance/ledger: newest first, kind filter, keyset pages, permission and validation errors", async () => {
      const auth = { authorization: `Bearer ${running.keys.live}` }
      await running.mediagate.admin.credit(running.keys.account, { amount: 2.5, note: "first" })
      await running.mediagate.admin.credit(running.keys.account, { amount: 1.25, note: "second" })
      const first = await get(running, "/api/v1/balance/ledger?limit=1", { headers: auth })
      expect(first.status).toBe(200)
      const page1 = await first.json()
      expect(page1.data).toHaveLength(1)
      expect(page1.data[0]).toMatchObject({ kind: "top_up", amount: 1.25, task_id: null })
      expect(page1.pagination.hasMore).toBe(true)
      const total = page1.pagination.total
      expect(total).toBeGreaterThanOrEqual(2)
      const second = await (await get(running, `/api/v1/balance/ledger?limit=1&cursor=${page1.pagination.cursor}`, {
        headers: auth
      })).json()
      expect(second.data[0]).toMatchObject({ kind: "top_up", amount: 2.5 })
      expect(Number(second.data[0].id)).toBeLessThan(Number(page1.data[0].id))
      const charges = await (await get(running, "/api/v1/balance/ledger?kind=charge", { headers: auth })).json()
      expect(charges).toEqual({ success: true, data: [], pagination: { cursor: null, hasMore: false, total: 0 } })
      for (
        const [query, message] of [
          ["kind=bonus", "kind"],
          ["limit=0", "limit"],
          ["cursor=nope", "cursor: is not a cursor of this list"]
        ] as const
      ) {
        const refused = await get(running, `/api/v1/balance/ledger?${query}`, { headers: auth })
        expect(refused.status, query).toBe(400)
        const body = await refused.json()
        expect(body.error.code).toBe("VALIDATION_ERROR")
        expect(body.error.message).toContain(message)
      }
      const anonymous = await get(running, "/api/v1/balance/ledger")
      expect(anonymous.status).toBe(401)
      // a key without balance:read is refused
      const limited = await running.mediagate.admin.createKey(running.keys.account, {
        name: "reader",
        permissions: { "tasks:read": true }
      })
      const denied = await get(running, "/api/v1/balance/ledger", {
        headers: { authorization: `Bearer ${limited.key}` }
      })
      expect(denied.status).toBe(403)
      expect((await denied.json()).error.code).toBe("KEY_PERMISSION_DENIED")
    })
  })
}

describe("MEDIAGATE_DASHBOARD=false", () => {
  it("serves no dashboard: /dashboard is the API's 404", async () => {
    const running = await start("sqlite", { MEDIAGATE_DASHBOARD: "false" })
    try {
      const answer = await get(running, "/dashboard")
      expect(answer.status).toBe(404)
      expect(await answer.json()).toMatchObject({ success: false, error: { code: "NOT_FOUND" } })
    } finally {
      await running.close()
    }
  })
})
