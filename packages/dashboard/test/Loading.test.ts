/**
 * The dashboard's files as the server reads them on the first request: a file listed in the assets folder but gone
 * before it is read (a build replacing the folder meanwhile) is left out, and the rest is served, gzip twins
 * included.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { Dashboard } from "../src/index.js"

describe("the dashboard's files", () => {
  it("a listed file that cannot be read is left out; the page and the other assets are served", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mg-dashboard-assets-"))
    try {
      const script = `console.log(${JSON.stringify("x".repeat(2000))})`
      writeFileSync(join(dir, "index.html"), "<!doctype html><script type=\"module\" src=\"%ASSETS%/app-AAAAAAAA.js\">")
      writeFileSync(join(dir, "app-AAAAAAAA.js"), script)
      writeFileSync(join(dir, "app-AAAAAAAA.js.gz"), gzipSync(script))
      // listed, but reading it fails as for a file renamed away between the listing and the read
      symlinkSync(join(dir, "gone"), join(dir, "chunk-BBBBBBBB.js"))
      const handler = HttpApp.toWebHandler(Dashboard.make({ assetsDir: dir }).httpApp)
      const page = await handler(new Request("http://localhost/dashboard"))
      expect(page.status).toBe(200)
      expect(await page.text()).toContain("app-AAAAAAAA.js")
      const asset = await handler(
        new Request("http://localhost/dashboard/assets/app-AAAAAAAA.js", { headers: { "accept-encoding": "gzip" } })
      )
      expect(asset.status).toBe(200)
      expect(asset.headers.get("content-encoding")).toBe("gzip")
      const gone = await handler(new Request("http://localhost/dashboard/assets/chunk-BBBBBBBB.js"))
      expect(gone.status).toBe(404)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
