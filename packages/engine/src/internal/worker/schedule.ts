/**
 * When a worker's step calls its upstream again: the default poll schedules (one for upstreams that report every
 * change, a safety net for lost callbacks), the retry backoff, and the delays a worker's steps use.
 */
import type { TaskRecord } from "../../TaskRecord.js"
import type { Upstream } from "../../Upstream.js"
import type { WorkerOptions } from "../../Worker.js"

/**
 * Default poll schedule: the first poll when the task is expected to be done (80% of its estimate, 1 to 30 s),
 * then 1 s, 1.5 s, 2.25 s, ... at most 15 s.
 */
export const defaultPollDelayMs = (polls: number, task: TaskRecord): number =>
  polls === 0
    ? Math.min(30_000, Math.max(1000, Math.round(task.estimatedSeconds * 800)))
    : Math.min(15_000, Math.round(1000 * 1.5 ** (polls - 1)))

/**
 * Poll schedule when the upstream reports every change, a safety net for lost callbacks (a restart): the first poll
 * once the job should be done (1.25 × the task's estimate, from 10 s to 60 s), then 20 s, 40 s, ... at most 60 s.
 */
export const safetyNetPollDelayMs = (polls: number, task?: TaskRecord): number =>
  polls === 0
    ? Math.min(60_000, Math.max(10_000, Math.round((task?.estimatedSeconds ?? 0) * 1250)))
    : Math.min(60_000, 10_000 * 2 ** polls)

/**
 * Poll schedule of a job whose upstream delivers its end by a callback it retries until we answer (fal,
 * Replicate): a slower safety net, for a callback lost with a process that was killed or never delivered. The first
 * poll at twice the task's estimate (from 60 s to 10 min), then every 60 s: a job that ends on time costs no poll
 * before its callback, even when the estimate is short (a model's first tasks use its default).
 */
export const retriedCallbackPollDelayMs = (polls: number, task: TaskRecord): number =>
  polls === 0 ? Math.min(600_000, Math.max(60_000, Math.round(task.estimatedSeconds * 2000))) : 60_000

/** Default retry backoff after a failed upstream call: 2 s, 4 s, ... at most 60 s. */
export const defaultRetryDelayMs = (attempt: number): number => Math.min(60_000, 2000 * 2 ** attempt)

/**
 * The poll and retry delays of a worker's steps: the options' own, else the upstream's poll interval for the task,
 * else the schedule its notifications call for.
 */
export const stepDelays = (options: Pick<WorkerOptions, "pollDelay" | "retryDelay">, upstream: Upstream["Type"]) => {
  const scheduled = upstream.notifies === undefined
    ? (upstream.notifiesChanges ? safetyNetPollDelayMs : defaultPollDelayMs)
    : (polls: number, task: TaskRecord) =>
      upstream.notifies!(task) ? safetyNetPollDelayMs(polls, task) : defaultPollDelayMs(polls, task)
  const upstreamDelay = upstream.pollDelay
  const stepOptions = {
    pollDelay: options.pollDelay ?? (upstreamDelay === undefined
      ? scheduled
      : (polls: number, task: TaskRecord) => upstreamDelay(polls, task) ?? scheduled(polls, task)),
    retryDelay: options.retryDelay ?? defaultRetryDelayMs
  }
  return stepOptions
}

/**
 * How late a claim took its tasks (ms): `claimedAt` − when the longest-waiting of them became due, what the worker
 * reports to the Admission gate; 0 for a claim that found nothing due, `undefined` when no task it took tells.
 * A task is due at its `nextRunAt`, except one whose job's change woke it: `markDue` puts such a task in creation
 * order (`nextRunAt` at or before its `createdAt`, which would count the job's whole length as lateness), so it
 * became due when its change was heard (`heardAt`), and one whose change another process heard tells nothing.
 */
export const claimLateness = (
  claimed: ReadonlyArray<TaskRecord>,
  claimedAt: number,
  heardAt: (taskId: string) => number | undefined
): number | undefined => {
  if (claimed.length === 0) return 0
  let late: number | undefined
  for (const task of claimed) {
    const woken = task.upstreamJobId !== null && task.nextRunAt !== null && task.nextRunAt <= task.createdAt
    const due = woken ? heardAt(task.id) : task.nextRunAt ?? undefined
    if (due !== undefined) late = Math.max(late ?? 0, claimedAt - due)
  }
  return late
}
