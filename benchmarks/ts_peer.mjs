// The TypeScript peer: @ag-ui/client's full pipeline over one SSE file, no HTTP.
//
// An AbstractAgent subclass whose run() feeds the file's bytes (in 64 KiB reads)
// through the client's own HTTP-event transform (SSE framing, JSON, schema), and
// runAgent() then applies its processing: verify, chunk expansion, apply into
// messages and state. Prints one JSON line: {"events": n, "seconds": [...]}.
//
// usage: node ts_peer.mjs PEERS_DIR STREAM.sse REPETITIONS
// (PEERS_DIR is the folder @ag-ui/client was npm-installed into)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const [peers, path, repetitionsText] = process.argv.slice(2);
const require = createRequire(join(peers, "package.json"));
const client = require("@ag-ui/client");
const { Observable } = require("rxjs");

const body = readFileSync(path);
const READ = 64 * 1024;
const events = body.toString("utf8").split("\n\n").filter((frame) => frame.length > 0).length;

class ReplayAgent extends client.AbstractAgent {
  run() {
    // Reads arrive asynchronously, as from fetch: the transform subscribes to its
    // output only after run() returns, so a synchronous source would be lost.
    const http = new Observable((subscriber) => {
      (async () => {
        await null;
        subscriber.next({
          type: "headers",
          status: 200,
          headers: new Headers({ "content-type": "text/event-stream" }),
        });
        for (let at = 0; at < body.length; at += READ) {
          await null;
          subscriber.next({ type: "data", data: new Uint8Array(body.subarray(at, at + READ)) });
        }
        subscriber.complete();
      })();
    });
    return client.transformHttpEventStream(http);
  }
}

const seconds = [];
for (let repetition = 0; repetition < Number(repetitionsText ?? 3); repetition++) {
  const agent = new ReplayAgent({ threadId: "thread-0" });
  const started = performance.now();
  const result = await agent.runAgent();
  seconds.push((performance.now() - started) / 1000);
  if (repetition === 0 && agent.messages.length === 0) {
    throw new Error(`the client materialised no messages (result ${JSON.stringify(result)})`);
  }
}
console.log(JSON.stringify({ events, seconds }));
