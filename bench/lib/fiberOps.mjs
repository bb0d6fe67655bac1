#!/usr/bin/env node
/**
 * Counts the Effect fiber operations of the built server, by the code they run for: a diagnostic, not a benchmark.
 *
 * 1. `node bench/lib/fiberOps.mjs patch` copies the built server (`examples/server/dist`, its `package.json`) to
 *    `bench/profiles/fiber-ops/examples/server` (inside the repository, so that `node_modules` resolves) and patches
 *    the copy's `FiberRuntime.runLoop` to count each operation it runs. It writes the counts to
 *    `/tmp/fiber-ops-<pid>-<thread>.json` every 2 s and at exit, a file per thread (`0`: the main thread, which
 *    answers HTTP; `1`: the worker thread of a server on two threads).
 * 2. Run any benchmark on that copy with `--allow-natives-syntax` (the patch reads V8's source positions), e.g.
 *    `npx tsx bench/throughput.ts --db sqlite --before bench/profiles/fiber-ops --node-options
 *    "--max-old-space-size=256 --max-semi-space-size=16 --allow-natives-syntax"` (the copy is the `--before` server).
 * 3. `node bench/lib/fiberOps.mjs report /tmp/fiber-ops-<pid>-<thread>.json <tasks> [--top 60] [--by file]` prints
 *    the operations a task, by source line (or file) of their owner (with `--via`, and the Effect function each
 *    runs, when it is one), then the fibers forked a task, by the owner on
 *    the parent's stack and the nearest of Effect's combinators there (what forked it).
 *
 * An operation's owner is the function it runs (a continuation, a `sync` body, a generator's own function) when that
 * lies outside `effect` and `@effect/*`. Otherwise it is the nearest such function on the fiber's stack of
 * continuations. So Effect's combinators count for the code that called them. Module bounds come from the `// path`
 * comments esbuild writes before each module of the bundle.
 */
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const copy = join(root, "bench", "profiles", "fiber-ops", "examples", "server")
const headerMarker = "const require = __mediagateRequire(import.meta.url)\n"
const loopMarker = "          try {\n            cur = this.currentTracer.context(() => {"
const call = "          globalThis.__fiberOps(cur, this);\n"

/** The counting code put after the bundle's banner (its lines are subtracted again by `report`). */
const header = `{
  const fs = require("node:fs");
  const source = fs.readFileSync(new URL(import.meta.url), "utf8");
  const starts = [], library = [];
  const modules = /^\\s*\\/\\/ ((?:node_modules|packages)\\/\\S+\\.(?:js|mjs|cjs|ts))$/gm;
  for (let m; (m = modules.exec(source)) !== null;) {
    starts.push(m.index);
    library.push(/^node_modules\\/(effect|@effect)\\//.test(m[1]));
  }
  const inLibrary = (pos) => {
    if (pos < starts[0]) return true;
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (starts[mid] <= pos) lo = mid; else hi = mid - 1; }
    return library[lo];
  };
  const position = (fn) => { if (typeof fn !== "function") return -1; try { return %FunctionGetScriptSourcePosition(fn); } catch { return -1; } };
  const generator = (it) => { try { return %GeneratorGetFunction(it); } catch { return undefined; } };
  const frame = (f) => f === undefined ? undefined : f._op === "Iterator" ? generator(f.effect_instruction_i0)
    : f._op === "OnSuccessAndFailure" ? f.effect_instruction_i2 : f.effect_instruction_i1;
  const counts = new Map();
  globalThis.__fiberOps = (op, fiber) => {
    let fn;
    switch (op._op) {
      case "OnSuccess": case "OnFailure": fn = op.effect_instruction_i1; break;
      case "OnSuccessAndFailure": fn = op.effect_instruction_i2; break;
      case "Sync": case "Async": case "WithRuntime": fn = op.effect_instruction_i0; break;
      case "Commit": fn = op.commit; break;
      case "Iterator": fn = generator(op.effect_instruction_i0); break;
    }
    let pos = position(fn);
    // the library function the operation runs, if it is one of Effect's (its combinator)
    const via = pos >= 0 && inLibrary(pos) ? pos : -1;
    if (pos < 0 || inLibrary(pos)) {
      pos = -1;
      const stack = fiber._stack;
      for (let i = stack.length - 1; i >= 0 && i >= stack.length - 60; i--) {
        const p = position(frame(stack[i]));
        if (p >= 0 && !inLibrary(p)) { pos = p; break; }
      }
    }
    // an operation of a fiber without code outside Effect on its stack counts for where the fiber was forked
    const key = pos < 0 && fiber.__origin !== undefined ? "in:" + fiber.__origin + ":" + via : pos + ":" + via;
    counts.set(key, (counts.get(key) || 0) + 1);
  };
  // a fiber forked: keyed by the nearest code outside Effect on the parent's stack and the nearest combinator of
  // Effect's that forks it (its continuation on the parent's stack), "fork:<owner>:<combinator>"
  globalThis.__fiberFork = (parent) => {
    const stack = parent._stack;
    let own = -1, via = -1;
    for (let i = stack.length - 1; i >= 0 && i >= stack.length - 60; i--) {
      const p = position(frame(stack[i]));
      if (p < 0) continue;
      if (!inLibrary(p)) { own = p; break; }
      if (via < 0) via = p;
    }
    const key = "fork:" + own + ":" + via;
    counts.set(key, (counts.get(key) || 0) + 1);
    // the origin of the child: where it was forked, or, for a fiber forked by Effect's own code, its parent's origin
    return own < 0 && parent.__origin !== undefined ? parent.__origin : own + ":" + via;
  };
  const file = "/tmp/fiber-ops-" + process.pid + "-" + require("node:worker_threads").threadId + ".json";
  const dump = () => fs.writeFileSync(file, JSON.stringify([...counts]));
  setInterval(dump, 2000).unref();
  process.on("exit", dump);
}
`

