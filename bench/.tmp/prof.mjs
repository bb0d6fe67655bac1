// usage: node prof.mjs file.cpuprofile [fromSec] [toSec]  (seconds relative to profile start); prints top self-time
import fs from "node:fs"
const [file, from, to] = process.argv.slice(2)
const p = JSON.parse(fs.readFileSync(file, "utf8"))
const byId = new Map(p.nodes.map((n) => [n.id, n]))
let t = p.startTime
const self = new Map(); const pkg = new Map(); let total = 0
const times = []
for (let i = 0; i < p.samples.length; i++) { t += p.timeDeltas[i]; times.push(t) }
const dur = (p.endTime - p.startTime) / 1e6
// find activity per second
const perSec = new Array(Math.ceil(dur) + 1).fill(0)
for (let i = 0; i < p.samples.length; i++) { const n = byId.get(p.samples[i]); if (n.callFrame.functionName !== "(idle)") perSec[Math.floor((times[i] - p.startTime) / 1e6)]++ }
if (!from) { console.log("duration", dur.toFixed(1), "busy samples per second:", perSec.join(" ")); process.exit(0) }
const f = p.startTime + Number(from) * 1e6, e = p.startTime + Number(to ?? 1e9) * 1e6
for (let i = 0; i < p.samples.length; i++) {
  if (times[i] < f || times[i] > e) continue
  const n = byId.get(p.samples[i]); const cf = n.callFrame
  if (cf.functionName === "(idle)") continue
  total++
  const key = `${cf.functionName || "(anon)"} ${cf.url.replace(/.*node_modules\//, "nm/").replace(/.*packages\//, "pk/")}:${cf.lineNumber}`
  self.set(key, (self.get(key) ?? 0) + 1)
  const m = cf.url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/) ?? cf.url.match(/packages\/([^/]+)/)
  const g = m ? m[1] : (cf.url ? (cf.url.startsWith("node:") ? "node-core" : cf.url) : cf.functionName)
  pkg.set(g, (pkg.get(g) ?? 0) + 1)
}
console.log("samples", total)
for (const [k, v] of [...pkg].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log((100 * v / total).toFixed(1).padStart(5), k)
console.log("---")
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log((100 * v / total).toFixed(1).padStart(5), k)
