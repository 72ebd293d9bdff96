// Mastra's AG-UI bridge (@ag-ui/mastra MastraAgent) over the AI SDK's scripted test model
// (MockLanguageModelV3 from "ai/test"), served on 127.0.0.1 for the interop tier
// (tests/interop/test_mastra.py). No network: the model answers from a script.
//
// It prints "listening http://127.0.0.1:PORT/" once bound, then answers every POST with
// the bridge's events as SSE (the SDK's EventEncoder). The bridge's Observable reports a
// failed run as an error, not as an event; like the AG-UI servers it stands for, this
// glue turns that error into RUN_ERROR and ends the response.

import http from "node:http";
import { MastraAgent } from "@ag-ui/mastra";
import { EventEncoder } from "@ag-ui/encoder";
import { Mastra } from "@mastra/core";
import { Agent } from "@mastra/core/agent";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { simulateReadableStream } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** What the prompt's last message asks for: a tool's answer, or the user's words. */
function asked(prompt) {
  const last = prompt[prompt.length - 1];
  if (last.role === "tool") return { answered: true };
  const parts = typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
  return { text: parts.filter((p) => p.type === "text").map((p) => p.text).join("").trim() };
}

function say(...pieces) {
  return [
    { type: "text-start", id: "text" },
    ...pieces.map((delta) => ({ type: "text-delta", id: "text", delta })),
    { type: "text-end", id: "text" },
  ];
}

function call(name, pieces) {
  const id = `call-${name}`;
  return [
    { type: "tool-input-start", id, toolName: name },
    ...pieces.map((delta) => ({ type: "tool-input-delta", id, delta })),
    { type: "tool-input-end", id },
    { type: "tool-call", toolCallId: id, toolName: name, input: pieces.join("") },
  ];
}

/** The model's stream for a prompt: text word by word, tool arguments in chunks. */
function script(prompt) {
  const { answered, text } = asked(prompt);
  let body;
  let reason = "tool-calls";
  if (answered) [body, reason] = [say("Done: ", "it is sunny."), "stop"];
  else if (text === "fail") throw new Error("the scripted model failed");
  else if (text === "weather") body = call("weather", ['{"city": ', '"Paris"}']);
  else if (text === "confirm") body = call("confirm", ['{"ok": ', "true}"]);
  else if (text === "approve") body = call("approve", ['{"item": ', '"milk"}']);
  else if (text === "think") {
    reason = "stop";
    body = [
      { type: "reasoning-start", id: "thought" },
      { type: "reasoning-delta", id: "thought", delta: "Let me " },
      { type: "reasoning-delta", id: "thought", delta: "think." },
      { type: "reasoning-end", id: "thought" },
      ...say("Thought ", "about it."),
    ];
  } else [body, reason] = [say("Hello ", "there."), "stop"];
  return [
    { type: "stream-start", warnings: [] },
    ...body,
    { type: "finish", finishReason: { unified: reason, raw: reason }, usage },
  ];
}

const model = new MockLanguageModelV3({
  doStream: async ({ prompt }) => ({ stream: simulateReadableStream({ chunks: script(prompt) }) }),
});

const weather = createTool({
  id: "weather",
  description: "The weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `sunny in ${city}`,
});

// A backend tool that waits for a person: it suspends the run until resumed with a yes/no.
const approve = createTool({
  id: "approve",
  description: "Buy an item once a person approves.",
  inputSchema: z.object({ item: z.string() }),
  suspendSchema: z.object({ question: z.string() }),
  resumeSchema: z.object({ approved: z.boolean() }),
  execute: async ({ item }, context) => {
    const answer = context?.agent?.resumeData;
    if (answer === undefined) {
      await context.agent.suspend({ question: `buy ${item}?` });
      return undefined;
    }
    return answer.approved ? `bought ${item}` : `did not buy ${item}`;
  },
});

const agent = new Agent({
  id: "scripted",
  name: "scripted",
  instructions: "Answer from the script.",
  model,
  tools: { weather, approve },
});
// The store keeps a suspended run's snapshot for its resume.
const mastra = new Mastra({ agents: { scripted: agent }, storage: new InMemoryStore(), logger: false });

const encoder = new EventEncoder();
const server = http.createServer(async (request, response) => {
  let body = "";
  for await (const chunk of request) body += chunk;
  response.writeHead(200, { "Content-Type": encoder.getContentType() });
  const bridge = new MastraAgent({ agent: mastra.getAgent("scripted"), resourceId: "interop" });
  bridge.run(JSON.parse(body)).subscribe({
    next: (event) => response.write(encoder.encode(event)),
    error: (error) => {
      response.end(encoder.encode({ type: "RUN_ERROR", message: String(error?.message ?? error) }));
    },
    complete: () => response.end(),
  });
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}/`);
});
