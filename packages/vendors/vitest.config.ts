import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "vendors",
    include: ["test/**/*.test.ts"]
  }
})
