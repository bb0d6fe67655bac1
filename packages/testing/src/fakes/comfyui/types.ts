/**
 * The ComfyUI fake's types and constants: the public options, job and fake shapes, and the internal records of a
 * prompt, its validation errors and its history entry, with the output node classes ComfyUI saves from.
 */
import type { FakePlan, LoggedRequest, Planner, SubmitFault } from "../common.js"

/** How the fake behaves. */
export interface ComfyFakeOptions {
  /** When set, every request (and the WebSocket upgrade) must carry `Authorization: Bearer <apiKey>`, else 401. */
  readonly apiKey?: string
  /** Plans each prompt (given `{ prompt, workflow }` and `"comfyui"`), before the prompt's directives. */
  readonly plan?: Planner
  /** How many prompts run at once (default 1, like ComfyUI). */
  readonly parallel?: number
  /** The port to listen on (default: a free one). */
  readonly port?: number
}

/** A prompt the fake accepted. */
export interface ComfyJob {
  /** The prompt id. */
  readonly id: string
  /** Its queue number (lower runs first). */
  readonly number: number
  /** The API-format workflow. */
  readonly graph: Record<string, unknown>
  /** The `client_id` it was sent with. */
  readonly clientId: string | undefined
  readonly plan: FakePlan
  state: "pending" | "running" | "success" | "error" | "interrupted" | "deleted"
}

/** A running fake. */
export interface ComfyFake {
  /** Base URL, `http://127.0.0.1:<port>` (the WebSocket is `ws://127.0.0.1:<port>/ws`). */
  readonly url: string
  /** Every accepted prompt by id. */
  readonly jobs: ReadonlyMap<string, ComfyJob>
  /** The requests received (WebSocket upgrades included), the last 100,000. */
  readonly requests: ReadonlyArray<LoggedRequest>
  /** How many requests reached each route (after the `down` and key checks). */
  readonly counts: () => { prompt: number; history: number; view: number; interrupt: number; queueDelete: number }
  /** While true, every HTTP request (and WebSocket upgrade) answers 503. */
  down: boolean
  /** Faults for the next `POST /prompt`s, one each, taken from the front (`common.ts`). */
  readonly submitFaults: Array<SubmitFault>
  /** How many prompts mention `text` (a task id) in their graph or `extra_data`. */
  readonly jobCount: (text: string) => number
  /** Stops the prompts, closes the sockets and the server. */
  readonly close: () => Promise<void>
}

export type Json = Record<string, unknown>
export type Message = [string, Json]

export interface ValidationError {
  readonly type: string
  readonly message: string
  readonly details: string
  readonly extra_info: Json
}

export interface NodeErrors {
  errors: Array<ValidationError>
  dependent_outputs: Array<string>
  class_type: string
}

export interface Node {
  readonly class_type: string
  readonly inputs: Json
}

export interface Job extends ComfyJob {
  readonly seq: number
  readonly nodes: Readonly<Record<string, Node>>
  readonly extraData: Json
  readonly outputNodes: ReadonlyArray<string>
  /** The nodes to run, in order. */
  readonly order: ReadonlyArray<string>
  /** Whether the plan chose the outputs (a video output node leaves them alone then). */
  readonly explicitOutputs: boolean
  readonly createdAt: number
  abort: AbortController | undefined
  currentNode: string | undefined
}

export interface HistoryEntry {
  readonly prompt: [number, string, Json, Json, Array<string>]
  readonly outputs: Record<string, Json>
  readonly status: { status_str: "success" | "error"; completed: boolean; messages: Array<Message> }
  readonly meta: Record<string, Json>
}

export interface StoredFile {
  readonly bytes: Uint8Array
  readonly contentType: string
}

export const outputClasses = new Set(["SaveImage", "PreviewImage", "SaveVideo", "SaveAnimatedWEBP", "VHS_VideoCombine"])
export const videoClasses = new Set(["SaveVideo", "VHS_VideoCombine"])
export const sensitiveExtraData = ["auth_token_comfy_org", "api_key_comfy_org"]
export const maxRequests = 100_000
export const maxHistory = 10_000
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
export const jobStatuses = ["pending", "in_progress", "completed", "failed", "cancelled"]
export const extensions: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/gif": "gif",
  "video/mp4": "mp4",
  "video/webm": "webm"
}

export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)
