import fs from "node:fs"
const tick = 100
const sample = () => {
  const out = {}
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
      const group = name.startsWith("postgres") ? "postgres" : cmd.includes("examples/server/dist/main.js") ? "server" : name === "node" || cmd.includes("tsx") ? "node-other" : "other"
      out[group] = (out[group] ?? 0) + (Number(f[11]) + Number(f[12])) * 1000 / tick
    } catch {}
  }
  return out
}
let prev = sample()
setInterval(() => {
  const now = sample(); const d = {}
  for (const k of Object.keys(now)) d[k] = Math.round(now[k] - (prev[k] ?? 0))
  prev = now
  fs.appendFileSync("/tmp/cpu.jsonl", JSON.stringify({ t: new Date().toISOString().slice(14, 19), ...d }) + "\n")
}, 1000)
