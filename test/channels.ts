/**
 * Upstream channels end to end (docs/channels.md, issue 17): built server processes (`examples/server/dist`), a
 * gateway that routes its live tasks over channels, and two other instances of our own server as its relay
 * upstreams (each on its own SQLite data dir, with an account credited and a live key made through its admin API:
 * that key is the gateway's relay credentials). Channels are made through the gateway's `POST /admin/v1/channels`;
 * the gateway's client account is made the same way (servers started with an admin token bootstrap no account).
 *
 * Every scenario runs with the gateway on SQLite and on PostgreSQL (a fresh database each; skipped with a warning
 * when no PostgreSQL answers at 127.0.0.1:5432, failing under `CI=true`), one test file per database:
 *
 * 1. **Weights**: two `simulated` channels of one family, same priority, weights 3 and 1; 1,000 live tasks all
 *    succeed and the first channel runs 75% ± 5 points of them (3.7 standard deviations) (`channel_id` of each task, and the channels'
 *    `mediagate_channel_requests_total` submit counters agree); each task charged once.
 * 2. **Failover on submit** (and 5, **the breaker in view**): relay channel A (priority 10) to upstream 1 behind a
 *    fault proxy (test/faultProxy.ts), B (priority 0) to upstream 2. While A's upstream answers 500, hangs past the
 *    channel's `timeout_ms`, or refuses connections (the proxy closed), every task goes to B and succeeds; A's
 *    `health` shows the open breaker with its failures and last error; once the proxy passes through again and the
 *    cooldown is over, new tasks go to A and its breaker is closed. At the end every upstream holds exactly one
 *    task per gateway task routed to it (no double submit) and the gateway charged each task once, refunded none.
 * 3. **Kill mid-load** (the "Checked by"): A preferred, 100 tasks in flight on upstream 1 (jobs of a few
 *    seconds), upstream 1 SIGKILLed: every task finishes `succeeded` on B, each charged once, none refunded, and
 *    upstream 2 holds exactly one job per task.
 * 4. **Concurrency across nodes**: two gateway processes with workers on one database, one relay channel with
 *    concurrency 3; 16 tasks through both nodes; the upstream never has more than 3 tasks in flight (sampled every
 *    ~50 ms from its `GET /admin/v1/system`) and does reach 3; the channel's `in_flight` never shows more than 3;
 *    both nodes submitted to the channel; all 16 succeed. On SQLite both processes share one data dir (one
 *    database file; SQLite serializes the writers, so the slot reservation is atomic across them too).
 *
 * A scenario that fails keeps its servers' logs in a temporary directory (its path is printed).
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { awaitBuild } from "./build.js"
import { type FaultProxy, startFaultProxy } from "./faultProxy.js"
import {
  admin,
  adminToken,
  allPages,
  type ChannelCreate,
  channelKey,
  type ChannelView,
  createChannel,
  type Envelope,
  freshDatabase,
  http,
  inFlight,
  type Keys,
  type LedgerEntry,
  makeAccount,
  metric,
  metrics,
  ok,
  pool,
  range,
  readChannel,
  readTasks,
  scenario,
  type Scope,
  serverEnv,
  settle,
  sleep,
  type TaskView,
  terminal,
  unsucceeded,
  waitFor
} from "./harness.js"
import { type RunningServer, runPostgres, startServer } from "./server.js"

/** The fastest model (estimate 10 s), one 512×512 image, $0.03. */
const model = "vendor4-3-0-t2i"
const price = 0.03
/** The gateway's breaker cooldown (`MEDIAGATE_CHANNEL_BREAKER_COOLDOWN`). */
const cooldownMs = 2000

interface Upstream {
  readonly server: RunningServer
  readonly base: string
  readonly keys: Keys
}

/**
 * An upstream: our own server on its own SQLite data dir, simulated jobs scaled by `timeScale` (an image takes
 * 3 s × the scale), its bootstrap account credited.
 */
