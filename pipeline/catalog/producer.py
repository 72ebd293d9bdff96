"""Codes of the producer diagnostics: the stream against the capabilities declaration
(reconcile) and against itself and its run input (lint)."""

from __future__ import annotations

from agui_pipeline.catalog.code import (
    _I,
    _W,
    CAPABILITIES,
    EVENT_MODEL,
    INTERRUPTS,
    LIFECYCLE,
    PROCESSING,
    STATE,
    TOOL_CALLS,
    _code,
)

# --- reconcile --------------------------------------------------------------


RECONCILE_DECLARATION_UNUSABLE = _code(
    "reconcile.declaration-unusable",
    _W,
    CAPABILITIES,
    "the capabilities declaration cannot be used (not JSON, not an object, a malformed known "
    "field, a member named twice, too large); the run is judged as undeclared",
    advice=(
        "Fix the capabilities declaration: one JSON object within the size limit, each member "
        "named once, known fields of the types the capabilities page gives."
    ),
    message="{named} is unusable at {at} ({reason}); it is not used, and the run proceeds "
    "as for an agent that declared nothing",
)
RECONCILE_DECLARATION_UNRECOGNISED = _code(
    "reconcile.declaration-unrecognised",
    _W,
    CAPABILITIES,
    "the declaration carries a group or field this version does not define; kept, not read",
    advice=(
        "Check the name against the capabilities page (a typo is the usual cause); a group or "
        "field of a newer version is fine and only goes unread here."
    ),
    message="declaration {pointer}: {reason}; kept, and not read{suggestion}",
)
RECONCILE_FALSE_CONTRADICTED = _code(
    "reconcile.false-contradicted",
    _W,
    CAPABILITIES,
    "the stream uses a capability the declaration explicitly sets to false",
    advice="Set the capability to true in the declaration, or stop using it in the agent.",
    message="{evidence}, but the declaration says {field}: {declared} (the event is delivered "
    "as it is; "
    "only the first such event of the run is reported)",
)
RECONCILE_UNLISTED_TOOL = _code(
    "reconcile.unlisted-tool",
    _W,
    CAPABILITIES,
    "a tool was called that is in neither tools.items nor the run input's tools",
    advice="List the tool in the declaration's tools.items, or have the application declare it in "
    "the run input, or stop calling it.",
    message="the agent called {name}, which is in neither the declaration's /tools/items "
    "({listed}) nor the run input's tools ({app})",
    forms={
        "no-input": "the agent called {name}, which is in neither the declaration's /tools/items "
        "({listed}) nor the application's tools (the declaration sets /tools/clientProvided: "
        "false)"
    },
)
RECONCILE_CLIENT_TOOL = _code(
    "reconcile.client-tool",
    _W,
    CAPABILITIES,
    "one of the application's tools was called under tools.clientProvided: false",
    advice=(
        "Set tools.clientProvided to true in the declaration if the agent calls the "
        "application's tools, or stop calling them."
    ),
    message="the agent called {name}, one of the application's tools from the run input, but "
    "the declaration says {field}: {declared} (the event is delivered as it is; "
    "only the first such event of the run is reported)",
)
RECONCILE_PARALLEL_CALLS = _code(
    "reconcile.parallel-calls",
    _W,
    CAPABILITIES,
    "tool calls were in flight at the same time under tools.parallelCalls: false",
    advice=(
        "Set tools.parallelCalls to true if the agent starts a call before earlier ones are "
        "answered, or wait for each TOOL_CALL_RESULT before the next TOOL_CALL_START."
    ),
    message="tool call {call_id} started while {others} had not been answered (no "
    "TOOL_CALL_RESULT yet), but the declaration says {field}: {declared} (the event is "
    "delivered as it is; "
    "only the first such event of the run is reported)",
)
RECONCILE_UNLISTED_SUBAGENT = _code(
    "reconcile.unlisted-subagent",
    _W,
    CAPABILITIES,
    "a subagent was started under a name multiAgent.subagents does not list",
    advice=(
        "Add the subagent's name to multiAgent.subagents, or start only the subagents the "
        "declaration lists."
    ),
    message="the agent started subagent {name}, which the declaration's /multiAgent/subagents "
    "({listed}) does not list",
)
RECONCILE_TRANSPORT = _code(
    "reconcile.transport",
    _W,
    CAPABILITIES,
    "the stream arrived over a transport the declaration explicitly sets to false",
    advice=(
        "Declare the transport binding the agent really serves as true, or serve it only over "
        "the bindings it declares."
    ),
    message="the stream arrived over {transport!r}, but the declaration says {field}: false",
)
RECONCILE_INPUT_MODALITY = _code(
    "reconcile.input-modality",
    _W,
    CAPABILITIES,
    "the run input carries a modality multimodal.input explicitly sets to false",
    advice=(
        "Have the application send only the modalities multimodal.input accepts, or set this "
        "one true in the declaration if the agent does read it."
    ),
    message="run input {pointer} is a {modality} part, but the declaration sets {field} to "
    "false: the agent will likely skip it",
)
RECONCILE_INPUT_REFUSED = _code(
    "reconcile.input-refused",
    _W,
    CAPABILITIES,
    "the run input offers tools, resume entries or edited arguments the declaration refuses",
    advice=(
        "Have the application stop offering what the declaration refuses, or correct the "
        "declaration if the agent does take it."
    ),
    message="run input /tools offers the application's tools, but the declaration sets "
    "/tools/clientProvided to false: the agent does not take them",
    forms={
        "resume": "run input /resume answers interrupts, but the declaration sets "
        "/humanInTheLoop/interrupts to false: the agent does not take part in interrupt and "
        "resume",
        "edited-args": "run input {pointer} edits a tool call's arguments, but the declaration "
        "sets /humanInTheLoop/approveWithEdits to false",
    },
)
RECONCILE_RUN_SUMMARY = _code(
    "reconcile.run-summary",
    _I,
    CAPABILITIES,
    "per run: declared capabilities exercised and not, and undeclared ones used",
    advice=(
        "Nothing to fix on its own: drop from the declaration what the agent never exercises, "
        "and declare what it used undeclared."
    ),
    message="{run}{ending}: {parts}",
)

