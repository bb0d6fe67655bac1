/**
 * Where a `perf record -g` profile of the server spends its samples, by source module: the JIT frames of the
 * bundled server (`examples/server/dist/server.js`, started with `--perf-basic-prof`) are mapped back to the module
 * they came from through the bundle's `// <path>` comment lines; other frames are grouped as V8's compiler, its
 * garbage collector, its builtins, the kernel, libc or native code.
 *
 *   perf record -F 999 -g -p <pid> -- sleep 8      (or -a: every process; --tids picks the server's threads)
 *   perf script -F tid,ip,sym | node bench/lib/perfModules.mjs [--tids 123,124] [--inclusive] [--functions]
 *     [--top 40] [--bundle examples/server/dist/server.js]
 *
 * - default (self): each sample counted once, for its innermost frame (a JavaScript module, or a native group);
 * - `--inclusive`: each sample counted for every JavaScript module (or function, with `--functions`) on its stack,
 *   so a module's share includes what it called. Effect's run loop runs continuations without their callers on the
 *   stack, so an inclusive share undercounts code that runs inside fibers.
 *
 * The thread ids of a process: `perf script -F pid,tid | sort | uniq -c`. Prints percentages of the samples read.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const args = process.argv.slice(2)
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`)
  return at === -1 ? fallback : args[at + 1]
}
const inclusive = args.includes("--inclusive")
const functions = args.includes("--functions")
const top = Number(option("top", "40"))
const tids = option("tids", "") === "" ? undefined : new Set(option("tids", "").split(","))
const bundle = option("bundle", fileURLToPath(new URL("../../examples/server/dist/server.js", import.meta.url)))

/** The bundle's module marks: [first line, module path], in line order. */
const marks = []
readFileSync(bundle, "utf8").split("\n").forEach((line, i) => {
  const mark = /^\/\/ (\S+\.(?:js|ts|mjs|cjs))$/.exec(line)
  if (mark) marks.push([i + 1, mark[1].replace(/^.*node_modules\//, "nm/").replace(/^(\.\.\/)+/, "")])
})
/** The module of a line of the bundle (the last mark at or before it). */
const moduleAt = (line) => {
  let low = 0
  let high = marks.length - 1
  let found = "?"
  while (low <= high) {
    const middle = (low + high) >> 1
    if (marks[middle][0] <= line) {
      found = marks[middle][1]
      low = middle + 1
    } else high = middle - 1
  }
  return found
}

/** A JavaScript frame's module and function, or undefined for a native frame. */
const jsFrame = (text) => {
  const js = /JS:[*~^+]?(\S*) (\S+?):(\d+):\d+/.exec(text)
  if (!js) return undefined
  const module = js[2].endsWith("server.js")
    ? moduleAt(Number(js[3]))
    : js[2].replace(/^.*node_modules\//, "nm/").replace(/^file:\/\//, "")
  return { module, fn: `${js[1] || "(anonymous)"} ${module}:${js[3]}` }
}

/** A native frame's group. */
const nativeGroup = (text) => {
  if (/\[unknown\]|^\s*[0-9a-f]+\s*$/.test(text)) return "unknown"
  if (/ffffffff[0-9a-f]+ /.test(text) || /\[k\]/.test(text)) return "kernel"
  if (/Builtins?_(\w+)/.test(text)) return `V8 builtin ${/Builtins?_(\w+)/.exec(text)[1]}`
  if (/v8::internal::compiler|[Mm]aglev|OptimizingCompile/.test(text)) return "V8 compiler"
  if (
    /v8::internal::(Heap|Scaveng|Mark|Sweep|Concurrent|GC|Minor|Evacuat|PagedSpace|NewSpace|MemoryAllocator)/.test(text)
  ) {
    return "V8 garbage collector"
  }
  if (/v8::/.test(text)) return "V8 runtime"
  if (/node::|uv_|llhttp/.test(text)) return "Node native"
  if (/sqlite3|fts5|Fts5|wal[A-Z]|[Bb]tree|pcache|Vdbe|better_sqlite3/.test(text)) return "SQLite"
  if (/libc|malloc|free|memcpy|memmove|memset/.test(text)) return "libc"
  return "other native"
}

const counts = new Map()
let samples = 0
for (const block of readFileSync(0, "utf8").split("\n\n")) {
  const lines = block.split("\n").filter((line) => line.trim() !== "")
  if (lines.length < 2) continue
  if (tids !== undefined && !tids.has(lines[0].trim().split(/\s+/)[0])) continue
  samples++
  const frames = lines.slice(1)
  if (inclusive) {
    const seen = new Set()
    for (const frame of frames) {
      const js = jsFrame(frame)
      if (js) seen.add(functions ? js.fn : js.module)
    }
    for (const key of seen) counts.set(key, (counts.get(key) ?? 0) + 1)
  } else {
    const js = jsFrame(frames[0])
    const key = js ? (functions ? js.fn : js.module) : nativeGroup(frames[0])
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
}
console.log(
  `${samples} samples${tids ? ` of threads ${[...tids].join(", ")}` : ""}, ${inclusive ? "inclusive" : "self"}`
)
for (const [key, count] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${((100 * count) / Math.max(1, samples)).toFixed(1).padStart(5)}% ${key}`)
}