const startUpstream = async (scope: Scope, name: string, timeScale: number): Promise<Upstream> => {
  const server = scope.server(
    name,
    await startServer(
      await serverEnv({
        MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), `mg-channels-${name}-`)),
        MEDIAGATE_SIM_TIME_SCALE: String(timeScale)
      })
    )
  )
  return { server, base: server.baseUrl, keys: await makeAccount(server.baseUrl, "gateway relay", 1000) }
}

/** A gateway on `database` (channel key, private relay targets, a short breaker cooldown). */
const startGateway = async (scope: Scope, name: string, database: Record<string, string>) =>
  scope.server(
    name,
    await startServer(
      await serverEnv({
        ...database,
        MEDIAGATE_CHANNEL_KEY: channelKey,
        MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true",
        MEDIAGATE_CHANNEL_BREAKER_COOLDOWN: `${cooldownMs}ms`
      })
    )
  )

/** A first gateway on a fresh database, with an account of $100 and its live key. */
const firstGateway = async (scope: Scope, name: string, database: Record<string, string>) => {
  const server = await startGateway(scope, name, database)
  return { server, base: server.baseUrl, keys: await makeAccount(server.baseUrl, "client", 100) }
}

// -----------------------------------------------------------------------------------------------------------------
// Channels, tasks, billing
// -----------------------------------------------------------------------------------------------------------------

/**
 * A relay channel to `base` with the upstream's live key, its jobs polled every 500 ms (the default schedule's first
 * poll comes at 80% of the model's estimate, many times the scaled jobs of these upstreams).
 */
const relay = (
  name: string,
  base: string,
  upstream: Upstream,
  { settings, ...routing }: Partial<ChannelCreate> = {}
): ChannelCreate => ({
  name,
  transport: "relay",
  settings: { base_url: base, poll_interval_ms: 500, ...settings },
  credentials: { api_key: upstream.keys.live },
  families: ["vendor4"],
  ...routing
})

/** Creates `n` live tasks (20 at once); answers their ids. */
const createTasks = (gateway: string, key: string, n: number, prompt: (i: number) => string) =>
  pool(range(n), 20, async (i) => {
    const body = { model, input: { prompt: prompt(i), size: "512x512" } }
    // keyed: a request sent again after no answer makes no second task (nor a second charge)
    const reply = await http<Envelope<{ readonly id: string }>>(gateway, "/api/v1/vendor4/text-to-image", {
      token: key,
      json: body,
      headers: { "idempotency-key": randomUUID() }
    })
    return ok(reply, `task ${i}`).id
  })

/** Waits until each task was handed to an upstream (or ended); answers the tasks. */
/** Whether an upstream job id names a job (not an uncertain submit's marker, docs/channels.md). */
const isJob = (id: string | null) => id !== null && !id.startsWith("submit?")

const submitted = (gateway: string, ids: ReadonlyArray<string>, timeoutMs = 120_000) =>
  waitFor(`${ids.length} tasks to be submitted`, timeoutMs, async () => {
    const tasks = await readTasks(gateway, ids)
    // a submit marker (`submit?<at>`: an uncertain submit, its job looked for later) is not a submitted job
    return tasks.every((task) => isJob(task.upstream_job_id) || terminal.has(task.status)) ? tasks : undefined
  }, 250)

/** The ids of the tasks whose channel is not `channel`, with the channel they have. */
const offChannel = (tasks: ReadonlyArray<TaskView>, channel: string) =>
  tasks.filter((task) => task.channel_id !== channel).map((task) => `${task.id} on ${task.channel_id} (${task.status})`)

/**
 * Billing of the gateway's account after `ids` ran (and nothing else): one charge of the price per task, no
 * refund, each task's `charged`/`refunded` likewise, and the balance is the credit less the charges.
 */
