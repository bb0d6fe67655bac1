import { project } from "../../vitest.shared.js"

export default project({
  test: {
    name: "example-webhook-receiver",
    include: ["test/**/*.test.ts"]
  }
})
