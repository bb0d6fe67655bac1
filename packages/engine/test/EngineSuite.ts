/**
 * The engine's behaviour end to end (TaskService + Worker + storage + fake upstream), in real time with short
 * durations: one suite per concern (`EngineRunSuite`, `EngineRequestsSuite`, `EngineWorkersSuite`), registered
 * together per storage backend by {@link engineSuite}.
 */
import { requestsSuite } from "./EngineRequestsSuite.js"
import { runSuite } from "./EngineRunSuite.js"
import { workersSuite } from "./EngineWorkersSuite.js"
import type { EngineBackend } from "./supportEngine.js"

export { awaitTerminal, type EngineBackend, principal } from "./supportEngine.js"

/** Registers every engine suite for one backend. */
export const engineSuite = (name: string, backend: EngineBackend) => {
  runSuite(name, backend)
  requestsSuite(name, backend)
  workersSuite(name, backend)
}
