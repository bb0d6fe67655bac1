import fs from "node:fs/promises"
import { mkdtempSync } from "node:fs"
import { randomBytes } from "node:crypto"
const root = mkdtempSync("/tmp/fsput-")
const bytes = randomBytes(30000)
const N = 10000, C = 32
let next = 0
const put = async (i) => {
  const dir = `${root}/tasks/t${i}`
  await fs.mkdir(dir, { recursive: true })
  const tmp = `${dir}/.v.${i}.tmp`
  await fs.writeFile(tmp, bytes)
  await fs.rename(tmp, `${dir}/video-0.mp4`)
}
const t0 = performance.now()
await Promise.all(Array.from({ length: C }, async () => { while (next < N) await put(next++) }))
const ms = performance.now() - t0
console.log(`pool ${process.env.UV_THREADPOOL_SIZE ?? 4}: ${N} puts in ${ms.toFixed(0)} ms = ${(N / ms * 1000).toFixed(0)}/s, cpu ${JSON.stringify(process.cpuUsage())}`)
await fs.rm(root, { recursive: true })