const expectChargedOnce = async (gateway: string, keys: Keys, tasks: ReadonlyArray<TaskView>, credited: number) => {
  const charges = await allPages<LedgerEntry>(gateway, "/api/v1/balance/ledger?kind=charge", keys.live)
  const refunds = await allPages<LedgerEntry>(gateway, "/api/v1/balance/ledger?kind=refund", keys.live)
  expect(charges.length, "charges").toBe(tasks.length)
  expect(new Set(charges.map((entry) => entry.task_id)), "one charge per task").toEqual(
    new Set(tasks.map((task) => task.id))
  )
  for (const entry of charges) expect(entry.amount).toBeCloseTo(-price, 6)
  expect(refunds.map((entry) => `${entry.task_id}: ${entry.amount}`), "refunds").toEqual([])
  for (const task of tasks) {
    expect(task.charged, `${task.id} charged`).toBeCloseTo(price, 6)
    expect(task.refunded, `${task.id} refunded`).toBe(0)
  }
  const balance = ok(
    await http<Envelope<{ readonly balance: number }>>(gateway, "/api/v1/balance", { token: keys.live }),
    "balance"
  )
  expect(balance.balance).toBeCloseTo(credited - price * tasks.length, 6)
}

/** Every task of an upstream (its admin list). */
const upstreamTaskIds = async (upstream: Upstream) =>
  (await allPages<{ readonly id: string }>(upstream.base, "/admin/v1/tasks", adminToken)).map((task) => task.id).sort()

/** The sorted upstream job ids of `tasks`. */
const jobIds = (tasks: ReadonlyArray<TaskView>) =>
  tasks.map((task) => task.upstream_job_id ?? `(none: ${task.id})`).sort()

// -----------------------------------------------------------------------------------------------------------------
// Scenarios
// -----------------------------------------------------------------------------------------------------------------

/**
 * The scenarios with the gateway on one database (each database's scenarios are a test file of their own, so that
 * vitest runs the two side by side: `channels-sqlite.test.ts`, `channels-postgres.test.ts`).
 */
