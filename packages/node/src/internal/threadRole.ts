/**
 * Which part of the server a stack is when the production server runs on two threads (`internal/workerThread.ts`):
 * the whole server (one thread, and every embedded stack), the API thread (no workers, its admission gate driven by
 * the worker thread) or the worker thread (workers and the webhook dispatcher; its claims report to the API
 * thread's gate).
 */
import type * as Admission from "@mediagate/engine/Admission"
import type { ChannelHealthView, ChannelRuntime } from "@mediagate/vendors/ChannelStore"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Metrics from "../Metrics.js"

/**
 * The API thread's side of the link to the worker thread, as its stack needs it.
 */
export interface ApiBridge {
  /** The worker thread's event-loop utilization since the last call (0 to 1; 0 before it runs). */
  utilization: () => number
  /** The API thread's admission gate, once its stack has built it: the worker thread's claims report to it. */
  gate: Admission.Gate | undefined
  /** The worker thread's metrics (none before it runs, or when it does not answer in time). */
  metrics: Effect.Effect<ReadonlyArray<Metrics.Series>>
  /** The worker thread's breaker of a channel, the one that routes tasks (undefined before it runs, or late). */
  channelHealth: (id: string) => Effect.Effect<ChannelHealthView | undefined>
  /** Makes the worker thread read the stored channels again now (after an operator's write here). */
  refreshChannels: Effect.Effect<void>
}

/**
 * The part of the server a stack is.
 */
export type Role =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Api"; readonly bridge: ApiBridge }
  | {
    readonly _tag: "Workers"
    /** A claim's lateness, for the API thread's gate. */
    readonly report: (lateMs: number) => void
    /** Called with the thread's channel runtime once built (the API thread asks it for breakers and reloads). */
    readonly channels: (runtime: ChannelRuntime["Type"]) => void
  }

/** The whole server on one thread: the default. */
export const whole: Role = { _tag: "Whole" }

/**
 * The role of the stack built in this context (default {@link whole}).
 */
export class ThreadRole extends Context.Reference<ThreadRole>()("@mediagate/node/ThreadRole", {
  defaultValue: (): Role => whole
}) {}
