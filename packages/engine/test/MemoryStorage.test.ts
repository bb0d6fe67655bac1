import * as Layer from "effect/Layer"
import * as TaskStorage from "../src/TaskStorage.js"
import { taskStorageSuite } from "./TaskStorageSuite.js"

taskStorageSuite("memory", (clock, billing) => TaskStorage.layerMemory({ clock: clock.now }).pipe(Layer.provide(billing)))
