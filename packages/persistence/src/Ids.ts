/**
 * Identifiers: a prefix + ULID (`task_…`, `evt_…`; other packages add theirs, e.g. `wh_`). Time-sortable, so task
 * ids double as the keyset of the newest-first task list.
 *
 * @since 0.1.0
 */
import { encodeTime, monotonicFactory } from "ulid"

/**
 * Random fractions for ULIDs from a pool of cryptographic random bytes, refilled 4 KiB at a time (the library's
 * default asks the system for one byte per character: 16 calls per id).
 */
const pool = new Uint8Array(4096)
let drawn = pool.length
const prng = (): number => {
  if (drawn === pool.length) {
    globalThis.crypto.getRandomValues(pool)
    drawn = 0
  }
  return (pool[drawn++] ?? 0) / 256
}

const next = monotonicFactory(prng)

/**
 * A new ULID (monotonic within one process), for the time `now` (epoch ms; default the current time).
 *
 * @since 0.1.0
 * @category constructors
 */
export const ulid = (now?: number): string => next(now)

/**
 * A new task id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const taskId = (now?: number): string => `task_${ulid(now)}`

/**
 * The smallest task id of the time `time` (epoch ms): every task created before `time` has a smaller id, every task
 * created at or after it a larger or equal one (retention scans tasks by age this way).
 *
 * @since 0.1.0
 * @category constructors
 */
export const taskIdFloor = (time: number): string =>
  `task_${encodeTime(Math.max(0, Math.floor(time)), 10)}${"0".repeat(16)}`

/**
 * A new event id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const eventId = (now?: number): string => `evt_${ulid(now)}`

/**
 * A stable 32-bit hash of a string, unsigned (FNV-1a, then murmur3's finalizer for the avalanche): the same on every
 * process and version, for lock keys and deterministic choices. Not for security.
 *
 * @since 0.1.0
 * @category utils
 */
export const hash32 = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}
