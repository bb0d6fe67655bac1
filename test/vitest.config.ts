import { project } from "../vitest.shared.js"

export default project({
  test: {
    name: "e2e",
    include: ["**/*.test.ts"],
    globalSetup: ["./global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000
  }
}, { isolated: true })
