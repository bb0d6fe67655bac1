import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "webhooks",
    include: ["test/**/*.test.ts"]
  }
})
