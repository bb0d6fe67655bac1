/**
 * The V8 flags the process's main sets (`Server.v8Flags`): allocation-site pretenuring off and the old generation's
 * growing factor at 2×, each unless the command line chooses (docs/performance-notes.md, "The V8 flags of the
 * server").
 */
import { describe, expect, it } from "@effect/vitest"
import * as Server from "../src/Server.js"

const defaults = ["--no-allocation-site-pretenuring", "--heap-growing-percent=100"]

describe("Server.v8Flags", () => {
  it("turns allocation-site pretenuring off and lets the old generation grow to twice its live size by default", () => {
    expect(Server.v8Flags([])).toEqual(defaults)
    expect(Server.v8Flags(["--max-old-space-size=256", "--max-semi-space-size=16"])).toEqual(defaults)
  })

  it("leaves pretenuring to a command line that sets it, either way and in either spelling", () => {
    for (
      const arg of [
        "--allocation-site-pretenuring",
        "--no-allocation-site-pretenuring",
        "--allocation_site_pretenuring",
        "--no-allocation_site_pretenuring"
      ]
    ) {
      expect(Server.v8Flags(["--max-semi-space-size=16", arg])).toEqual(["--heap-growing-percent=100"])
    }
  })

  it("leaves the growing factor to a command line that sets it, in either spelling", () => {
    for (const arg of ["--heap-growing-percent=50", "--heap_growing_percent=0"]) {
      expect(Server.v8Flags([arg])).toEqual(["--no-allocation-site-pretenuring"])
    }
  })

  it("does not take a flag that only starts the same way for the setting", () => {
    expect(Server.v8Flags(["--allocation-site-pretenuring-extra", "--heap-growing-percentage=5"])).toEqual(defaults)
  })
})
