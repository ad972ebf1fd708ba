/**
 * The healthchecks module (healthchecks.md): periodic and one-off checks of kinds http, tcp, dns,
 * tls and command, with their latest results, behind `/healthcheck` and `/result`.
 */
import { defineModule } from "../platform/module.js";
import { healthchecksShape } from "./configuration.js";
import { healthcheckMigrations } from "./migrations.js";
import { healthchecksPlugin } from "./plugin.js";

/** The module, for the `modules` list of src/server.ts. */
export const healthchecksModule = defineModule({
  name: "healthchecks",
  configShape: healthchecksShape,
  migrations: healthcheckMigrations,
  plugin: healthchecksPlugin,
});
