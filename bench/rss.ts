/**
 * Memory of the production server, measured from outside: the built example server (`node
 * examples/server/dist/server.js`, built by `npm run build`) on a fresh database, beside a bare `node:http` server
 * (bench/servers/bare.mjs) in the same run as the baseline. Both are sampled (resident set size, `/proc/<pid>/status`):
 *
 * 1. idle: after a few requests, for `--seconds` (mean of the last 5 samples);
 * 2. after N tasks (`--tasks`, default 100,000): N tasks created over HTTP with a free sandbox (`test`) key,
 *    `--concurrency` requests in flight (default 64), each a job of 0 s on the simulated upstream
 *    (`[sim:delay=0]`); once every task is terminal (the list's totals), the server idles for `--settle` seconds
 *    (default 60): RSS 10 s after the last task and at the end (means of 5 samples). V8 leaves the garbage of the
 *    run in the heap until its memory reducer collects it, 20 to 40 s into the idle time, hence both figures. The
 *    baseline answers the same number of POSTs the same way.
 *
 * "max" is the kernel's high-water mark (`VmHWM`) over the whole run. Prints the figures and the ratios to the
 * bare server. RSS along the way (every tenth of the tasks) shows whether it grows with the number of tasks.
 *
 *   npm run bench:rss [-- --db sqlite|pg|sqlite,pg] [--tasks 100000] [--concurrency 64] [--seconds 30] [--settle 60]
 *     [--heap]   (a V8 heap snapshot of the server after each phase, in bench/profiles: `--heapsnapshot-signal`)
 *     [--node-options "--max-old-space-size=512"]   (the server's V8 settings; default: the flags of `npm start`,
 *     read from examples/server/package.json; `--node-options none` runs Node's defaults)
 *
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres), dropped afterwards; SQLite in a temporary
 * folder, removed afterwards. Asserts nothing.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  account,
  arg,
  call,
  flag,
  mainScript,
  pgDatabase,
  root,
  type Running,
  serverEnv,
  sleep,
  start,
  startFlags
} from "./support.js"

const databases = arg("db", "sqlite").split(",")
const taskCount = Number(arg("tasks", "100000"))
const concurrency = Number(arg("concurrency", "64"))
const idleSeconds = Number(arg("seconds", "30"))
const settleSeconds = Math.max(10, Number(arg("settle", "60")))
const heap = flag("heap")
const nodeOptionsArg = arg("node-options", startFlags())
const nodeOptions = nodeOptionsArg === "none" ? "" : nodeOptionsArg
const profiles = join(root, "bench", "profiles")

/** A field of `/proc/<pid>/status` in MB (`VmRSS`: now; `VmHWM`: the most so far). */
const statusMb = (pid: number | undefined, field: "VmRSS" | "VmHWM") => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024
}

/** Samples RSS once a second for `seconds`; answers the samples. */
const sample = async (pid: number | undefined, seconds: number) => {
  const samples: Array<number> = []
  for (let s = 0; s < seconds; s++) {
    await sleep(1000)
    samples.push(statusMb(pid, "VmRSS"))
  }
  return samples
}

/** The mean of the 5 samples that end at second `end` (default: the last). */
const meanTo = (samples: ReadonlyArray<number>, end = samples.length) => {
  const last = samples.slice(Math.max(0, end - 5), end)
  return last.reduce((a, b) => a + b, 0) / last.length
}

/** Samples RSS once a second for `seconds`; answers the mean of the last 5 samples. */
const idle = async (pid: number | undefined, seconds: number) => meanTo(await sample(pid, seconds))

/** Writes a heap snapshot of the server (started with `--heapsnapshot-signal=SIGUSR2`) and waits for the file. */
const snapshot = async (server: Running, label: string) => {
  const before = new Set(readdirSync(profiles))
  server.child.kill("SIGUSR2")
  for (let i = 0; i < 600; i++) {
    await sleep(500)
    const written = readdirSync(profiles).filter((f) => f.endsWith(".heapsnapshot") && !before.has(f))
    // the file appears at once and grows; it is complete when its size stops changing
    if (written.length > 0) {
      const file = join(profiles, written[0]!)
      const size = statSync(file).size
      await sleep(2000)
      if (statSync(file).size === size) {
        console.log(`  heap snapshot (${label}): ${file}`)
        return
      }
    }
  }
}

