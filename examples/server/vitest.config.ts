import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "example-server",
    include: ["test/**/*.test.ts"]
  }
})
