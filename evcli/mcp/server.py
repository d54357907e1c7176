"""`McpService` on the official MCP SDK: its low-level `Server`, over stdio or streamable HTTP.

The low-level server rather than `MCPServer`'s decorated functions: the tools are the registry's, listed
with the JSON schemas the Executor's model is shown, not schemas derived from Python signatures. Calls
run one at a time in a worker thread (the service's store connection is not shared between threads), so
the event loop keeps answering pings and other requests while a diagnosis runs.

Over HTTP the SDK's DNS-rebinding protection holds on loopback; with a token, every request must carry
`Authorization: Bearer TOKEN` (the same check as `evcli serve`).
"""

from __future__ import annotations

from typing import Any

import anyio
from anyio import to_thread
from mcp import types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from evcli import __version__
from evcli.mcp.service import McpService

INSTRUCTIONS = (
    "evcli's evidence tools record every call in a session of its trace store and return refs "
    "(invocation id, raw_path, text) to cite. Start a session with `question`, pass the returned session_id to "
    "later calls, and check cited claims with check_claims before stating them; diagnose runs the whole chain."
)
MCP_PATH = "/mcp"


def build_server(service: McpService) -> Server[Any]:
    """The SDK server whose tools/list and tools/call are the service's."""
    one_at_a_time = anyio.CapacityLimiter(1)
    listed = [
        types.Tool(name=tool.name, description=tool.description, input_schema=tool.input_schema)
        for tool in service.tools()
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        reply = await to_thread.run_sync(service.call, params.name, params.arguments, limiter=one_at_a_time)
        return types.CallToolResult(
            content=[types.TextContent(text=reply.text)], structured_content=reply.data, is_error=reply.is_error
        )

    return Server(
        "evcli",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_stdio(service: McpService) -> None:
    """Serve one client over this process's stdin and stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(service)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_http(service: McpService, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until SIGINT/SIGTERM."""
    import uvicorn

    from evcli.serve.app import _TokenRequired  # one bearer-token check for both servers

    app: Any = build_server(service).streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if token:
        app = _TokenRequired(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
