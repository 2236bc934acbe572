"""An MCP client nobody here wrote: the official Python SDK (pinned in
tests/agents/python-requirements.txt) starts `ralph mcp --socket PATH --attempt ID`
over stdio, lists the tools and calls every one of them.

It runs as a `kind = "command"` agent of a live ralph run, so RALPH_SOCKET and
RALPH_ATTEMPT are in its environment; RALPH_BIN names the ralph binary. Every check
failure exits 1; the integration test then reads the run's journal.
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED = {
    "report_progress",
    "save_checkpoint",
    "get_task_status",
    "report_interruption",
    "declare_complete",
    "cancel_task",
}


def text_of(result):
    return "\n".join(getattr(block, "text", "") for block in result.content)


def attr(obj, snake, camel):
    """The SDK's 2.x names are snake_case, 1.x camelCase."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def is_error(result):
    return bool(attr(result, "is_error", "isError"))


def check(cond, message):
    if not cond:
        print(f"python client: FAILED: {message}", flush=True)
        sys.exit(1)


async def main():
    params = StdioServerParameters(
        command=os.environ["RALPH_BIN"],
        args=["mcp", "--socket", os.environ["RALPH_SOCKET"], "--attempt", os.environ["RALPH_ATTEMPT"]],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check(names == EXPECTED, f"tools {sorted(names)}")
            for t in tools:
                check(len(t.description or "") > 40, f"{t.name} has no real description")
                check(attr(t, "input_schema", "inputSchema").get("type") == "object", f"{t.name} schema")

            r = await session.call_tool("report_progress", {"message": "python client here"})
            check(not is_error(r), f"report_progress: {text_of(r)}")
            r = await session.call_tool(
                "save_checkpoint",
                {"summary": "half way", "files_touched": ["a.py"], "steps_done": ["one"], "next_steps": ["two"]},
            )
            check(not is_error(r), f"save_checkpoint: {text_of(r)}")
            r = await session.call_tool("get_task_status", {})
            check(not is_error(r) and '"phase": "develop"' in text_of(r), f"get_task_status: {text_of(r)}")
            r = await session.call_tool("declare_complete", {"summary": "s", "evidence": "done"})
            check(is_error(r) and "placeholder" in text_of(r), f"placeholder accepted: {text_of(r)}")
            r = await session.call_tool(
                "declare_complete", {"summary": "all of it", "evidence": "pytest -q: 7 passed in 0.4s"}
            )
            check(not is_error(r), f"declare_complete: {text_of(r)}")
            r = await session.call_tool("cancel_task", {"reason": "the python client ends the drill"})
            check(not is_error(r), f"cancel_task: {text_of(r)}")
            # Last: ralph ends the attempt when the agent reports an interruption.
            print("python client: all other tools answered", flush=True)
            r = await session.call_tool("report_interruption", {"reason": "only a drill"})
            check(not is_error(r), f"report_interruption: {text_of(r)}")
    print("python client: all tools answered", flush=True)


asyncio.run(main())
