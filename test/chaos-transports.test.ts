/**
 * Outages under load on every transport (docs/operations.md#outages): two built server nodes (A and B) on one fresh
 * PostgreSQL database, both with workers, route one model over three channels of equal priority and weight, made
 * through the admin API: `relay` to a third server of ours (on a fresh database of its own), `fal` to the fal fake
 * and `replicate` to the Replicate fake (`@mediagate/testing/fakes`), callbacks on, both nodes behind one public base
 * URL as docs/operations.md requires (a small balancer: the upstreams' callbacks reach a live node). While N live
 * requests run (an `Idempotency-Key` each, retried on 503 or a dropped connection as the docs tell clients to), node
 * B is SIGKILLed and started again, the database "restarts" (every backend of the test database terminated and new
 * connections refused for a few seconds, `ALLOW_CONNECTIONS false`: a real restart of the cluster would break the
 * other PostgreSQL suites that `npm test` runs on it at the same time) and the fal fake stops listening for 10 s
 * (connections refused; its jobs run on and call back, and it listens again on its port).
 *
 * Then, within bounds:
 * - no answer but a 2xx or a 503 `SERVICE_UNAVAILABLE` (never a 500, never a hang); dropped connections only from
 *   the killed node; every request got its task, one per idempotency key, every task terminal;
 * - each task charged exactly once, refunded at most once (never when it succeeded), and every account's ledger
 *   sums to its balance;
 * - no more upstream jobs per task than its attempts, and none fewer than it certainly made (fal and Replicate count
 *   their jobs by our task id, the relay's server its tasks by our `<task>.<channel>` idempotency key): the job the
 *   task records, on its channel; each job given up on a channel that failed and each uncertain submit left on one
 *   (docs/channels.md, read from the nodes' logs); the relay's server made no task without our key; every upstream
 *   got jobs. A task that breaks this is named with its jobs (where and when each was made).
 *
 * The nodes' lease (`MEDIAGATE_WORKER_LEASE`) is 10 s: longer than the database outage, as in production (30 s), so
 * a step whose write waits out the outage still holds its task; the killed node's tasks are claimed again after it.
 *
 * Runs on PostgreSQL only: skipped (with a warning) when none answers at 127.0.0.1:5432, failing under `CI=true`.
 * A failure keeps the servers' logs in a temporary directory (its path is printed).
 */
import { describe, expect, it } from "@effect/vitest"
import { type FalFake, startFalFake } from "@mediagate/testing/fakes/fal"
import { type ReplicateFake, startReplicateFake } from "@mediagate/testing/fakes/replicate"
import { rmSync } from "node:fs"
import { awaitBuild } from "./build.js"
import {
  activeTasks,
  expectBilledOnce,
  type Node,
  query,
  restartDatabase,
  runLoad,
  settled,
  sleep,
  startBalancer,
  terminalList,
  unexpectedAnswers
} from "./chaos.js"
import {
  channelKey,
  type ChannelView,
  createChannel,
  freshDatabase,
  makeAccount,
  openScope,
  serverEnv,
  withLogs
} from "./harness.js"
import { psql, type RunningServer, runPostgres, startServer } from "./server.js"

if (!runPostgres) {
  console.warn("PostgreSQL is not running at 127.0.0.1:5432: the chaos test across transports is skipped")
}

/** Logical requests (each retried until it gets its task). */
const N = 200
/** The model every channel serves (vendor4, one image, estimate 10 s). */
const model = "vendor4-3-0-t2i"
/** How long the fal fake is down. */
const upstreamOutageMs = 10_000

awaitBuild()

