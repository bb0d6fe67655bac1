import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-server",
    include: ["test/**/*.test.ts"]
  }
})
