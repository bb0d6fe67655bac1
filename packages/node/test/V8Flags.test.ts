/**
 * The V8 flags the process's main sets (`Server.v8Flags`): allocation-site pretenuring off unless the command line
 * chooses (docs/performance.md, "Allocation-site pretenuring").
 */
import { describe, expect, it } from "@effect/vitest"
import * as Server from "../src/Server.js"

describe("Server.v8Flags", () => {
  it("turns allocation-site pretenuring off by default", () => {
    expect(Server.v8Flags([])).toEqual(["--no-allocation-site-pretenuring"])
    expect(Server.v8Flags(["--max-old-space-size=256", "--max-semi-space-size=8"])).toEqual([
      "--no-allocation-site-pretenuring"
    ])
  })

  it("leaves the setting to a command line that makes it, either way and in either spelling", () => {
    for (
      const arg of [
        "--allocation-site-pretenuring",
        "--no-allocation-site-pretenuring",
        "--allocation_site_pretenuring",
        "--no-allocation_site_pretenuring"
      ]
    ) {
      expect(Server.v8Flags(["--max-semi-space-size=8", arg])).toEqual([])
    }
  })

  it("does not take a flag that only starts the same way for the setting", () => {
    expect(Server.v8Flags(["--allocation-site-pretenuring-extra"])).toEqual(["--no-allocation-site-pretenuring"])
  })
})
