import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "persistence",
    include: ["test/**/*.test.ts"]
  }
})
