/**
 * Tasks in flight on a `fal` channel, measured from outside, three ways in the same run, each on a fresh database
 * and a fresh server: N image tasks (`vendor4-3-0-t2i`, `POST /api/v1/vendor4/text-to-image`) whose jobs run
 * `job-seconds`,
 *
 * 1. **baseline**: on the built-in simulated upstream (no channel stored: the environment's default simulated
 *    channel; `[sim:delay=N]` in the prompt; it calls back when a job is done): what the other ways are compared with;
 * 2. **callbacks**: on a fal channel to the fal fake (`[fake:delay=<ms>]`), callbacks on (fal POSTs to
 *    `MEDIAGATE_PUBLIC_BASE_URL/callbacks/v1/...`, which wakes the task for a poll), `poll_interval_ms` left at the
 *    channel's default (the safety-net schedule) and the polling way's `poll_rate` (a woken task is polled, and the
 *    jobs of a burst end as fast as it was posted: the channel's default, 100 a second, would pace the finishing);
 *    both unless given (`default`: the channel's defaults);
 * 3. **polling**: the same channel with `callbacks: false`, polled every `poll-interval-ms`, with a `poll_rate` that
 *    carries it (tasks / interval, unless given).
 *
 *   npm run build && tsx bench/upstream-fal.ts -- [--db sqlite,pg] [--tasks 10000] [--job-seconds 30]
 *     [--ways baseline,callbacks,polling] [--poll-interval-ms 5000] [--poll-rate <tasks / interval>]
 *     [--callbacks-poll-interval-ms <default>] [--callbacks-poll-rate <as polling; default>] [--connections 32]
 *     [--max-wait-seconds 600] [--profile]   (a CPU profile of each server, in bench/profiles)
 *
 * The server is the built example server as `npm start` runs it (its V8 flags, its defaults: access log and metrics
 * on, 32 worker slots), with only what the scenario needs added: the admin token, a channel key, its public base URL
 * (its own address, for fal's callbacks), its data folder and database. Its stdout (the access log and every other
 * log line) is read from a pipe by this process as it comes, as a log shipper would; warnings and errors in it are
 * counted and the first ones printed. The fal fake (`@mediagate/testing/fakes/fal`) runs in this process: it only
 * computes a job's state from its timestamps and sends one webhook per job, little beside the client's own work; its
 * request log is copied every 250 ms (the fake keeps the last 100,000 requests only).
 *
 * - **Lag**: `completed_at − created_at − job-seconds` of each task, as the client sees it (`created_at` is when the
 *   client got its id; the job starts when a worker submits it, so the claim and the submit count as lag). p50, p99
 *   and max per way, and the ratio of the fal ways' p50 and p99 to the baseline's.
 * - **Phases**: posting (every task posted, `connections` at a time), waiting (from the last POST answered to the
 *   first expected job end, first POST + job-seconds: no job can end yet, the server only holds tasks), finishing
 *   (from then to the last completion). No waiting phase when posting outlasts the jobs.
 * - **CPU**: the server's user + system time from `/proc/<pid>/stat` over a phase, in cores; and the share of the
 *   phase its main thread waited for a CPU (`/proc/<pid>/schedstat`: the machine is shared).
 * - **Upstream requests**: from the fake's request log, per second over each phase: submits, status polls, results,
 *   result files. **Poll rate**: the most status polls the channel received in any 1-second window of the run (at the
 *   fake: when they arrived), against the channel's `poll_rate`; and the busiest 5 seconds' average beside it.
 * - **Goals** (PASS/FAIL printed beside the figures): lag p99 ≤ 1 s with callbacks (the baseline calls back too), ≤
 *   poll interval + 1 s without; server CPU while waiting < 0.5 core; polls per channel never above its `poll_rate`.
 *
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres) per way, dropped afterwards; SQLite in a
 * temporary folder per way. Asserts nothing: a benchmark prints figures.
 */
import { type FalFake, startFalFake } from "@mediagate/testing/fakes/fal"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import {
  account,
  adminToken,
  allTasks,
  arg,
  call,
  countOf,
  cpuMs,
  flag,
  freePort,
  mainScript,
  percentile,
  pgDatabase,
  record,
  runQueueMs,
  serverEnv,
  sleep,
  start
} from "./support.js"

const allWays = ["baseline", "callbacks", "polling"] as const
type Way = typeof allWays[number]
const isWay = (name: string): name is Way => allWays.some((way) => way === name)

