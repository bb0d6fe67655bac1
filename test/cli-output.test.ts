/**
 * What the built `mediagate` command and server write into a pipe (issue 34): no colour unless `FORCE_COLOR`
 * (packages/node/src/internal/terminal.ts), and a first start that names the keys file instead of printing the keys,
 * in one JSON line under `MEDIAGATE_LOG_FORMAT=json` (internal/firstKeys.ts). The terminal cases are unit-tested
 * in packages/node/test/Terminal.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { run } from "@mediagate/testing/processes"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { awaitBuild } from "./build.js"
import { bootstrapKeys, freePort, startServer } from "./server.js"

/** The built `mediagate` command. */
const bin = fileURLToPath(new URL("../packages/node/dist/bin.js", import.meta.url))

const escape = "\x1b["

/** `mediagate <args>` with output to pipes; its stdout and stderr together. */
const mediagate = async (args: ReadonlyArray<string>, env: Record<string, string | undefined>) => {
  const { FORCE_COLOR: _force, NO_COLOR: _no, ...inherited } = process.env
  const result = await run(process.execPath, [bin, ...args], { env: { ...inherited, ...env } })
  return `${result.stdout}${result.stderr}`
}

awaitBuild()

describe("mediagate into a pipe", () => {
  it(
    "writes its help and its errors without colour, with colour under FORCE_COLOR, without under NO_COLOR",
    async () => {
      const [plain, refused, forced, no] = await Promise.all([
        mediagate(["--help"], {}),
        mediagate(["--no-such-option"], {}),
        mediagate(["--help"], { FORCE_COLOR: "1" }),
        mediagate(["--help"], { NO_COLOR: "1" })
      ])
      expect(plain).toContain("USAGE")
      expect(plain).not.toContain(escape)
      expect(refused).not.toContain(escape)
      expect(forced).toContain(escape)
      expect(no).not.toContain(escape)
    },
    180_000
  )

  it("first start with JSON logs: one JSON line per event, key hints and a mode-600 keys file", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mg-first-keys-"))
    const settings = { PORT: await freePort(), MEDIAGATE_DATA_DIR: dataDir, MEDIAGATE_LOG_FORMAT: "json" }
    const server = await startServer(settings)
    let keys: ReturnType<typeof bootstrapKeys>
    try {
      const lines = server.output().split("\n").filter((line) => line.trim() !== "")
      const events = lines.map((line) => JSON.parse(line) as { message: string; annotations: Record<string, string> })
      const first = events.filter((event) => event.message.includes("created a first account"))
      expect(first).toHaveLength(1)
      keys = bootstrapKeys(server.output())
      expect(keys).toBeDefined()
      const file = join(dataDir, "first-keys.json")
      expect(first[0]!.annotations).toEqual({
        account_id: keys!.account,
        live_key: `mg_live_…${keys!.live.slice(-4)}`,
        test_key: `mg_test_…${keys!.test.slice(-4)}`,
        keys_file: file
      })
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(JSON.parse(readFileSync(file, "utf8")))
        .toEqual({ account: keys!.account, live: keys!.live, test: keys!.test })
      // never a full key in the log
      expect(server.output()).not.toContain(keys!.live)
      expect(server.output()).not.toContain(keys!.test)
      // the keys work
      const balance = await fetch(`${server.baseUrl}/api/v1/balance`, {
        headers: { authorization: `Bearer ${keys!.live}` }
      })
      expect(balance.status).toBe(200)
    } finally {
      expect(await server.stop()).toBe(0)
    }
    // a later start makes no account and warns while the file is there
    const again = await startServer(settings)
    try {
      expect(bootstrapKeys(again.output())).toBeUndefined()
      const warnings = again.output().split("\n").filter((line) => line.includes("first-keys.json"))
      expect(warnings.map((line) => (JSON.parse(line) as { logLevel: string }).logLevel)).toEqual(["WARN"])
    } finally {
      expect(await again.stop()).toBe(0)
    }
  }, 120_000)
})