# --- lint: what the stream says about itself ----------------------------------


LINT_SNAPSHOT_CONTRADICTS = _code(
    "lint.snapshot-contradicts-stream",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT restates a message or tool call this run streamed with other "
    "content, arguments or name",
    advice=(
        "Stream what you will restate: the typical cause is a dropped first argument chunk, "
        "or a final snapshot that blanks a reply holding reasoning."
    ),
    message="MESSAGES_SNAPSHOT restates {what} at {pointer} as {restated}, but this run streamed "
    "{streamed}: the UI showed one and now shows the other",
)
LINT_SECOND_RESULT = _code(
    "lint.second-tool-result",
    _W,
    TOOL_CALLS,
    "a second tool message answers one toolCallId (a TOOL_CALL_RESULT, or a snapshot's tool "
    "message under a new id)",
    advice="Restate a streamed result under its own `messageId`; answer a call once.",
    message="tool message {message_id} ({by}) answers call {call_id} at {pointer}, already "
    "answered by tool message {earlier}: the Conversation now holds two results for one "
    "call",
    forms={
        "snapshot": "MESSAGES_SNAPSHOT holds tool message {message_id} answering call {call_id} at "
        "{where} beside tool message {earlier}: the Conversation now holds two results for "
        "one call",
    },
)
LINT_REOPEN_DISAGREES = _code(
    "lint.reopen-disagrees",
    _W,
    TOOL_CALLS,
    "a reopened message or tool call disagrees with what it reopens (role, name, parent, owner)",
    advice="Reopen with the item's own values, or use a new id for a new item.",
    message="{type} reopens {what} {item} with {differing}: a reopening start MUST agree with "
    "the {what} it reopens",
)
LINT_HISTORY_RESTREAMED = _code(
    "lint.history-restreamed",
    _W,
    LIFECYCLE,
    "a message or tool call the run input already held is streamed again as new material",
    advice="Send history the consumer already has as `MESSAGES_SNAPSHOT`, or not at all.",
    message="{kind} closes {what} {item}, streamed again with what the run input's history "
    "already holds: the Conversation now holds it twice; restate history with "
    "MESSAGES_SNAPSHOT, stream only new material",
)
LINT_PENDING_OMITTED = _code(
    "lint.pending-omitted",
    _W,
    TOOL_CALLS,
    "a run finished with frontend tool calls unanswered and no pendingToolCallIds",
    advice=(
        "Name the unanswered calls in `outcome.pendingToolCallIds`, in the order they were made."
    ),
    message="the run leaves frontend tool calls {calls} for the application to answer, but "
    "RUN_FINISHED carries no /outcome/pendingToolCallIds: a producer SHOULD name the "
    "pending calls",
)
LINT_RUN_IDENTITY = _code(
    "lint.run-identity",
    _W,
    "/spec/1.1/basic/run-input",
    "a run's identifiers disagree: with its run input (threadId, runId), between its "
    "RUN_STARTED and RUN_FINISHED, or with the input RUN_STARTED echoes",
    advice="Echo the input's `threadId` on every run and its `runId` on the requested run; "
    "close a run with the ids it started with.",
    message="RUN_FINISHED names {field} {named} at /{field}, but the run it closes started as "
    "{started}: a run's two boundary events agree on their ids",
    forms={
        "input-run": "no run on the stream carries the run input's runId {wanted} (runs: "
        "{runs}): the "
        "requested run echoes the input's runId",
        "input-thread": "RUN_STARTED carries threadId {thread} at /threadId, but the run input "
        "names thread "
        "{wanted}: every run on the stream carries the input's threadId",
        "echo": "RUN_STARTED echoes an input whose /input/{field} is {named}, but the run it "
        "starts "
        "is {expected}: the echo is the input of the run it opens",
    },
)
LINT_THREAD_CHANGED = _code(
    "lint.thread-changed",
    _W,
    "/spec/1.1/basic/run-input",
    "a run on the stream names another thread than the runs before it",
    advice="Carry one thread per stream: every run on it carries the input's `threadId`.",
    message="RUN_STARTED names thread {thread} at /threadId, but the runs before it on this "
    "stream belong to {stream_thread}: one stream carries one thread",
)
LINT_RUN_ID_REUSED = _code(
    "lint.run-id-reused",
    _W,
    EVENT_MODEL,
    "a RUN_STARTED reuses the runId of an earlier run on the stream",
    advice="Mint a new runId for every run; a runId names one run of the thread.",
    message="RUN_STARTED reuses runId {run_id} at /runId: an earlier run on this stream has it, "
    "and a runId names one run of the thread (checked against the latest "
    "max_run_ids={max_run_ids} runs)",
)
LINT_MESSAGE_ID_REUSED = _code(
    "lint.message-id-reused",
    _W,
    EVENT_MODEL,
    "a messageId that names a message of one kind names a new message of another kind (or a "
    "second tool result); the Conversation holds the later one in its place",
    advice="Mint a new messageId for each message: an id is unique within its thread.",
    message="{type} mints {what} under messageId {message_id} at /messageId, which already names "
    "a {kind} message: a messageId is unique within its thread, and the Conversation "
    "holds the new message in the old one's place",
)
LINT_INTERRUPT_UNKNOWN_CALL = _code(
    "lint.interrupt-unknown-call",
    _W,
    INTERRUPTS,
    "an interrupt's toolCallId names a call neither the stream nor the input's history holds",
    advice="Name the call the approval is for, after streaming it.",
    message="interrupt {interrupt_id} asks about tool call {call_id} at {where}/toolCallId, but "
    "no call has that id on the stream or in the input's history",
)
LINT_ARGUMENTS_NOT_JSON = _code(
    "lint.arguments-not-json",
    _W,
    TOOL_CALLS,
    "a tool call's complete argument text does not parse as JSON (a convention, not a rule)",
    advice=(
        "Stream every argument chunk; this catches a dropped first chunk even when no "
        "snapshot follows."
    ),
    message="tool call {call_id} ({tool_call_name}) closed with argument text that is not JSON: "
    "{text}; whoever executes it parses that text (JSON is the convention, not a rule)",
)
LINT_USAGE_ARITHMETIC = _code(
    "lint.usage-arithmetic",
    _W,
    LIFECYCLE,
    "a usage entry's counts disagree: a part exceeds its total, or totalTokens is not "
    "inputTokens plus outputTokens",
    advice=(
        "Translate the provider's counts into the protocol's accounting: add a part reported "
        "beside a smaller total into it, never twice."
    ),
    message="usage entry {position} reports {part} = {sum} above {whole} = {total}: {why}",
    forms={
        "total": "usage entry {position} reports totalTokens {total}, but inputTokens + "
        "outputTokens "
        "is {sum}: the total is their sum",
    },
)
LINT_RESULT_BEFORE_END = _code(
    "lint.result-before-call-end",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call before its TOOL_CALL_END: the tool ran on arguments that "
    "were not final",
    advice="Close the call (TOOL_CALL_END) before running the tool and sending its result: "
    "until then the argument text is only a prefix.",
    message="TOOL_CALL_RESULT answers call {call_id} at /toolCallId while it is still open: the "
    "tool ran before TOOL_CALL_END made its arguments final (a consumer MUST NOT act on "
    "them before); the call stays open until its end",
)
LINT_RESULT_UNKNOWN_CALL = _code(
    "lint.result-for-unknown-call",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call neither the stream nor the run input's history carried",
    advice="Stream the call (TOOL_CALL_START … END) before its result; a call restated only by "
    "a later MESSAGES_SNAPSHOT, or suspended before it was streamed, reaches the UI after its "
    "answer.",
    message="TOOL_CALL_RESULT answers call {call_id} at /toolCallId, but no call has that id: "
    "none was streamed before it, none is in the run input's history; the Conversation "
    "holds the result with no call to show it under",
)
LINT_RESULT_UNSEEN = _code(
    "lint.result-call-unseen",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call from before the stream, and no run input says whether "
    "the history holds it",
    advice="Pass the run input with --input (or from the client) so the answered call can be "
    "looked for in the history.",
    message="TOOL_CALL_RESULT answers call {call_id} at /toolCallId, which did not start on this "
    "stream; without the run input its history cannot be checked",
)
LINT_RESULT_FRONTEND = _code(
    "lint.result-for-frontend-tool",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call to one of the run input's tools, which the application "
    "answers",
    advice="Leave a frontend tool's call unanswered and finish the run: the application runs "
    "it and answers in the next run's input.",
    message="TOOL_CALL_RESULT answers call {call_id} at /toolCallId, a call to the run input's "
    "tool {tool}: the application executes its own tools and answers them in the next "
    "run's input, so the producer MUST NOT answer it",
)
LINT_PENDING_INEXACT = _code(
    "lint.pending-inexact",
    _W,
    TOOL_CALLS,
    "pendingToolCallIds is not exactly the calls the run started and did not answer",
    advice="List in pendingToolCallIds exactly the tool calls the run started and did not "
    "answer, in the order they were made.",
    message="/outcome/pendingToolCallIds names {named}; expected exactly the calls this run "
    "started and did not answer with TOOL_CALL_RESULT: {unanswered}",
)
LINT_PENDING_UNLISTED = _code(
    "lint.pending-unlisted-tool",
    _W,
    TOOL_CALLS,
    "a run ended leaving a call unanswered whose tool the run input did not list: no one is "
    "there to answer it",
    advice="Answer your own (backend) tools in the run with TOOL_CALL_RESULT; call frontend "
    "tools only from the input's `tools`.",
    message="the run ends leaving calls {calls} unanswered, to tools the run input did not list "
    "({tools}): the application answers only its own tools, so no one will answer these",
)
LINT_INTERRUPT_OUTCOME = _code(
    "lint.interrupt-outcome",
    _W,
    INTERRUPTS,
    "an interrupt outcome repeats an interrupt id, or disagrees with a suspended subagent, or a "
    "run with a suspended subagent finished as success",
    advice="Give each interrupt a unique id, carry every interrupt a suspended subagent named "
    "(attributed to it), and end such a run with the interrupt outcome.",
    message="subagent {sub} suspended on interrupt {interrupt_id}, but the run's interrupt "
    "outcome at /outcome/interrupts {problem}",
    forms={
        "finished": "subagent {sub} suspended on run-level interrupts {interrupts}, but the run "
        "finished "
        "as success: a run that stopped to ask ends with the interrupt outcome",
        "repeated-id": "interrupt id {interrupt_id} at {where}/id repeats an earlier one: each "
        "interrupt's "
        "id is unique within the run, and a resume entry answers it by that id",
    },
)
LINT_SNAPSHOT_DROPS = _code(
    "lint.snapshot-drops-message",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT leaves out a message this run streamed: a UI following state.mdx "
    "removes it",
    advice="Restate every message the run streamed in each MESSAGES_SNAPSHOT, under its own id.",
    message="MESSAGES_SNAPSHOT leaves out {what}, which this run streamed: a UI following "
    "state.mdx removes it from the conversation",
)
LINT_SNAPSHOT_RENAMES = _code(
    "lint.snapshot-renames-message",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT restates a message this run streamed under a new id: a UI removes the "
    "message it rendered and appends a copy",
    advice="Restate a streamed message under the messageId it was streamed with (and a tool "
    "call under its toolCallId).",
    message="MESSAGES_SNAPSHOT restates {what} under a new id {copy} at {where}: a UI following "
    "state.mdx removes the message it rendered and appends a copy (flicker; any "
    "per-message UI state is lost)",
)
LINT_TEXT_BUDGET = _code(
    "lint.text-budget",
    _I,
    PROCESSING,
    "a run streamed more text than lint keeps (Limits.max_text_chars): the rest of the run's "
    "text is not compared with snapshots, history or JSON",
    advice=(
        "Nothing is wrong with the stream; raise `max_text_chars` to have lint compare longer "
        "runs (it bounds what lint holds per run)."
    ),
    message="run {run_id} streamed more than max_text_chars={limit} characters of text and "
    "arguments: lint compares nothing more of this run's text (snapshots, history, "
    "argument JSON); the findings before stand",
)
LINT_RUN_REPORT = _code(
    "lint.run-report",
    _I,
    PROCESSING,
    "per run that had lint findings: the findings by code, with counts",
    advice=(
        "Nothing to fix on its own: look up each counted code with `agui-pipeline explain CODE` "
        "and fix those findings."
    ),
    message="run {run_id}: {total} producer findings ({counts})",
)

