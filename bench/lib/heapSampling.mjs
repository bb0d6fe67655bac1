/**
 * Preloaded into a benchmarked server (`--import`) by `--profile-heap`: V8's sampling heap profiler, counting every
 * allocation (objects already collected included, which `node --heap-prof` leaves out), from `HEAP_PROFILE_SKIP_MS`
 * after start (default 5000: past the start-up and most of the warm-up) until the process exits. With
 * `HEAP_PROFILE_START=signal` the bench marks its load instead: the first `SIGUSR2` starts the sampling and the next
 * one ends it (what the bench reads after its load is left out). Each thread writes its own profile to
 * `HEAP_PROFILE_DIR`: `Heap.<pid>.heapprofile`, a worker thread's `Heap.<pid>-<threadId>.heapprofile` (open them in
 * Chrome DevTools' Memory tab).
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { join } from "node:path"
import { isMainThread, threadId } from "node:worker_threads"

const session = new Session()
session.connect()
const options = {
  samplingInterval: 8192,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true
}
session.post("HeapProfiler.enable")
let sampling = false
const begin = () => {
  sampling = true
  session.post("HeapProfiler.startSampling", options)
}
const onSignal = process.env.HEAP_PROFILE_START === "signal"
if (!onSignal) setTimeout(begin, Number(process.env.HEAP_PROFILE_SKIP_MS ?? 5000)).unref()
const file = join(
  process.env.HEAP_PROFILE_DIR ?? ".",
  `Heap.${process.pid}${isMainThread ? "" : `-${threadId}`}.heapprofile`
)
const stop = () => {
  if (!sampling) return
  sampling = false
  // an inspector session of the process's own thread answers synchronously
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error === null && result !== undefined) writeFileSync(file, JSON.stringify(result.profile))
  })
}
process.on("exit", stop)
// the main thread gets the signal and tells the worker threads
const toggle = () => (sampling ? stop() : begin())
const signals = new BroadcastChannel("mediagate-bench-heap-profile")
signals.unref()
signals.onmessage = toggle
if (isMainThread && onSignal) {
  process.on("SIGUSR2", () => {
    signals.postMessage("toggle")
    toggle()
  })
}
