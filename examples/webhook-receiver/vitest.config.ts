import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "example-webhook-receiver",
    include: ["test/**/*.test.ts"]
  }
})
