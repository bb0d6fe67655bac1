/**
 * Preloaded into a benchmarked server (`--import`) by `--profile-heap`: V8's sampling heap profiler, counting every
 * allocation (objects already collected included, which `node --heap-prof` leaves out), from `HEAP_PROFILE_SKIP_MS`
 * after start (default 5000: past the start-up and most of the warm-up) until the process exits; the profile is
 * written to `HEAP_PROFILE_DIR` as `Heap.<pid>.heapprofile` (open it in Chrome DevTools' Memory tab).
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { join } from "node:path"

const session = new Session()
session.connect()
const options = {
  samplingInterval: 8192,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true
}
session.post("HeapProfiler.enable")
const begin = () => session.post("HeapProfiler.startSampling", options)
setTimeout(begin, Number(process.env.HEAP_PROFILE_SKIP_MS ?? 5000)).unref()
process.on("exit", () => {
  // an inspector session of the process's own thread answers synchronously
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error === null && result !== undefined) {
      writeFileSync(
        join(process.env.HEAP_PROFILE_DIR ?? ".", `Heap.${process.pid}.heapprofile`),
        JSON.stringify(result.profile)
      )
    }
  })
})
