import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "vendors",
    include: ["test/**/*.test.ts"]
  }
})
