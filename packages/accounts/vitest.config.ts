import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "accounts",
    include: ["test/**/*.test.ts"]
  }
})
