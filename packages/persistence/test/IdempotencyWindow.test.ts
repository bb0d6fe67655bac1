/** The one idempotency rule: a 24 h window, a record as old as the window has expired, fingerprints decide. */
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as IdempotencyWindow from "../src/IdempotencyWindow.js"

const hour = 3_600_000
const now = Date.UTC(2026, 10, 21, 12)

describe("IdempotencyWindow", () => {
  it("is 24 hours and starts one window before now", () => {
    expect(Duration.toHours(IdempotencyWindow.duration)).toBe(24)
    expect(IdempotencyWindow.millis).toBe(24 * hour)
    expect(IdempotencyWindow.start(now)).toBe(now - 24 * hour)
  })

  it("a record is live strictly inside the window: one as old as the window has expired", () => {
    const start = IdempotencyWindow.start(now)
    expect(IdempotencyWindow.isLive(now, start)).toBe(true)
    expect(IdempotencyWindow.isLive(start + 1, start)).toBe(true)
    expect(IdempotencyWindow.isLive(start, start)).toBe(false)
    expect(IdempotencyWindow.isLive(start - 1, start)).toBe(false)
  })

  it("judges a key's record: fresh (none or expired), replay (same request), reused (another request)", () => {
    const claim = { fingerprint: "f1", notBefore: IdempotencyWindow.start(now) }
    expect(IdempotencyWindow.judge(undefined, claim)).toBe("Fresh")
    expect(IdempotencyWindow.judge({ fingerprint: "f1", createdAt: now - hour }, claim)).toBe("Replay")
    expect(IdempotencyWindow.judge({ fingerprint: "f2", createdAt: now - hour }, claim)).toBe("Reused")
    expect(IdempotencyWindow.judge({ fingerprint: "f2", createdAt: now - 24 * hour }, claim)).toBe("Fresh")
    expect(IdempotencyWindow.judge({ fingerprint: "f1", createdAt: now - 25 * hour }, claim)).toBe("Fresh")
    expect(IdempotencyWindow.reusedMessage).toBe("Idempotency-Key was already used with a different request")
  })
})