const databases = arg("db", "sqlite,pg").split(",")
const taskCount = Number(arg("tasks", "10000"))
const jobSeconds = Number(arg("job-seconds", "30"))
const jobMs = jobSeconds * 1000
const pollIntervalMs = Number(arg("poll-interval-ms", "5000"))
/** The polling channel's `poll_rate`: every task polled once per interval. */
const pollRate = Number(arg("poll-rate", String(Math.ceil((taskCount * 1000) / pollIntervalMs))))
const callbacksPollIntervalMs = arg("callbacks-poll-interval-ms", "default")
const callbacksPollRate = arg("callbacks-poll-rate", String(pollRate))
const connections = Number(arg("connections", "32"))
const maxWaitMs = Number(arg("max-wait-seconds", "600")) * 1000
const profile = flag("profile")
const wayNames = arg("ways", allWays.join(",")).split(",")
const ways = wayNames.filter(isWay)
if (ways.length !== wayNames.length) throw new Error(`--ways: ${wayNames.join(",")}; known: ${allWays.join(",")}`)

/** A channel's `poll_rate` when none is set (docs/channels.md, "Callbacks and polling"). */
const defaultPollRate = 100
const model = "vendor4-3-0-t2i"
const route = "/api/v1/vendor4/text-to-image"
const falKey = "bench-fal-key"
const falTarget = "fal-ai/flux/dev"
/** The channel key of every server of the run (64 hex characters). */
const channelKey = randomBytes(32).toString("hex")

/** The prompt of a task of a way: the simulator's directive or the fake's. */
const promptOf = (way: Way, text: string, ms: number) =>
  way === "baseline" ? `${text} [sim:delay=${ms / 1000}]` : `${text} [fake:delay=${ms}]`

/** The `settings` of the way's fal channel, and the poll rate it runs with. */
const channelOf = (way: Exclude<Way, "baseline">, fakeUrl: string) => {
  const mapping = { [model]: { target: falTarget } }
  if (way === "polling") {
    return {
      settings: { base_url: fakeUrl, mapping, callbacks: false, poll_interval_ms: pollIntervalMs, poll_rate: pollRate },
      pollRate
    }
  }
  const rate = callbacksPollRate === "default" ? undefined : Number(callbacksPollRate)
  const interval = callbacksPollIntervalMs === "default" ? undefined : Number(callbacksPollIntervalMs)
  return {
    settings: {
      base_url: fakeUrl,
      mapping,
      ...(interval === undefined ? {} : { poll_interval_ms: interval }),
      ...(rate === undefined ? {} : { poll_rate: rate })
    },
    pollRate: rate ?? defaultPollRate
  }
}

/** What the fake was asked. */
type Kind = "submit" | "status" | "result" | "files" | "other"
/** The kinds printed (`other`: cancels, which this benchmark makes none of). */
const kinds: ReadonlyArray<Kind> = ["submit", "status", "result", "files"]

const kindOf = (method: string, url: string): Kind => {
  const path = url.split("?", 1)[0]!
  if (path.startsWith("/fake-files/")) return "files"
  if (method === "POST") return "submit"
  if (method === "GET" && (path.endsWith("/status") || path.endsWith("/status/stream"))) return "status"
  if (method === "GET" && path.includes("/requests/")) return "result"
  return "other"
}

/** The request id a status, result or file URL of the fake names. */
const jobIn = (url: string): string | undefined =>
  /\/requests\/([0-9a-f-]{36})|\/fake-files\/out-([0-9a-f-]{36})-/.exec(url)?.slice(1).find((id) => id !== undefined)

/** The fake's requests (time and kind), copied from its log as they come: the log keeps the last 100,000 only. */
class Requests {
  readonly at: Array<number> = []
  readonly kind: Array<Kind> = []
  /** The job (request id) a status poll, result or file request was about. */
  readonly job: Array<string | undefined> = []
  /** Requests dropped from the fake's log before they were copied (none expected). */
  lost = false
  private last: FalFake["requests"][number] | undefined
  constructor(private readonly fake: FalFake) {}

  take() {
    const log = this.fake.requests
    let from = 0
    if (this.last !== undefined) {
      const index = log.lastIndexOf(this.last)
      if (index < 0) this.lost = true
      from = index + 1
    }
    for (let i = from; i < log.length; i++) {
      const request = log[i]!
      this.at.push(request.at)
      this.kind.push(kindOf(request.method, request.url))
      this.job.push(jobIn(request.url))
    }
    if (log.length > 0) this.last = log[log.length - 1]
  }

