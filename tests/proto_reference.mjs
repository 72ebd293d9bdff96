// The reference protobuf package (@ag-ui/proto), driven by tests/test_proto.py.
// usage: node proto_reference.mjs PACKAGE_DIR encode|decode < JSON array
//   encode: events in, [{"frame": base64} | {"error": message}] out; {"$double": "NaN"}
//           in an event stands for that number (also "Infinity", "-Infinity"), which
//           JSON cannot spell
//   decode: base64 frames in, [{"event": object} | {"error": message}] out
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const [packageDir, mode] = process.argv.slice(2);
const require = createRequire(join(resolve(packageDir), "package.json"));
const { encode, decode } = require("@ag-ui/proto");
process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "1";
console.warn = () => {};

const NON_FINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };
const items = JSON.parse(readFileSync(0, "utf8"), (_key, value) => {
  const spelled = value?.["$double"];
  return typeof spelled === "string" && Object.hasOwn(NON_FINITE, spelled) ? NON_FINITE[spelled] : value;
});
const answer = items.map((item) => {
  try {
    if (mode === "encode") return { frame: Buffer.from(encode(item)).toString("base64") };
    return { event: decode(new Uint8Array(Buffer.from(item, "base64"))) };
  } catch (error) {
    return { error: String(error?.message ?? error) };
  }
});
process.stdout.write(JSON.stringify(answer));