export const channelScenarios = (database: { readonly name: string; readonly postgres: boolean }) => {
  awaitBuild()
  describe.skipIf(database.postgres && !runPostgres)(`upstream channels, the gateway on ${database.name}`, () => {
    it(
      "weights: channels of weights 3 and 1 run 75% ± 5 points of 1,000 tasks",
      () =>
        scenario(`weights (${database.name})`, async (scope) => {
          const gateway = await firstGateway(scope, "gateway", freshDatabase(scope, database.postgres))
          const heavy = await createChannel(gateway.base, {
            name: "heavy",
            transport: "simulated",
            families: ["vendor4"],
            weight: 3
          })
          const light = await createChannel(gateway.base, {
            name: "light",
            transport: "simulated",
            families: ["vendor4"],
            weight: 1
          })
          expect([heavy.priority, heavy.weight, light.priority, light.weight]).toEqual([0, 3, 0, 1])

          const ids = await createTasks(gateway.base, gateway.keys.live, 1000, (i) => `weights ${i}`)
          await settle(gateway.base, 300_000)
          const tasks = await readTasks(gateway.base, ids)
          expect(unsucceeded(tasks).slice(0, 5), "tasks that did not succeed").toEqual([])
          const onHeavy = tasks.filter((task) => task.channel_id === heavy.id).length
          const onLight = tasks.filter((task) => task.channel_id === light.id).length
          console.info(
            `weights (${database.name}): ${onHeavy} on the weight-3 channel, ${onLight} on the weight-1 channel`
          )
          expect(onHeavy + onLight, "tasks on one of the two channels").toBe(1000)
          expect(Math.abs(onHeavy / 1000 - 0.75), `share of the weight-3 channel: ${onHeavy / 10}%`)
            .toBeLessThanOrEqual(0.05)

          // the channels' submit counters agree with the tasks' channels
          const text = await metrics(gateway.base)
          expect(metric(text, "mediagate_channel_requests_total", { channel: heavy.id, call: "submit", outcome: "ok" }))
            .toBe(onHeavy)
          expect(metric(text, "mediagate_channel_requests_total", { channel: light.id, call: "submit", outcome: "ok" }))
            .toBe(onLight)
          await expectChargedOnce(gateway.base, gateway.keys, tasks, 100)
        }),
      480_000
    )

    it(
      "failover on submit when A answers 500, hangs or refuses connections; A's breaker opens and closes again",
      () =>
        scenario(`failover (${database.name})`, async (scope) => {
          const upstream1 = await startUpstream(scope, "upstream-1", 0.1)
          const upstream2 = await startUpstream(scope, "upstream-2", 0.1)
          const proxy: FaultProxy = await startFaultProxy(upstream1.base)
          scope.defer(() => proxy.close())
          const gateway = await firstGateway(scope, "gateway", freshDatabase(scope, database.postgres))
          // A's submits time out after 5 s: long enough for an upstream just started on a machine at full load (the
          // healthy phase fails over on five submits late in a row), short enough for the hang phase
          const a = await createChannel(
            gateway.base,
            relay("A", proxy.url, upstream1, { priority: 10, settings: { timeout_ms: 5000 } })
          )
          const b = await createChannel(gateway.base, relay("B", upstream2.base, upstream2, { priority: 0 }))
          expect(a).toMatchObject({ credentials_set: true, priority: 10, health: { breaker: "closed" } })
          expect(JSON.stringify(a)).not.toContain(upstream1.keys.live)

          /** The channel each task was submitted to. */
          const routed = new Map<string, string | null>()
          /** Creates `n` tasks and waits until they are submitted; they all went to `channel` when given. */
          const phase = async (label: string, n: number, channel?: ChannelView) => {
            const ids = await createTasks(gateway.base, gateway.keys.live, n, (i) => `${label} ${i}`)
            const tasks = await submitted(gateway.base, ids)
            for (const task of tasks) routed.set(task.id, task.channel_id)
            if (channel !== undefined) {
              expect(offChannel(tasks, channel.id), `${label}: tasks not on ${channel.name}`).toEqual([])
            }
            return tasks
          }
          const healthOf = async (channel: ChannelView) => (await readChannel(gateway.base, channel.id)).health
          const breakerGauge = async (channel: ChannelView) =>
            metric(await metrics(gateway.base), "mediagate_channel_breaker_state", { channel: channel.id })
          /**
           * The proxy passes through again: once the cooldown is over a task probes A (a probe that failed late in
           * the fault doubled the cooldown: one task a second until A takes one), A's breaker closes, and A takes
           * the new tasks again.
           */
          const recover = async (label: string) => {
            proxy.setMode("pass")
            await sleep(cooldownMs + 500)
            await waitFor(`${label}: a task on A again`, 60_000, async () => {
              const [probe] = await phase(`${label}: probe`, 1)
              return probe!.channel_id === a.id ? true : undefined
            }, 1000)
            expect((await healthOf(a)).breaker, `${label}: A's breaker after the probe`).toBe("closed")
            expect(await breakerGauge(a)).toBe(0)
            await phase(label, 10, a)
            await settle(gateway.base, 120_000)
          }
          /** A is failing: its breaker is open (or probing) with the failures and the last error in view. */
          const expectOpen = async (label: string, error: RegExp) => {
            const health = await healthOf(a)
            console.info(`failover (${database.name}), ${label}: A's health ${JSON.stringify(health)}`)
            expect(["open", "half_open"], `${label}: A's breaker`).toContain(health.breaker)
            expect(health.consecutive_failures, `${label}: A's consecutive failures`).toBeGreaterThan(0)
            expect(health.opened_at, `${label}: when A's breaker opened`).not.toBeNull()
            expect(health.last_error ?? "", `${label}: A's last error`).toMatch(error)
            expect(await breakerGauge(a)).toBeGreaterThanOrEqual(1)
            expect((await healthOf(b)).breaker).toBe("closed")
          }

          // healthy: A (priority 10) takes everything
          await phase("healthy", 10, a)
          await settle(gateway.base, 120_000)

          // A answers 500 with the error envelope: a submit answered 500 may have made a job (uncertain), so it is
          // looked for on A first; once A's breaker opens, every task goes on to B (docs/channels.md)
          proxy.setMode("error")
          await phase("500", 20, b)
          expect(proxy.counts().failed["POST"] ?? 0, "submits A's proxy answered 500").toBeGreaterThan(0)
          await expectOpen("500", /INTERNAL_ERROR|500|injected/)
          const text = await metrics(gateway.base)
          expect(metric(text, "mediagate_channel_failovers_total", { channel: a.id, call: "submit" })).toBeGreaterThan(
            0
          )
          expect(
            metric(text, "mediagate_channel_requests_total", { channel: a.id, call: "submit", outcome: "unavailable" })
          )
            .toBeGreaterThan(0)

          // the proxy passes through again: after the cooldown A takes the tasks again, its breaker closed
          await recover("after 500")

          // A hangs (never answers): each submit times out after A's timeout_ms (5 s), uncertain as a 500; the tasks
          // go on to B once A's breaker is open
          proxy.setMode("hang")
          await phase("hang", 20, b)
          expect(proxy.counts().hung["POST"] ?? 0, "submits A's proxy held").toBeGreaterThan(0)
          await expectOpen("hang", /time|timeout/i)
          await recover("after the hang")

          // A refuses connections (nothing listens at its address any more): on to B
          await proxy.close()
          await phase("refused", 20, b)
          await expectOpen("refused", /Transport error|ECONNREFUSED|fetch failed|connect/i)

          await settle(gateway.base, 120_000)
          const tasks = await readTasks(gateway.base, [...routed.keys()])
          expect(unsucceeded(tasks), "tasks that did not succeed").toEqual([])
          // every task ran where it was submitted (the fault phases' tasks on B)
          expect(tasks.filter((task) => task.channel_id !== routed.get(task.id)).map((task) => task.id), "tasks moved")
            .toEqual([])
          const onA = tasks.filter((task) => task.channel_id === a.id)
          const onB = tasks.filter((task) => task.channel_id === b.id)
          expect(onA.length + onB.length).toBe(tasks.length)
          expect(onA.length, "tasks on A: the healthy and recovered phases").toBeGreaterThanOrEqual(10 + 2 * 11)
          expect(onB.length, "tasks on B: the fault phases (and probes during a cooldown)").toBeGreaterThanOrEqual(
            3 * 20
          )
          console.info(
            `failover (${database.name}): ${onA.length} tasks on A, ${onB.length} on B; proxy ${
              JSON.stringify(proxy.counts())
            }`
          )

          // no double submit: each upstream holds exactly the jobs of the gateway's tasks routed to it
          expect(await upstreamTaskIds(upstream1), "upstream 1's tasks").toEqual(jobIds(onA))
          expect(await upstreamTaskIds(upstream2), "upstream 2's tasks").toEqual(jobIds(onB))
          await expectChargedOnce(gateway.base, gateway.keys, tasks, 100)
        }),
      480_000
    )

    it(
      "kill mid-load: upstream 1 SIGKILLed with 100 tasks on it; every task succeeds on B, charged once",
      () =>
        scenario(`kill (${database.name})`, async (scope) => {
          // an image job takes 3 s × 60 = 3 min on upstream 1: every job is still running there when it is killed,
          // even where creating the 100 tasks takes a minute or two (a slow, busy machine); 1.5 s on upstream 2
          const upstream1 = await startUpstream(scope, "upstream-1", 60)
          const upstream2 = await startUpstream(scope, "upstream-2", 0.5)
          const gateway = await firstGateway(scope, "gateway", freshDatabase(scope, database.postgres))
          // A's 100 jobs polled every 2 s rather than 500 ms: 50 reads a second, which a busy machine's upstream
          // answers without a failed read (five in a row open A's breaker and move its jobs before the kill)
          const a = await createChannel(
            gateway.base,
            relay("A", upstream1.base, upstream1, { priority: 10, settings: { poll_interval_ms: 2000 } })
          )
          const b = await createChannel(gateway.base, relay("B", upstream2.base, upstream2, { priority: 0 }))

          const ids = await createTasks(gateway.base, gateway.keys.live, 100, (i) => `kill ${i}`)
          const before = await submitted(gateway.base, ids)
          expect(offChannel(before, a.id), "tasks not on A before the kill").toEqual([])
          expect(
            before.filter((task) => terminal.has(task.status)).map((task) => task.id),
            "tasks ended before the kill"
          ).toEqual([])
          const running = await inFlight(upstream1.base)
          expect(running, "tasks in flight on upstream 1 at the kill").toBeGreaterThan(0)
          upstream1.server.child.kill("SIGKILL")

          await settle(gateway.base, 240_000)
          const tasks = await readTasks(gateway.base, ids)
          expect(unsucceeded(tasks), "tasks that did not succeed").toEqual([])
          expect(offChannel(tasks, b.id), "tasks not moved to B").toEqual([])
          // upstream 2 holds one job per task: each moved once
          expect(await upstreamTaskIds(upstream2), "upstream 2's tasks").toEqual(jobIds(tasks))
          const text = await metrics(gateway.base)
          console.info(
            `kill (${database.name}): ${running} of 100 tasks running on upstream 1 at the kill; failovers from A ${
              metric(text, "mediagate_channel_failovers_total", { channel: a.id })
            }, A's health ${JSON.stringify((await readChannel(gateway.base, a.id)).health)}`
          )
          await expectChargedOnce(gateway.base, gateway.keys, tasks, 100)
        }),
      480_000
    )

    it(
      "two gateway nodes on one database hold a channel's concurrency limit of 3",
      () =>
        scenario(`concurrency (${database.name})`, async (scope) => {
          // an image job takes 3 s × 0.5 = 1.5 s on the upstream
          const upstream = await startUpstream(scope, "upstream", 0.5)
          const db = freshDatabase(scope, database.postgres)
          const first = await firstGateway(scope, "gateway-1", db)
          const second = { base: (await startGateway(scope, "gateway-2", db)).baseUrl }
          const channel = await createChannel(first.base, relay("limited", upstream.base, upstream, { concurrency: 3 }))
          // the second node's router reads the channels every 5 s (docs/channels.md); until then it routes the
          // model to the environment's default channel (its admin list reads the database, so it cannot tell)
          expect((await admin<Array<ChannelView>>(second.base, "/admin/v1/channels")).map((c) => c.id)).toContain(
            channel.id
          )
          await sleep(6000)

          const upstreamSamples: Array<number> = []
          const channelSamples: Array<number> = []
          let sampling = true
          const samplers = [
            (async () => {
              while (sampling) {
                upstreamSamples.push(await inFlight(upstream.base))
                await sleep(50)
              }
            })(),
            (async () => {
              for (let i = 0; sampling; i++) {
                channelSamples.push(
                  (await readChannel(i % 2 === 0 ? first.base : second.base, channel.id)).health.in_flight
                )
                await sleep(100)
              }
            })()
          ]
          try {
            const ids = [
              ...await createTasks(first.base, first.keys.live, 8, (i) => `node 1 task ${i}`),
              ...await createTasks(second.base, first.keys.live, 8, (i) => `node 2 task ${i}`)
            ]
            await settle(first.base, 300_000)
            const tasks = await readTasks(first.base, ids)
            expect(unsucceeded(tasks), "tasks that did not succeed").toEqual([])
            expect(offChannel(tasks, channel.id)).toEqual([])
            expect(await upstreamTaskIds(upstream), "the upstream's tasks").toEqual(jobIds(tasks))
          } finally {
            sampling = false
            await Promise.all(samplers)
          }
          const most = Math.max(...upstreamSamples)
          console.info(
            `concurrency (${database.name}): ${upstreamSamples.length} upstream samples, at most ${most} in flight ` +
              `(${upstreamSamples.filter((n) => n === 3).length} at 3); channel in_flight at most ${
                Math.max(...channelSamples)
              }`
          )
          expect(most, "the upstream's tasks in flight, at most").toBeLessThanOrEqual(3)
          expect(most, "the limit is used").toBe(3)
          expect(Math.max(...channelSamples), "the channel's in_flight, at most").toBeLessThanOrEqual(3)
          // both nodes submitted to the channel: the limit held across them
          for (const node of [first.base, second.base]) {
            expect(
              metric(await metrics(node), "mediagate_channel_requests_total", { channel: channel.id, call: "submit" }),
              node
            )
              .toBeGreaterThan(0)
          }
        }),
      480_000
    )
  })
}