describe.skipIf(!runPostgres)("outages on every transport", () => {
  it("relay, fal and replicate channels under load survive a SIGKILL, a database restart and an upstream down", () => {
    const scope = openScope()
    let fal: FalFake | undefined
    let replicate: ReplicateFake | undefined
    return withLogs("chaos across transports", scope.servers, async () => {
      fal = await startFalFake()
      replicate = await startReplicateFake()

      // the relay's server: ours, on a database of its own, simulated jobs of ~1.5 s, an account to relay to
      const upstreamDb = freshDatabase(scope, true, "chaos_relay")
      const upstream = scope.server(
        "relay-upstream",
        await startServer(await serverEnv({ ...upstreamDb, MEDIAGATE_SIM_TIME_SCALE: "0.5" }))
      )
      const relayKeys = await makeAccount(upstream.baseUrl, "gateway", 1000)

      // nodes A and B on one database, each its own public base URL (the upstreams call it back)
      const gatewayDb = freshDatabase(scope, true, "chaos_transports")
      const database = new URL(gatewayDb["DATABASE_URL"]!).pathname.slice(1)
      scope.defer(() => psql(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`))
      scope.defer(() => rmSync(gatewayDb["MEDIAGATE_DATA_DIR"]!, { recursive: true, force: true }))
      scope.defer(() => rmSync(upstreamDb["MEDIAGATE_DATA_DIR"]!, { recursive: true, force: true }))
      const envs: Record<Node, Record<string, string>> = {
        a: await serverEnv({ ...gatewayDb }),
        b: await serverEnv({ ...gatewayDb })
      }
      // one public address for both nodes (the upstreams call back there)
      const balancer = await startBalancer(() => [envs.a, envs.b].map((env) => `http://127.0.0.1:${env["PORT"]}`))
      scope.defer(() => balancer.close())
      for (const env of Object.values(envs)) env["MEDIAGATE_PUBLIC_BASE_URL"] = balancer.url
      const nodes: Partial<Record<Node, RunningServer>> = {}
      let starts = 0
      const start = async (node: Node) => {
        nodes[node] = scope.server(
          `node-${node}-${++starts}`, // (the killed node's log is kept too)
          await startServer({
            ...envs[node],
            MEDIAGATE_CHANNEL_KEY: channelKey,
            MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true",
            // longer than the database outage (its default is 30 s), short enough for the killed node's tasks
            MEDIAGATE_WORKER_LEASE: "10s",
            MEDIAGATE_DB_CONNECT_TIMEOUT: "2s",
            // a task whose submit may have made a job waits this long for its callback before submitting again
            MEDIAGATE_CHANNEL_SUBMIT_WAIT: "20s"
          })
        )
      }
      await start("a")
      await start("b")
      const bases = { a: nodes.a!.baseUrl, b: nodes.b!.baseUrl }

      // three channels of one model, equal priority and weight: each task meets them in an order of its own
      const routing = { families: ["vendor4" as const], models: [model] }
      const target = (name: string) => ({ [model]: { target: name } })
      const channels: Record<"relay" | "fal" | "replicate", ChannelView> = {
        relay: await createChannel(bases.a, {
          name: "chaos relay",
          transport: "relay",
          settings: { base_url: upstream.baseUrl },
          credentials: { api_key: relayKeys.live },
          ...routing
        }),
        fal: await createChannel(bases.a, {
          name: "chaos fal",
          transport: "fal",
          settings: { base_url: fal.url, poll_interval_ms: 2000, mapping: target("fal-ai/flux/dev") },
          credentials: { api_key: fal.key },
          ...routing
        }),
        replicate: await createChannel(bases.a, {
          name: "chaos replicate",
          transport: "replicate",
          settings: {
            base_url: replicate.url,
            poll_interval_ms: 2000,
            mapping: target("black-forest-labs/flux-dev")
          },
          credentials: { api_key: replicate.token },
          ...routing
        })
      }
      const keys = await makeAccount(bases.a, "chaos", 1000)

      // N requests over ~12 s (jobs of ~1.5 s on every upstream), the chaos while they run
      const began = Date.now()
      const load = runLoad({
        n: N,
        bases,
        key: keys.live,
        keyPrefix: "chaos-transports",
        began,
        paceMs: 50,
        deadline: began + 150_000,
        clients: 8,
        request: (i) => ({
          path: "/api/v1/vendor4/text-to-image",
          body: { model, input: { prompt: `[fake:delay=1500] chaos ${i}` } }
        })
      })
      await sleep(1000)
      nodes.b!.child.kill("SIGKILL")
      await sleep(300)
      const restarted = start("b")
      await sleep(700)
      await fal.stop()
      const falBack = sleep(upstreamOutageMs).then(() => fal!.restart())
      await sleep(1500)
      await restartDatabase(database, 3000)
      await restarted
      await falBack
      const { answers, taskOf } = await load

      const tally = new Map<string, number>()
      for (const a of answers) {
        const what = `${a.node} ${a.what} ${a.status ?? a.error}`
        tally.set(what, (tally.get(what) ?? 0) + 1)
      }
      const slowest = answers.reduce((max, a) => Math.max(max, a.ms), 0)
      console.info(
        `chaos across transports: answers ${[...tally].map(([what, n]) => `${what} × ${n}`).join(", ")}; ` +
          `slowest ${slowest} ms; load over after ${Date.now() - began} ms`
      )
      const unexpected = unexpectedAnswers(answers, "b")
      expect(unexpected.slice(0, 5), "answers other than 2xx / 503 (or the killed node's dropped connections)")
        .toEqual([])
      expect(taskOf.size, "requests that got their task").toBe(N)

      // every task ends (bounded)
      const done = await settled(Date.now() + 180_000, () => activeTasks(database) === 0)
      const active = query(
        database,
        `SELECT id, status, channel_id, upstream_job_id, polls FROM mediagate_tasks
         WHERE status NOT IN (${terminalList}) LIMIT 5`
      )
      expect(done, `every task terminal; still active:\n${active}`).toBe(true)
      const tasks = query(database, `SELECT id, status, channel_id, upstream_job_id FROM mediagate_tasks ORDER BY id`)
        .split("\n")
        .map((line) => {
          const [id, status, channel, ...job] = line.split("|") // (a fal job id is `<app>|<request id>`)
          const jobId = job.join("|")
          return { id: id!, status, channel: channel === "" ? null : channel!, job: jobId === "" ? null : jobId }
        })
      expect(tasks.map((task) => task.id), "one task per idempotency key").toEqual([...new Set(taskOf.values())].sort())

      // the money
      expectBilledOnce(database, N)

      // one upstream job per attempt. A task's attempts (docs/channels.md): its recorded job (a real job id on its
      // channel) or its unresolved uncertain submit (`submit?<at>`: a job at most); each job given up on a failed
      // channel (it exists); each uncertain submit left on a failing channel (a job at most). The nodes log the two
      // latter.
      const logs = scope.servers.map(([, server]) => server.output()).join("\n")
      /** Distinct (task, what) pairs per task (a step whose write failed logs again when it runs again). */
      const perTask = (pattern: RegExp) => {
        const seen = new Set<string>()
        const counts = new Map<string, number>()
        for (const [what, id] of logs.matchAll(pattern)) {
          if (!seen.has(what)) counts.set(id!, (counts.get(id!) ?? 0) + 1)
          seen.add(what)
        }
        return counts
      }
      /**
       * The jobs given up per task (their channel failed): a job given up may still finish, and its callback then
       * names it for the task, which takes it again (`noteJob`): that job is counted once, as the recorded one.
       */
      const gaveUpJobs = new Map<string, Set<string>>()
      for (const [, id, job] of logs.matchAll(/task (task_\w+): upstream job (\S+) given up, submitting again/g)) {
        gaveUpJobs.set(id!, (gaveUpJobs.get(id!) ?? new Set<string>()).add(job!))
      }
      const gaveUpOthers = (task: { readonly id: string; readonly job: string | null }) =>
        [...gaveUpJobs.get(task.id) ?? []].filter((job) => job !== task.job).length
      const leftThere = perTask(/task (task_\w+): channel \S+ is failing; a job its lost submit made is left there/g)
      const upstreamName = new URL(upstreamDb["DATABASE_URL"]!).pathname.slice(1)
      const relayKeysUsed = query(upstreamName, `SELECT "key" FROM mediagate_task_idempotency`).split("\n")
        .filter((line) => line !== "")
      const upstreamTasks = Number(query(upstreamName, `SELECT count(*) FROM mediagate_tasks`))
      expect(upstreamTasks, "tasks of the relay's server (each with our idempotency key)").toBe(relayKeysUsed.length)
      const channelOf = new Map(Object.entries(channels).map(([name, channel]) => [channel.id, name]))
      const wrong: Array<string> = []
      for (const task of tasks) {
        const jobs = {
          relay: relayKeysUsed.filter((key) => key.startsWith(`${task.id}.`)).length,
          fal: fal.jobCount(task.id),
          replicate: replicate.jobCount(task.id)
        }
        const total = jobs.relay + jobs.fal + jobs.replicate
        const on = channelOf.get(task.channel ?? "") as keyof typeof jobs | undefined
        const uncertain = task.job?.startsWith("submit?") === true
        const recorded = task.job !== null && !uncertain
        const known = (recorded ? 1 : 0) + gaveUpOthers(task)
        const maybe = (uncertain ? 1 : 0) + (leftThere.get(task.id) ?? 0)
        const fine = known <= total && total <= known + maybe && (!recorded || (on !== undefined && jobs[on] >= 1))
        if (!fine) {
          // where and when each job was made
          const made = [
            ...[...fal.jobs.values()].map((job) => ({ at: job.submittedAt, webhook: job.webhook, on: "fal" })),
            ...[...replicate.predictions.values()].map((job) => ({
              at: job.createdAt,
              webhook: job.webhook,
              on: "replicate"
            }))
          ].filter((job) => job.webhook?.includes(task.id) === true)
            .map((job) => `${job.on} at ${new Date(job.at).toISOString()}`)
          wrong.push(
            `${task.id} ${task.status} on ${on ?? "none"} (job ${task.job}; ${gaveUpOthers(task)} other given up, ` +
              `${leftThere.get(task.id) ?? 0} uncertain left): ${JSON.stringify(jobs)}; ${made.join(", ")}`
          )
        }
      }
      const spread = Object.keys(channels).map((name) =>
        `${name} ${tasks.filter((task) => channelOf.get(task.channel ?? "") === name).length}`
      )
      const statuses = query(database, `SELECT status, count(*) FROM mediagate_tasks GROUP BY status ORDER BY status`)
      console.info(
        `chaos across transports: tasks by channel: ${spread.join(", ")}; by status: ` +
          `${statuses.replaceAll("\n", ", ")}; jobs given up ${
            [...gaveUpJobs.values()].reduce((a, b) => a + b.size, 0)
          }, ` +
          `uncertain submits left ${[...leftThere.values()].reduce((a, b) => a + b, 0)}`
      )
      expect(
        wrong.slice(0, 10),
        `tasks with more (or fewer) upstream jobs than attempts (${wrong.length}): ${wrong.slice(0, 5).join(" / ")}`
      ).toEqual([])
      // the load reached every upstream
      expect(relayKeysUsed.length, "tasks the relay made").toBeGreaterThan(0)
      expect(fal.jobs.size, "jobs on fal").toBeGreaterThan(0)
      expect(replicate.predictions.size, "predictions on Replicate").toBeGreaterThan(0)
    }, "mg-chaos-transports-").finally(async () => {
      await scope.close()
      await Promise.all([fal?.close(), replicate?.close()])
    })
  }, 420_000)
})
