import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "accounts",
    include: ["test/**/*.test.ts"]
  }
})
