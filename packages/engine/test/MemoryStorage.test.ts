import * as Layer from "effect/Layer"
import * as TaskStorage from "../src/TaskStorage.js"
import { taskStorageSuite } from "./TaskStorageSuite.js"

taskStorageSuite("memory", (billing) => TaskStorage.layerMemory().pipe(Layer.provide(billing)))
