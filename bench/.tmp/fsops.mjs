import fs from "node:fs"
import { mkdtempSync } from "node:fs"
import { randomBytes } from "node:crypto"
const root = mkdtempSync((process.env.D ?? "/tmp") + "/fsops-")
const bytes = randomBytes(Number(process.argv[2] ?? 30000))
const N = 3000
const time = (name, f) => { const c0 = process.cpuUsage(); const t0 = performance.now(); for (let i = 0; i < N; i++) f(i); const c = process.cpuUsage(c0); console.log(name.padEnd(12), ((performance.now() - t0) / N * 1000).toFixed(0), "µs wall", (c.system / N).toFixed(0), "µs sys") }
time("mkdir", (i) => fs.mkdirSync(`${root}/t${i}`, { recursive: true }))
time("mkdir again", (i) => fs.mkdirSync(`${root}/t${i}`, { recursive: true }))
time("open", (i) => { fs.closeSync(fs.openSync(`${root}/t${i}/a.tmp`, "w")) })
time("write", (i) => { const fd = fs.openSync(`${root}/t${i}/a.tmp`, "w"); fs.writeSync(fd, bytes); fs.closeSync(fd) })
time("rename", (i) => fs.renameSync(`${root}/t${i}/a.tmp`, `${root}/t${i}/v.mp4`))
time("writeNew", (i) => { fs.writeFileSync(`${root}/t${i}/b`, bytes) })
fs.rmSync(root, { recursive: true })
{
const root2 = mkdtempSync((process.env.D ?? "/tmp") + "/fsops2-")
fs.writeFileSync(`${root2}/blob`, bytes)
fs.mkdirSync(`${root2}/d`)
time("link", (i) => fs.linkSync(`${root2}/blob`, `${root2}/d/l${i}`))
time("unlink", (i) => fs.unlinkSync(`${root2}/d/l${i}`))
time("mkdir2", (i) => fs.mkdirSync(`${root2}/d/m${i}`))
time("rmdir", (i) => fs.rmdirSync(`${root2}/d/m${i}`))
time("mkdir3", (i) => fs.mkdirSync(`${root2}/d/m${i}`))
time("copyfile", (i) => fs.copyFileSync(`${root2}/blob`, `${root2}/d/m${i}/c`, fs.constants.COPYFILE_FICLONE))
fs.rmSync(root2, { recursive: true })
}
