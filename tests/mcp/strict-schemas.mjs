// Compiles every tool's input and output schema (as tools/list gives them,
// from the file the MCP client test wrote) with Ajv's JSON Schema 2020-12
// compiler in strict mode: no keyword, format or type it does not know.
// Exits non-zero naming each schema that does not compile.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(process.env.AJV_MODULES + "/");
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;

const tools = JSON.parse(readFileSync(process.argv[2], "utf8"));
const failed = [];
for (const tool of tools) {
  for (const part of ["inputSchema", "outputSchema"]) {
    // `allowUnionTypes`: `"type": ["string", "null"]` is plain 2020-12.
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
    addFormats(ajv);
    try {
      ajv.compile(tool[part]);
    } catch (error) {
      failed.push(`${tool.name} ${part}: ${error.message}`);
    }
  }
}
if (failed.length) {
  console.error(failed.join("\n"));
  process.exit(1);
}
console.log(`strict JSON Schema 2020-12: ${tools.length * 2} tool schemas compile`);