/** Posts `count` requests, `concurrency` at a time; calls `progress` every tenth. Answers how many were accepted. */
const post = async (
  base: string,
  path: string,
  headers: Record<string, string>,
  body: (i: number) => unknown,
  progress: (done: number) => void
) => {
  let next = 0
  let done = 0
  let accepted = 0
  const refused = new Map<string, number>()
  const note = (what: string) => refused.set(what, (refused.get(what) ?? 0) + 1)
  const tenth = Math.max(1, Math.floor(taskCount / 10))
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < taskCount) {
      const i = next++
      try {
        const response = await fetch(`${base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body(i))
        })
        const text = await response.text()
        if (response.ok) accepted++
        else note(`${response.status} ${/"code":"([A-Z_]+)"/.exec(text)?.[1] ?? ""}`.trim())
      } catch (error) {
        // not tried again: without an idempotency key a second POST could make a second task
        const cause = error instanceof Error
          ? (error.cause as { code?: string; message?: string } | undefined)
          : undefined
        note(
          error instanceof Error ? `${error.message}${cause ? ` (${cause.code ?? cause.message})` : ""}` : String(error)
        )
      }
      if (++done % tenth === 0) progress(done)
    }
  }))
  if (refused.size > 0) console.log(`  not accepted: ${[...refused].map(([what, n]) => `${n} × ${what}`).join(", ")}`)
  return accepted
}

interface Figures {
  readonly name: string
  readonly idle: number
  /** 10 s after the last task (mean of seconds 6 to 10). */
  readonly soon: number
  /** `settle` seconds after the last task (mean of the last 5). */
  readonly after: number
  readonly max: number
}

const mb = (n: number) => n.toFixed(1).padStart(6)

const bare = async (): Promise<Figures> => {
  const server = await start(join("bench", "servers", "bare.mjs"), {})
  try {
    const pid = server.child.pid
    for (let i = 0; i < 20; i++) await fetch(server.base).then((r) => r.arrayBuffer())
    const idleRss = await idle(pid, idleSeconds)
    await post(server.base, "/", {}, (i) => ({ prompt: `task ${i}` }), () => {})
    const settled = await sample(pid, settleSeconds)
    return {
      name: "bare node:http",
      idle: idleRss,
      soon: meanTo(settled, 10),
      after: meanTo(settled),
      max: statusMb(pid, "VmHWM")
    }
  } finally {
    await server.stop()
  }
}

const terminalStatuses = ["succeeded", "failed", "expired", "cancelled"]

const mediagate = async (db: string): Promise<Figures> => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-rss-"))
  const pg = db === "pg" ? pgDatabase("rss") : undefined
  try {
    const server = await start(
      mainScript,
      serverEnv(dir, pg?.url, {
        MEDIAGATE_SIM_TIME_SCALE: "1",
        // 100,000 sandbox results of 32 KB are over the default test-key storage quota (256 MiB): without this the
        // tasks past it are refused with 429
        MEDIAGATE_TEST_STORAGE_QUOTA: "off"
      }),
      {
        nodeOptions: [nodeOptions, heap ? `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${profiles}` : ""].join(" ")
          .trim()
      }
    )
    try {
      const pid = server.child.pid
      const { token } = await account(server.base, undefined, "test")
      for (let i = 0; i < 20; i++) await call(server.base, "/api/v1/tasks?limit=1", { token })
      const idleRss = await idle(pid, idleSeconds)
      console.log(`${db}: idle ${mb(idleRss)} MB; posting ${taskCount} tasks, ${concurrency} at a time`)
      if (heap) await snapshot(server, "idle")
      const started = Date.now()
      const accepted = await post(
        server.base,
        "/api/v1/vendor3/text-to-video",
        { authorization: `Bearer ${token}` },
        (i) => ({ model: "vendor3-3", input: { prompt: `memory ${i} [sim:delay=0]` } }),
        (done) =>
          console.log(
            `  ${String(done).padStart(7)} posted in ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s, RSS ${
              mb(statusMb(pid, "VmRSS"))
            } MB`
          )
      )
      const posted = Date.now()
      let terminal = 0
      for (const deadline = Date.now() + 30 * 60_000; Date.now() < deadline;) {
        const totals = await Promise.all(
          terminalStatuses.map(async (status) =>
            Number(
              (await call(server.base, `/api/v1/tasks?status=${status}&limit=1`, { token })).pagination?.["total"] ?? 0
            )
          )
        )
        terminal = totals.reduce((a, b) => a + b, 0)
        if (terminal >= accepted) break
        await sleep(1000)
      }
      const finished = Date.now()
      console.log(
        `  ${accepted} accepted in ${((posted - started) / 1000).toFixed(0)} s (${
          (accepted / ((posted - started) / 1000)).toFixed(0)
        }/s), ${terminal} terminal ${((finished - posted) / 1000).toFixed(0)} s later; RSS ${
          mb(statusMb(pid, "VmRSS"))
        } MB`
      )
      const settled = await sample(pid, settleSeconds)
      const max = statusMb(pid, "VmHWM")
      if (heap) await snapshot(server, `after ${taskCount} tasks`)
      return {
        name: `mediagate (${db === "pg" ? "PostgreSQL" : "SQLite"})${nodeOptions === "" ? "" : ` ${nodeOptions}`}`,
        idle: idleRss,
        soon: meanTo(settled, 10),
        after: meanTo(settled),
        max
      }
    } finally {
      await server.stop()
    }
  } finally {
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const baseline = await bare()
const results: Array<Figures> = []
for (const db of databases) results.push(await mediagate(db))

console.log(
  `\nRSS in MB: idle (${idleSeconds} s after start), after ${taskCount} tasks (10 s and ${settleSeconds} s after the last; means of 5 samples), max (VmHWM)`
)
const ratio = (a: number, b: number) => (a / b).toFixed(2)
for (const r of [baseline, ...results]) {
  const ratios = r === baseline
    ? ""
    : `   ÷ bare: idle ${ratio(r.idle, baseline.idle)}, +10 s ${ratio(r.soon, baseline.soon)}, +${settleSeconds} s ${
      ratio(r.after, baseline.after)
    }, max ${ratio(r.max, baseline.max)}`
  console.log(
    `  ${r.name.padEnd(24)} idle ${mb(r.idle)}   +10 s ${mb(r.soon)}   +${settleSeconds} s ${mb(r.after)}   max ${
      mb(r.max)
    }${ratios}`
  )
}
