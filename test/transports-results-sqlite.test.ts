/**
 * The results the gateway copies (`transports-results.ts`), with the gateway on SQLite.
 */
import { resultScenarios } from "./transports-results.js"

resultScenarios("SQLite")
