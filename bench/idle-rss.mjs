#!/usr/bin/env node
/**
 * Idle memory of the production server: starts `node examples/server/dist/main.js` (built by `npm run build`) on a
 * fresh SQLite data folder, sends a few requests, then samples its resident set size (RSS) while it idles, beside
 * a bare `node:http` server in the same run as the baseline. Prints the figures and their ratio.
 *
 *   npm run bench:rss [-- --seconds 30]
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const seconds = Number(process.argv[process.argv.indexOf("--seconds") + 1]) || 30
const root = fileURLToPath(new URL("..", import.meta.url))

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

const rssMb = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const measure = async (name, args, env) => {
  const port = await freePort()
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", MEDIAGATE_ACCESS_LOG: "false", ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (i > 600) throw new Error(`${name} did not start`)
    try {
      await fetch(`${base}/readyz`)
      break
    } catch {
      await sleep(100)
    }
  }
  for (let i = 0; i < 20; i++) await fetch(`${base}/readyz`).then((r) => r.arrayBuffer())
  const started = rssMb(child.pid)
  const samples = []
  for (let s = 0; s < seconds; s++) {
    await sleep(1000)
    samples.push(rssMb(child.pid))
  }
  child.kill("SIGTERM")
  await new Promise((r) => child.once("exit", r))
  const idle = samples.slice(-5).reduce((a, b) => a + b, 0) / Math.min(5, samples.length)
  return { name, started, idle, max: Math.max(started, ...samples) }
}

const baseline = await measure("bare node:http", [
  "-e",
  "require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')"
], {})
const mediagate = await measure("mediagate (SQLite)", [join("examples", "server", "dist", "main.js")], {
  MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-bench-rss-"))
})

console.log(`idle RSS after ${seconds} s (mean of the last 5 samples), MB`)
for (const r of [baseline, mediagate]) {
  console.log(`  ${r.name.padEnd(22)} just started ${r.started.toFixed(1).padStart(6)}   idle ${r.idle.toFixed(1).padStart(6)}   max ${r.max.toFixed(1).padStart(6)}`)
}
console.log(`  ratio mediagate / bare node: ${(mediagate.idle / baseline.idle).toFixed(2)}`)
