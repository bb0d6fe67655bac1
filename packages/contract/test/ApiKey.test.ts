import { describe, expect, it } from "@effect/vitest"
import { environmentOfKey, grants, isWithin, maskKey, type Permissions } from "../src/ApiKey.js"

const key = `mg_live_${"aB3".repeat(11).slice(0, 32)}`

describe("API keys", () => {
  it("recognizes the key shape and its environment", () => {
    expect(environmentOfKey(key)).toBe("live")
    expect(environmentOfKey(`mg_test_${"x".repeat(32)}`)).toBe("test")
    for (
      const bad of [
        "mg_live_short",
        `mg_prod_${"x".repeat(32)}`,
        `xx_live_${"x".repeat(32)}`,
        `mg_live_${"x".repeat(31)}!`
      ]
    ) {
      expect(environmentOfKey(bad)).toBeUndefined()
    }
  })

  it("masks a key to its prefix and the first and last four random characters", () => {
    expect(maskKey(key)).toBe(`mg_live_${key.slice(8, 12)}…${key.slice(-4)}`)
  })

  it("absent or empty permissions grant everything", () => {
    expect(grants({}, "webhooks:write", "vendor8")).toBe(true)
  })

  it("named permissions grant only names set to true, and providers restrict families", () => {
    const p: Permissions = { "video:create": true, "tasks:read": false, providers: ["vendor1", "vendor2"] }
    expect(grants(p, "video:create", "vendor1")).toBe(true)
    expect(grants(p, "video:create", "vendor3")).toBe(false)
    expect(grants(p, "tasks:read")).toBe(false)
    expect(grants(p, "image:create")).toBe(false)
    const providersOnly: Permissions = { providers: ["vendor4"] }
    expect(grants(providersOnly, "image:create", "vendor4")).toBe(true)
    expect(grants(providersOnly, "image:create", "vendor6")).toBe(false)
  })

  it("no escalation: a key only creates keys within its own rights", () => {
    const narrow: Permissions = { "video:create": true, providers: ["vendor1"] }
    expect(isWithin({}, {})).toBe(true)
    expect(isWithin(narrow, {})).toBe(true)
    expect(isWithin({}, narrow)).toBe(false)
    expect(isWithin({ "video:create": true, providers: ["vendor1"] }, narrow)).toBe(true)
    expect(isWithin({ "video:create": true }, narrow)).toBe(false)
    expect(isWithin({ "video:create": true, providers: ["vendor1", "vendor2"] }, narrow)).toBe(false)
    expect(isWithin({ "image:create": true, providers: ["vendor1"] }, narrow)).toBe(false)
  })
})
