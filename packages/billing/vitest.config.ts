import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "billing",
    include: ["test/**/*.test.ts"]
  }
})
