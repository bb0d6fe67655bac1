import { describe, expect, it } from "@effect/vitest"
import { refundParts } from "../src/Ledger.js"

describe("refundParts", () => {
  it("refunds the newest month first, never beyond what is left in a month", () => {
    const open = [{ month: "2025-03", remaining: 700 }, { month: "2025-05", remaining: 200 }, { month: "2025-04", remaining: 0 }]
    expect(refundParts(800, open)).toEqual([{ month: "2025-05", amountMicros: 200 }, { month: "2025-03", amountMicros: 600 }])
  })

  it("stops at what is left to refund of the task", () => {
    expect(refundParts(1_000, [{ month: "2025-03", remaining: 300 }])).toEqual([{ month: "2025-03", amountMicros: 300 }])
    expect(refundParts(1_000, [{ month: "2025-03", remaining: -50 }])).toEqual([])
    expect(refundParts(0, [{ month: "2025-03", remaining: 300 }])).toEqual([])
  })
})
