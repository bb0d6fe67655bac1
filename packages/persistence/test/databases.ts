/** The shared test databases (see `@mediagate/testing/databases`). */
export * from "@mediagate/testing/databases"
