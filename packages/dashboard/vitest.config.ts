import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "dashboard",
    include: ["test/**/*.test.ts"],
    globalSetup: ["./test/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