const patch = () => {
  const dist = join(root, "examples", "server", "dist")
  rmSync(copy, { recursive: true, force: true })
  mkdirSync(copy, { recursive: true })
  cpSync(dist, join(copy, "dist"), { recursive: true })
  copyFileSync(join(root, "examples", "server", "package.json"), join(copy, "package.json"))
  const file = join(copy, "dist", "server.js")
  const source = readFileSync(file, "utf8")
  const at = source.indexOf(loopMarker, source.indexOf("runLoop(effect0) {"))
  if (!source.includes(headerMarker) || at < 0) throw new Error(`${file}: the banner or runLoop was not found`)
  const fork =
    /\n(\s*)unsafeMakeChildFiber = \((\w+), (\w+), (\w+), overrideScope = null\) => \{\n(?:.*\n){2}.*\n(\s*)const (\w+) = new FiberRuntime\(.*\n/
      .exec(source)
  if (fork === null || fork.index < at) throw new Error(`${file}: unsafeMakeChildFiber was not found after runLoop`)
  const forkAt = fork.index + fork[0].length
  const patched = source.slice(0, at).replace(headerMarker, headerMarker + header) + call + source.slice(at, forkAt) +
    `${fork[5]}${fork[6]}.__origin = globalThis.__fiberFork(${fork[3]});\n` + source.slice(forkAt)
  writeFileSync(file, patched)
  console.log(`patched copy: ${copy} (run it with --allow-natives-syntax)`)
}

const report = (json, tasks, top, byFile, withVia) => {
  const require = createRequire(import.meta.url)
  const { SourceMapConsumer } = require("source-map-js")
  const file = join(copy, "dist", "server.js")
  const source = readFileSync(file, "utf8")
  const lineStarts = [0]
  for (let i = 0; i < source.length; i++) if (source.charCodeAt(i) === 10) lineStarts.push(i + 1)
  const lineOf = (pos) => {
    let lo = 0, hi = lineStarts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (lineStarts[mid] <= pos) lo = mid
      else hi = mid - 1
    }
    return [lo + 1, pos - lineStarts[lo]]
  }
  const headerLines = header.split("\n").length - 1
  const lines = source.split("\n")
  const callLine = lines.indexOf(call.slice(0, -1)) + 1
  const forkLine = lines.findIndex((line) => /^\s*\w+\.__origin = globalThis\.__fiberFork\(\w+\);$/.test(line)) + 1
  const map = new SourceMapConsumer(JSON.parse(readFileSync(`${file}.map`, "utf8")))
  /** The source line of a position in the patched bundle, or `fallback` for none (-1). */
  const ownerOf = (pos, fallback) => {
    if (pos < 0) return fallback
    const [line, column] = lineOf(pos)
    const original = map.originalPositionFor({
      line: line - headerLines - (line > forkLine ? 1 : 0) - (line > callLine ? 1 : 0),
      column
    })
    const path = (original.source ?? "?").replace(/.*node_modules\//, "").replace(/.*\/packages\//, "")
    return byFile ? path : `${path}:${original.line}`
  }
  const owners = new Map()
  const forks = new Map()
  let total = 0
  let forked = 0
  for (const [key, n] of JSON.parse(readFileSync(json, "utf8"))) {
    if (typeof key === "string" && key.startsWith("fork:")) {
      const [, own, via] = key.split(":").map(Number)
      const owner = `${ownerOf(own, "(Effect's own fibers)")} via ${ownerOf(via, "?")}`
      forked += n
      forks.set(owner, (forks.get(owner) ?? 0) + n)
      continue
    }
    total += n
    const inFork = String(key).startsWith("in:")
    const [pos, forkVia, via] = inFork
      ? String(key).slice(3).split(":").map(Number)
      : [...String(key).split(":").map(Number), -1]
    const owner = inFork
      ? `(a fiber forked at ${ownerOf(pos, "(Effect's own fibers)")} via ${ownerOf(forkVia, "?")})` +
        (withVia && via >= 0 ? ` via ${ownerOf(via, "?")}` : "")
      : ownerOf(pos, "(Effect's own fibers)") + (withVia && forkVia >= 0 ? ` via ${ownerOf(forkVia, "?")}` : "")
    owners.set(owner, (owners.get(owner) ?? 0) + n)
  }
  const print = (counts) => {
    for (const [owner, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${(n / tasks).toFixed(2).padStart(8)}  ${owner}`)
    }
  }
  console.log(`${total} fiber operations, ${(total / tasks).toFixed(1)} a task`)
  print(owners)
  console.log(`${forked} fibers forked, ${(forked / tasks).toFixed(1)} a task (by owner, via Effect's combinator)`)
  print(forks)
}

const [command, ...rest] = process.argv.slice(2)
const option = (name, fallback) => {
  const i = rest.indexOf(`--${name}`)
  return i < 0 ? fallback : rest[i + 1]
}
if (command === "patch") patch()
else if (command === "report" && rest.length >= 2) {
  report(rest[0], Number(rest[1]), Number(option("top", "60")), option("by", "line") === "file", rest.includes("--via"))
} else {
  console.error(
    "usage: node bench/lib/fiberOps.mjs patch | report <counts.json> <tasks> [--top N] [--by line|file] [--via]"
  )
  process.exit(1)
}