  /** Requests of each kind per second in [from, to). */
  rates(from: number, to: number): Record<Kind, number> {
    const counts: Record<Kind, number> = { submit: 0, status: 0, result: 0, files: 0, other: 0 }
    for (let i = 0; i < this.at.length; i++) if (this.at[i]! >= from && this.at[i]! < to) counts[this.kind[i]!]++
    const span = Math.max(1, to - from) / 1000
    for (const kind of kinds) counts[kind] /= span
    return counts
  }

  /** When each job was first asked for `kind` at or after `from(job)` (its end), by job. */
  firstAfter(kind: Kind, from: (job: string) => number | undefined): Map<string, number> {
    const first = new Map<string, number>()
    for (let i = 0; i < this.at.length; i++) {
      const job = this.job[i]
      if (job === undefined || this.kind[i] !== kind || first.has(job)) continue
      const after = from(job)
      if (after !== undefined && this.at[i]! >= after) first.set(job, this.at[i]!)
    }
    return first
  }

  /** The most requests of `kind` in any window of `windowMs`, and when that window started. */
  most(kind: Kind, windowMs: number) {
    const at = this.at.filter((_, i) => this.kind[i] === kind).sort((a, b) => a - b)
    let best = { count: 0, at: NaN }
    for (let i = 0, j = 0; i < at.length; i++) {
      while (j < at.length && at[j]! < at[i]! + windowMs) j++
      if (j - i > best.count) best = { count: j - i, at: at[i]! }
    }
    return best
  }
}

/** The server's stdout, read as a log shipper would: lines counted, warnings and errors kept (the first few). */
class ServerLog {
  lines = 0
  access = 0
  /** Access-log lines with a 5xx status. */
  serverErrors = 0
  warnings = 0
  errors = 0
  readonly samples: Array<string> = []
  /** The last lines (what a process that died said last). */
  readonly tail: Array<string> = []

  read(line: string) {
    this.lines++
    this.tail.push(line.length > 400 ? `${line.slice(0, 400)}…` : line)
    if (this.tail.length > 10) this.tail.shift()
    const status = /http\.status=(\d+)/.exec(line)
    if (status !== null) {
      this.access++
      if (Number(status[1]) >= 500) this.keep(line, () => this.serverErrors++)
    }
    if (/\blevel=(WARN|WARNING)\b/.test(line)) this.keep(line, () => this.warnings++)
    else if (/\blevel=(ERROR|FATAL)\b/.test(line)) this.keep(line, () => this.errors++)
  }

  private keep(line: string, count: () => void) {
    count()
    if (this.samples.length < 5) this.samples.push(line.length > 400 ? `${line.slice(0, 400)}…` : line)
  }
}

/** The figures of one way. */
interface Figures {
  readonly lagP50: number
  readonly lagP99: number
  readonly lagMax: number
}

/** The most memory a process has held so far, MB (Linux `/proc/<pid>/status` VmHWM; NaN elsewhere). */
const peakRssMb = (pid: number | undefined) => {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]
    return kb === undefined ? NaN : Math.round(Number(kb) / 1024)
  } catch {
    return NaN
  }
}

