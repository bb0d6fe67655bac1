import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-server",
    include: ["test/**/*.test.ts"],
    // the embedding tests open the dashboard: build it first, as the dashboard's own suites do
    globalSetup: ["../../packages/dashboard/test/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
