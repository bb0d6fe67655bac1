import * as Layer from "effect/Layer"
import * as TaskStorage from "../src/TaskStorage.js"
import { engineSuite } from "./EngineSuite.js"

engineSuite("memory", (billing) => TaskStorage.layerMemory().pipe(Layer.provide(billing)))
