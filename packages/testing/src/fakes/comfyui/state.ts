/**
 * The ComfyUI fake's shared state (queue, history, saved files, sockets, request log and counters), the WebSocket
 * messages every part sends through it, and the request log and key check of both HTTP and the WebSocket upgrade.
 */
import type { IncomingMessage } from "node:http"
import { WebSocket } from "ws"
import type { LoggedRequest } from "../common.js"
import { type ComfyFakeOptions, type HistoryEntry, type Job, maxRequests, type StoredFile } from "./types.js"

/** Everything one running fake keeps. */
export interface ComfyState {
  readonly options: ComfyFakeOptions
  /** How many prompts run at once. */
  readonly parallel: number
  readonly log: Array<LoggedRequest>
  readonly jobs: Map<string, Job>
  readonly pending: Array<Job>
  readonly running: Set<Job>
  readonly history: Map<string, HistoryEntry>
  readonly files: Map<string, StoredFile>
  readonly counters: Map<string, number>
  readonly sockets: Map<string, WebSocket>
  readonly counts: { prompt: number; history: number; view: number; interrupt: number; queueDelete: number }
  /** The next queue number. */
  number: number
  /** The next acceptance order. */
  seq: number
  closed: boolean
}

export const makeState = (options: ComfyFakeOptions): ComfyState => ({
  options,
  parallel: Math.max(1, options.parallel ?? 1),
  log: [],
  jobs: new Map(),
  pending: [],
  running: new Set(),
  history: new Map(),
  files: new Map(),
  counters: new Map(),
  sockets: new Map(),
  counts: { prompt: 0, history: 0, view: 0, interrupt: 0, queueDelete: 0 },
  number: 0,
  seq: 0,
  closed: false
})

/** The WebSocket messages of one fake. */
export interface Messages {
  readonly send: (socket: WebSocket | undefined, type: string, data: unknown) => void
  /** `send_sync(event, data, sid)`: to one socket, or to all when `sid` is None. */
  readonly sendSync: (sid: string | undefined, type: string, data: unknown) => void
  readonly queueInfo: () => { exec_info: { queue_remaining: number } }
  readonly queueUpdated: () => void
}

export const makeMessages = (state: ComfyState): Messages => {
  const { pending, running, sockets } = state
  const send = (socket: WebSocket | undefined, type: string, data: unknown) => {
    if (socket !== undefined && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type, data }))
  }
  const sendSync = (sid: string | undefined, type: string, data: unknown) => {
    if (sid !== undefined) send(sockets.get(sid), type, data)
    else for (const socket of sockets.values()) send(socket, type, data)
  }
  const queueInfo = () => ({ exec_info: { queue_remaining: pending.length + running.size } })
  const queueUpdated = () => sendSync(undefined, "status", { status: queueInfo() })
  return { send, sendSync, queueInfo, queueUpdated }
}

export const authorized = (state: ComfyState, request: IncomingMessage) =>
  state.options.apiKey === undefined || request.headers.authorization === `Bearer ${state.options.apiKey}`

export const record = (state: ComfyState, request: IncomingMessage) => {
  const log = state.log
  log.push({ method: request.method ?? "GET", url: request.url ?? "/", at: Date.now(), headers: request.headers })
  if (log.length > 2 * maxRequests) log.splice(0, log.length - maxRequests)
}
