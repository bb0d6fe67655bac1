import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "node",
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000
  }
})
