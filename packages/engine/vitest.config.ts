import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "engine",
    include: ["test/**/*.test.ts"]
  }
})
