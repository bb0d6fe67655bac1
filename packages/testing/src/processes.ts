/**
 * Child processes for tests, run without blocking the test's thread: the suites share worker threads, and a
 * `spawnSync` that takes a minute on a slow, busy machine keeps the worker from answering the runner (vitest then
 * reports `Timeout calling "onTaskUpdate"`) and from running its own timers.
 */
import { spawn } from "node:child_process"

/** How a process ended and what it wrote. */
export interface Finished {
  /** The exit code; `null` when a signal ended it (`signal`). */
  readonly status: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link run}. */
export interface RunOptions {
  readonly cwd?: string | undefined
  /** The whole environment of the process (the test's own when not given). */
  readonly env?: NodeJS.ProcessEnv | undefined
  /** Written to its standard input, which is then closed. */
  readonly input?: string | undefined
  /** SIGKILLs it after this long (it then ends with `signal` SIGKILL). */
  readonly timeoutMs?: number | undefined
}

/** Runs `command` to its end and answers its exit and output; fails only when it cannot be started. */
export const run = (command: string, args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      ...(options.env === undefined ? {} : { env: options.env }),
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => child.kill("SIGKILL"), options.timeoutMs)
    child.once("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    // "close": after the exit and the end of its output
    child.once("close", (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stdout, stderr })
    })
    if (options.input !== undefined) child.stdin!.end(options.input)
  })
