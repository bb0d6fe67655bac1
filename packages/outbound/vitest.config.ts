import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "outbound",
    include: ["test/**/*.test.ts"]
  }
})
