/**
 * The conformance suites of the task storage's ports, one file each (`TaskLifecycleAcceptSuite`,
 * `TaskLifecycleStepsSuite`, `TaskReadsSuite`, `NodeRegistrySuite`, `ChannelSlotsSuite`, and `TaskOutboxSuite` for
 * the outbox and retention): every implementation (memory, SQLite, PostgreSQL) must pass them. A backend is given as
 * a function from a billing layer to a storage layer whose clock is Effect's `Clock` (SQL: `time: "clock"`), so the
 * suites control time (leases, deadlines, idempotency windows) with `TestClock` on every backend alike.
 */
import { slotsSuite } from "./ChannelSlotsSuite.js"
import { registrySuite } from "./NodeRegistrySuite.js"
import type { Backend } from "./support.js"
import { acceptSuite } from "./TaskLifecycleAcceptSuite.js"
import { stepsSuite } from "./TaskLifecycleStepsSuite.js"
import { outboxSuite } from "./TaskOutboxSuite.js"
import { readsSuite } from "./TaskReadsSuite.js"

export type { Backend } from "./support.js"

/** Registers the conformance suite of every port for one backend. */
export const taskStorageSuite = (name: string, backend: Backend) => {
  acceptSuite(name, backend)
  stepsSuite(name, backend)
  readsSuite(name, backend)
  registrySuite(name, backend)
  slotsSuite(name, backend)
  outboxSuite(name, backend)
}
