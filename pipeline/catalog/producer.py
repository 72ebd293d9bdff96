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
)
RECONCILE_DECLARATION_UNRECOGNISED = _code(
    "reconcile.declaration-unrecognised",
    _W,
    CAPABILITIES,
    "the declaration carries a group or field this version does not define; kept, not read",
)
RECONCILE_FALSE_CONTRADICTED = _code(
    "reconcile.false-contradicted",
    _W,
    CAPABILITIES,
    "the stream uses a capability the declaration explicitly sets to false",
    advice="Set the capability to true in the declaration, or stop using it in the agent.",
)
RECONCILE_UNLISTED_TOOL = _code(
    "reconcile.unlisted-tool",
    _W,
    CAPABILITIES,
    "a tool was called that is in neither tools.items nor the run input's tools",
    advice="List the tool in the declaration's tools.items, or have the application declare it in "
    "the run input, or stop calling it.",
)
RECONCILE_CLIENT_TOOL = _code(
    "reconcile.client-tool",
    _W,
    CAPABILITIES,
    "one of the application's tools was called under tools.clientProvided: false",
)
RECONCILE_PARALLEL_CALLS = _code(
    "reconcile.parallel-calls",
    _W,
    CAPABILITIES,
    "tool calls were in flight at the same time under tools.parallelCalls: false",
)
RECONCILE_UNLISTED_SUBAGENT = _code(
    "reconcile.unlisted-subagent",
    _W,
    CAPABILITIES,
    "a subagent was started under a name multiAgent.subagents does not list",
)
RECONCILE_TRANSPORT = _code(
    "reconcile.transport",
    _W,
    CAPABILITIES,
    "the stream arrived over a transport the declaration explicitly sets to false",
)
RECONCILE_INPUT_MODALITY = _code(
    "reconcile.input-modality",
    _W,
    CAPABILITIES,
    "the run input carries a modality multimodal.input explicitly sets to false",
)
RECONCILE_INPUT_REFUSED = _code(
    "reconcile.input-refused",
    _W,
    CAPABILITIES,
    "the run input offers tools, resume entries or edited arguments the declaration refuses",
)
RECONCILE_RUN_SUMMARY = _code(
    "reconcile.run-summary",
    _I,
    CAPABILITIES,
    "per run: declared capabilities exercised and not, and undeclared ones used",
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
)
LINT_SECOND_RESULT = _code(
    "lint.second-tool-result",
    _W,
    TOOL_CALLS,
    "a second tool message answers one toolCallId (a TOOL_CALL_RESULT, or a snapshot's tool "
    "message under a new id)",
    advice="Restate a streamed result under its own `messageId`; answer a call once.",
)
LINT_REOPEN_DISAGREES = _code(
    "lint.reopen-disagrees",
    _W,
    TOOL_CALLS,
    "a reopened message or tool call disagrees with what it reopens (role, name, parent, owner)",
    advice="Reopen with the item's own values, or use a new id for a new item.",
)
LINT_HISTORY_RESTREAMED = _code(
    "lint.history-restreamed",
    _W,
    LIFECYCLE,
    "a message or tool call the run input already held is streamed again as new material",
    advice="Send history the consumer already has as `MESSAGES_SNAPSHOT`, or not at all.",
)
LINT_PENDING_OMITTED = _code(
    "lint.pending-omitted",
    _W,
    TOOL_CALLS,
    "a run finished with frontend tool calls unanswered and no pendingToolCallIds",
    advice=(
        "Name the unanswered calls in `outcome.pendingToolCallIds`, in the order they were made."
    ),
)
LINT_RUN_IDENTITY = _code(
    "lint.run-identity",
    _W,
    "/spec/1.1/basic/run-input",
    "a run's identifiers disagree: with its run input (threadId, runId), between its "
    "RUN_STARTED and RUN_FINISHED, or with the input RUN_STARTED echoes",
    advice="Echo the input's `threadId` on every run and its `runId` on the requested run; "
    "close a run with the ids it started with.",
)
LINT_THREAD_CHANGED = _code(
    "lint.thread-changed",
    _W,
    "/spec/1.1/basic/run-input",
    "a run on the stream names another thread than the runs before it",
    advice="Carry one thread per stream: every run on it carries the input's `threadId`.",
)
LINT_RUN_ID_REUSED = _code(
    "lint.run-id-reused",
    _W,
    EVENT_MODEL,
    "a RUN_STARTED reuses the runId of an earlier run on the stream",
    advice="Mint a new runId for every run; a runId names one run of the thread.",
)
LINT_MESSAGE_ID_REUSED = _code(
    "lint.message-id-reused",
    _W,
    EVENT_MODEL,
    "a messageId that names a message of one kind names a new message of another kind (or a "
    "second tool result); the Conversation holds the later one in its place",
    advice="Mint a new messageId for each message: an id is unique within its thread.",
)
LINT_INTERRUPT_UNKNOWN_CALL = _code(
    "lint.interrupt-unknown-call",
    _W,
    INTERRUPTS,
    "an interrupt's toolCallId names a call neither the stream nor the input's history holds",
    advice="Name the call the approval is for, after streaming it.",
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
)
LINT_RESULT_BEFORE_END = _code(
    "lint.result-before-call-end",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call before its TOOL_CALL_END: the tool ran on arguments that "
    "were not final",
    advice="Close the call (TOOL_CALL_END) before running the tool and sending its result: "
    "until then the argument text is only a prefix.",
)
LINT_RESULT_UNKNOWN_CALL = _code(
    "lint.result-for-unknown-call",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call neither the stream nor the run input's history carried",
    advice="Stream the call (TOOL_CALL_START … END) before its result; a call restated only by "
    "a later MESSAGES_SNAPSHOT, or suspended before it was streamed, reaches the UI after its "
    "answer.",
)
LINT_RESULT_UNSEEN = _code(
    "lint.result-call-unseen",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call from before the stream, and no run input says whether "
    "the history holds it",
    advice="Pass the run input with --input (or from the client) so the answered call can be "
    "looked for in the history.",
)
LINT_RESULT_FRONTEND = _code(
    "lint.result-for-frontend-tool",
    _W,
    TOOL_CALLS,
    "a TOOL_CALL_RESULT answers a call to one of the run input's tools, which the application "
    "answers",
    advice="Leave a frontend tool's call unanswered and finish the run: the application runs "
    "it and answers in the next run's input.",
)
LINT_PENDING_INEXACT = _code(
    "lint.pending-inexact",
    _W,
    TOOL_CALLS,
    "pendingToolCallIds is not exactly the calls the run started and did not answer",
    advice="List in pendingToolCallIds exactly the tool calls the run started and did not "
    "answer, in the order they were made.",
)
LINT_PENDING_UNLISTED = _code(
    "lint.pending-unlisted-tool",
    _W,
    TOOL_CALLS,
    "a run ended leaving a call unanswered whose tool the run input did not list: no one is "
    "there to answer it",
    advice="Answer your own (backend) tools in the run with TOOL_CALL_RESULT; call frontend "
    "tools only from the input's `tools`.",
)
LINT_INTERRUPT_OUTCOME = _code(
    "lint.interrupt-outcome",
    _W,
    INTERRUPTS,
    "an interrupt outcome repeats an interrupt id, or disagrees with a suspended subagent, or a "
    "run with a suspended subagent finished as success",
    advice="Give each interrupt a unique id, carry every interrupt a suspended subagent named "
    "(attributed to it), and end such a run with the interrupt outcome.",
)
LINT_SNAPSHOT_DROPS = _code(
    "lint.snapshot-drops-message",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT leaves out a message this run streamed: a UI following state.mdx "
    "removes it",
    advice="Restate every message the run streamed in each MESSAGES_SNAPSHOT, under its own id.",
)
LINT_SNAPSHOT_RENAMES = _code(
    "lint.snapshot-renames-message",
    _W,
    STATE,
    "a MESSAGES_SNAPSHOT restates a message this run streamed under a new id: a UI removes the "
    "message it rendered and appends a copy",
    advice="Restate a streamed message under the messageId it was streamed with (and a tool "
    "call under its toolCallId).",
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
)
LINT_RUN_REPORT = _code(
    "lint.run-report",
    _I,
    PROCESSING,
    "per run that had lint findings: the findings by code, with counts",
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