__all__ = [
    "LINT_ARGUMENTS_NOT_JSON",
    "LINT_HISTORY_RESTREAMED",
    "LINT_INTERRUPT_OUTCOME",
    "LINT_INTERRUPT_UNKNOWN_CALL",
    "LINT_MESSAGE_ID_REUSED",
    "LINT_PENDING_INEXACT",
    "LINT_PENDING_OMITTED",
    "LINT_PENDING_UNLISTED",
    "LINT_REOPEN_DISAGREES",
    "LINT_RESULT_BEFORE_END",
    "LINT_RESULT_FRONTEND",
    "LINT_RESULT_UNKNOWN_CALL",
    "LINT_RESULT_UNSEEN",
    "LINT_RUN_IDENTITY",
    "LINT_RUN_ID_REUSED",
    "LINT_RUN_REPORT",
    "LINT_SECOND_RESULT",
    "LINT_SNAPSHOT_CONTRADICTS",
    "LINT_SNAPSHOT_DROPS",
    "LINT_SNAPSHOT_RENAMES",
    "LINT_TEXT_BUDGET",
    "LINT_THREAD_CHANGED",
    "LINT_USAGE_ARITHMETIC",
    "RECONCILE_CLIENT_TOOL",
    "RECONCILE_DECLARATION_UNRECOGNISED",
    "RECONCILE_DECLARATION_UNUSABLE",
    "RECONCILE_FALSE_CONTRADICTED",
    "RECONCILE_INPUT_MODALITY",
    "RECONCILE_INPUT_REFUSED",
    "RECONCILE_PARALLEL_CALLS",
    "RECONCILE_RUN_SUMMARY",
    "RECONCILE_TRANSPORT",
    "RECONCILE_UNLISTED_SUBAGENT",
    "RECONCILE_UNLISTED_TOOL",
]