/** This process's CPU time so far (user + system), ms. */
const selfCpuMs = () => {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const ms = (value: number) => Number.isNaN(value) ? "–" : `${Math.round(value)} ms`
const verdict = (ok: boolean) => ok ? "PASS" : "FAIL"
const ratio = (value: number, of: number | undefined) =>
  of === undefined || !(of > 0) ? "–" : `${(value / of).toFixed(1)}×`
const perSecond = (rates: Record<Kind, number>) =>
  kinds.map((kind) => `${kind} ${rates[kind].toFixed(rates[kind] >= 100 ? 0 : 1)}`).join(", ")

/** Posts a task and answers its id (undefined when refused). */
const post = async (base: string, token: string, prompt: string) => {
  const response = await fetch(`${base}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: { prompt } })
  })
  const json = record(await response.json())
  return response.ok ? String(record(json["data"])["id"]) : undefined
}

/** Runs one way on a fresh database and server, prints its figures and answers them with its goals' line. */
const runWay = async (
  db: string,
  way: Way,
  baseline: Figures | undefined
): Promise<{ readonly figures: Figures; readonly goals: string }> => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-fal-"))
  const pg = db === "pg" ? pgDatabase("upstream") : undefined
  const fake = way === "baseline" ? undefined : await startFalFake({ key: falKey })
  const log = new ServerLog()
  try {
    const port = await freePort()
    const server = await start(
      mainScript,
      serverEnv(dir, pg?.url, {
        MEDIAGATE_CHANNEL_KEY: channelKey,
        MEDIAGATE_PUBLIC_BASE_URL: `http://127.0.0.1:${port}`
      }),
      { port, log: (line) => log.read(line), profile }
    )
    const requests = fake === undefined ? undefined : new Requests(fake)
    const copying = setInterval(() => requests?.take(), 250)
    try {
      const pid = server.child.pid
      const { token } = await account(server.base, 100_000_000)
      const channel = way === "baseline" || fake === undefined ? undefined : channelOf(way, fake.url)
      if (channel !== undefined) {
        await call(server.base, "/admin/v1/channels", {
          method: "POST",
          token: adminToken,
          body: {
            name: `fal ${way}`,
            transport: "fal",
            settings: channel.settings,
            credentials: { api_key: falKey },
            families: ["vendor4"],
            models: [model]
          }
        })
      }
      // warm-up: one short task, so that the first tasks do not pay for a first rendering, a first copy, a first
      // connection to the fake
      const warm = await post(server.base, token, promptOf(way, "warm-up", 0))
      for (let i = 0; i < 600 && warm !== undefined; i++) {
        const task = record((await call(server.base, `/api/v1/tasks/${warm}`, { token })).data)
        if (task["status"] === "succeeded" || task["status"] === "failed") break
        await sleep(100)
      }
      // posting: every task, `connections` at a time
      const postStart = Date.now()
      const selfPostStart = selfCpuMs()
      const cpuPostStart = cpuMs(pid)
      const queuedPostStart = runQueueMs(pid)
      let next = 0
      let refused = 0
      await Promise.all(Array.from({ length: connections }, async () => {
        while (next < taskCount) {
          const i = next++
          try {
            if (await post(server.base, token, promptOf(way, `in flight ${i}`, jobMs)) === undefined) refused++
          } catch {
            refused++ // not tried again: without an idempotency key a second POST could make a second task
          }
        }
      }))
      const posted = Date.now()
      const selfPosted = selfCpuMs()
      const cpuPosted = cpuMs(pid)
      const queuedPosted = runQueueMs(pid)
      // waiting: until the first job is due to end (the first task was posted at postStart); none when posting
      // outlasted the jobs
      const firstEnd = postStart + jobMs
      if (firstEnd > posted) await sleep(firstEnd - Date.now())
      const waited = firstEnd > posted ? Date.now() : posted
      const selfWaited = selfCpuMs()
      const cpuWaited = cpuMs(pid)
      const queuedWaited = runQueueMs(pid)
      // finishing: until every task is terminal (the warm-up's included)
      const deadline = posted + jobMs + maxWaitMs
      while (Date.now() < deadline) {
        if (server.child.exitCode !== null || server.child.signalCode !== null) break
        const [succeeded, failed] = await Promise.all([
          countOf(server.base, token, "succeeded"),
          countOf(server.base, token, "failed")
        ])
        if (succeeded + failed >= taskCount - refused + 1) break
        await sleep(1000)
      }
      const finished = Date.now()
      const selfFinished = selfCpuMs()
      const cpuFinished = cpuMs(pid)
      const queuedFinished = runQueueMs(pid)
      clearInterval(copying)
      requests?.take()
      if (server.child.exitCode !== null || server.child.signalCode !== null) {
        throw new Error(
          `the server exited (code ${server.child.exitCode}, signal ${server.child.signalCode})` +
            ` ${seconds(Date.now() - postStart)} after the first POST`
        )
      }

      const tasks = (await allTasks(server.base, token)).filter((task) => task["id"] !== warm)
      const lags: Array<number> = []
      /** Accept → submit (`started_at`: the first claim), and the rest of the lag. */
      const toSubmit: Array<number> = []
      const afterSubmit: Array<number> = []
      let notSucceeded = 0
      let unfinished = 0
      for (const task of tasks) {
        if (task["status"] !== "succeeded") {
          if (task["status"] === "failed" || task["status"] === "expired") notSucceeded++
          else unfinished++
          continue
        }
        const [created, started, completed] = ["created_at", "started_at", "completed_at"]
          .map((field) => Date.parse(String(task[field])))
        lags.push(completed! - created! - jobMs)
        toSubmit.push(started! - created!)
        afterSubmit.push(completed! - started! - jobMs)
      }
      const lastCompleted = Math.max(waited, ...tasks.map((t) => Date.parse(String(t["completed_at"] ?? "")) || 0))
      const figures = { lagP50: percentile(lags, 50), lagP99: percentile(lags, 99), lagMax: percentile(lags, 100) }
      const postingMs = posted - postStart
      const waitingMs = waited - posted
      const finishingMs = finished - waited
      const starved = (queued: number, span: number) =>
        span > 0 ? `, waited for a CPU ${(100 * queued / span).toFixed(0)}% of the time` : ""
      /** This process's CPU over a phase (the client, the log reader and the fake). */
      const self = (used: number, span: number) => span > 0 ? `; this process ${(used / span).toFixed(2)} core` : ""
      const cpuWaiting = waitingMs > 0 ? (cpuWaited - cpuPosted) / waitingMs : NaN

      const settings = channel === undefined
        ? "the simulated upstream (default channel, calls back)"
        : way === "polling"
        ? `fal fake, callbacks off, poll_interval_ms ${pollIntervalMs}, poll_rate ${pollRate}` +
          ` (${taskCount} tasks / ${pollIntervalMs / 1000} s)`
        : `fal fake, callbacks on, poll_interval_ms ${callbacksPollIntervalMs}, poll_rate ${channel.pollRate}` +
          `${callbacksPollRate === "default" ? " (default)" : ""}`
      console.log(`${db} · ${way}: ${settings}`)
      console.log(
        `  ${tasks.length} tasks of ${jobSeconds} s: ${refused} POSTs refused, ${notSucceeded} failed,` +
          ` ${unfinished} not finished after ${seconds(finished - posted)}`
      )
      console.log(
        `  posting ${seconds(postingMs)}: accept rate ${(taskCount / (postingMs / 1000)).toFixed(0)}/s,` +
          ` server CPU ${((cpuPosted - cpuPostStart) / postingMs).toFixed(2)} core` +
          `${starved(queuedPosted - queuedPostStart, postingMs)}${self(selfPosted - selfPostStart, postingMs)}`
      )
      console.log(
        waitingMs > 0
          ? `  waiting ${seconds(waitingMs)}: server CPU ${cpuWaiting.toFixed(2)} core` +
            `${starved(queuedWaited - queuedPosted, waitingMs)}${self(selfWaited - selfPosted, waitingMs)}`
          : `  waiting: none (posting outlasted the ${jobSeconds} s jobs)`
      )
      console.log(
        `  finishing ${seconds(lastCompleted - waited)}: server CPU` +
          ` ${((cpuFinished - cpuWaited) / Math.max(1, finishingMs)).toFixed(2)} core` +
          `${starved(queuedFinished - queuedWaited, finishingMs)}${self(selfFinished - selfWaited, finishingMs)}`
      )
      console.log(
        `  lag p50 ${ms(figures.lagP50)}, p99 ${ms(figures.lagP99)}, max ${ms(figures.lagMax)}` +
          (way === "baseline" ? "" : ` (vs baseline: p50 ${ratio(figures.lagP50, baseline?.lagP50)},` +
            ` p99 ${ratio(figures.lagP99, baseline?.lagP99)})`)
      )
      const p50p99 = (values: ReadonlyArray<number>) =>
        `p50 ${ms(percentile(values, 50))}, p99 ${ms(percentile(values, 99))}`
      console.log(`    of which accept → submit ${p50p99(toSubmit)}; after the job's end ${p50p99(afterSubmit)}`)
      if (requests !== undefined && fake !== undefined) {
        // after the job's end, by part (jobs known by the task id in their callback URL: the callbacks way)
        const jobOfTask = new Map<string, { id: string; end: number }>()
        for (const job of fake.jobs.values()) {
          const task = job.webhook === undefined ? undefined : /\/callbacks\/v1\/[^/]+\/([^/?]+)/.exec(job.webhook)?.[1]
          if (task !== undefined) {
            jobOfTask.set(decodeURIComponent(task), { id: job.id, end: job.submittedAt + job.plan.durationMs })
          }
        }
        const ends = new Map([...jobOfTask.values()].map(({ end, id }) => [id, end]))
        const polled = requests.firstAfter("status", (job) => ends.get(job))
        const fetched = requests.firstAfter("files", (job) => ends.get(job))
        const parts = { wake: [] as Array<number>, result: [] as Array<number>, copy: [] as Array<number> }
        for (const task of tasks) {
          const job = jobOfTask.get(String(task["id"]))
          const completed = Date.parse(String(task["completed_at"]))
          const poll = job === undefined ? undefined : polled.get(job.id)
          const file = job === undefined ? undefined : fetched.get(job.id)
          if (job === undefined || poll === undefined || file === undefined || Number.isNaN(completed)) continue
          parts.wake.push(poll - job.end)
          parts.result.push(file - poll)
          parts.copy.push(completed - file)
        }
        if (parts.wake.length > 0) {
          console.log(
            `    after the job's end, by part (${parts.wake.length} tasks): end → status poll ${p50p99(parts.wake)};` +
              ` → file request ${p50p99(parts.result)}; → completed ${p50p99(parts.copy)}`
          )
        }
      }

      const goals: Array<string> = []
      const lagLimit = way === "polling" ? pollIntervalMs + 1000 : 1000
      const lagOk = unfinished === 0 && figures.lagP99 <= lagLimit
      goals.push(`lag p99 ≤ ${ms(lagLimit)}${unfinished > 0 ? " (with every task finished)" : ""}: ${verdict(lagOk)}`)
      goals.push(
        waitingMs > 0
          ? `CPU while waiting < 0.5 core: ${verdict(cpuWaiting < 0.5)}`
          : "CPU while waiting < 0.5 core: not measured (no waiting phase)"
      )
      if (requests !== undefined && fake !== undefined && channel !== undefined) {
        const phases: ReadonlyArray<readonly [string, number, number]> = [
          ["posting", postStart, posted],
          ["waiting", posted, waited],
          ["finishing", waited, lastCompleted]
        ]
        for (const [name, from, to] of phases) {
          if (to > from) console.log(`  fake requests/s while ${name}: ${perSecond(requests.rates(from, to))}`)
        }
        const counts = fake.counts()
        const lost = requests.lost ? " (some requests were not copied)" : ""
        console.log(
          `  fake totals: ${counts.submit} submits, ${counts.status} status, ${counts.result} results,` +
            ` ${counts.files} files, ${counts.webhooks} webhooks sent${lost}`
        )
        const polls = requests.most("status", 1000)
        const at = Number.isNaN(polls.at) ? "" : ` (from ${seconds(polls.at - postStart)} after the first POST)`
        const sustained = requests.most("status", 5000).count / 5
        console.log(
          `  polls per channel in any 1 s window: max ${polls.count}${at}, limit ${channel.pollRate}` +
            ` → ${verdict(polls.count <= channel.pollRate)}; busiest 5 s: ${sustained.toFixed(0)}/s`
        )
        goals.push(`poll rate ≤ ${channel.pollRate}/s: ${verdict(polls.count <= channel.pollRate)}`)
      }
      console.log(
        `  server log: ${log.lines} lines (${log.access} access), ${log.serverErrors} 5xx answers,` +
          ` ${log.warnings} warnings, ${log.errors} errors; server peak RSS ${peakRssMb(pid)} MB`
      )
      for (const sample of log.samples) console.log(`    ${sample}`)
      console.log(`  goals: ${goals.join("; ")}`)
      const lag = `lag p50 ${ms(figures.lagP50)}, p99 ${ms(figures.lagP99)}`
      const vsBaseline = way === "baseline" ? "" : ` (${ratio(figures.lagP99, baseline?.lagP99)} the baseline's p99)`
      return { figures, goals: `${lag}${vsBaseline}; ${goals.join("; ")}` }
    } catch (error) {
      // a server that died (or stopped answering) ends this way with what is known, and the run goes on
      const exit = server.child.exitCode ?? server.child.signalCode
      console.log(
        `${db} · ${way}: FAILED: ${error instanceof Error ? error.message : String(error)}` +
          `${exit === null ? "" : ` (the server exited: ${exit})`}`
      )
      console.log(`  server log: ${log.lines} lines, ${log.warnings} warnings, ${log.errors} errors; the last lines:`)
      for (const line of log.tail) console.log(`    ${line}`)
      return { figures: { lagP50: NaN, lagP99: NaN, lagMax: NaN }, goals: "FAILED (see above)" }
    } finally {
      clearInterval(copying)
      await server.stop()
    }
  } finally {
    await fake?.close()
    pg?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(
  `${taskCount} tasks of ${jobSeconds} s, ${connections} connections, ways ${ways.join(", ")};` +
    ` load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`
)
const summary: Array<string> = []
for (const db of databases) {
  let baseline: Figures | undefined
  for (const way of ways) {
    const { figures, goals } = await runWay(db, way, baseline)
    if (way === "baseline") baseline = figures
    summary.push(`  ${db} · ${way}: ${goals}`)
  }
}
console.log(["goals:", ...summary].join("\n"))
